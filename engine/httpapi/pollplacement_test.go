package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
)

// placementOnlySet is a node of a sharded cluster of two shards that leads
// none of them (so every claim on it finds nothing) and whose placement
// the test moves on. Each call of ShardsChanged is reported on looked,
// so the test knows when a long poll waits.
type placementOnlySet struct {
	version atomic.Uint64
	looked  chan struct{}

	mu      sync.Mutex
	changed chan struct{}
}

func newPlacementOnlySet() *placementOnlySet {
	s := &placementOnlySet{looked: make(chan struct{}, 64), changed: make(chan struct{})}
	s.version.Store(1)
	return s
}

func (s *placementOnlySet) ShardCount() int                  { return 2 }
func (s *placementOnlySet) ShardEngine(int) engine.Service   { return nil }
func (s *placementOnlySet) LeadsShard(int) bool              { return false }
func (s *placementOnlySet) ShardLeader(int) (string, string) { return "", "" }
func (s *placementOnlySet) ShardReplicas(int) []string       { return nil }
func (s *placementOnlySet) NoteShardLeader(int, string)      {}
func (s *placementOnlySet) PlacementVersion() uint64         { return s.version.Load() }

func (s *placementOnlySet) ShardMap() engine.ShardMap {
	return engine.ShardMap{Version: s.version.Load(), Shards: 2, Leaders: []string{"", ""}}
}

func (s *placementOnlySet) ShardsChanged() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case s.looked <- struct{}{}:
	default:
	}
	return s.changed
}

// wake closes the channel ShardsChanged handed out, as a commit does.
func (s *placementOnlySet) wake() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.changed)
	s.changed = make(chan struct{})
}

// TestLongPollEndsWhenThePlacementMoves: a node's long polls for jobs and
// for review tasks go on waiting through commits that bring them nothing,
// but end, empty, once the node applied a newer placement than the one
// they began under, and the answer names the new version. A quiet worker
// sends nothing but its long polls, so this answer is how it learns, at
// once, that a node joined or a shard's replica moved to one, instead of
// when its poll's wait runs out (30 s by default).
func TestLongPollEndsWhenThePlacementMoves(t *testing.T) {
	for _, route := range []string{"/v1/jobs/claim", "/v1/tasks/claim"} {
		t.Run(route, func(t *testing.T) {
			set := newPlacementOnlySet()
			api, err := httpapi.NewServer(httpapi.ServerConfig{Service: httpapi.NewShardRouter(set)})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(api)
			defer srv.Close()

			type answer struct {
				placement string
				body      map[string]any
				err       error
			}
			done := make(chan answer, 1)
			go func() {
				body, _ := json.Marshal(map[string]any{"queue": "q", "owner": "w", "max": 1, "lease_ms": 60_000})
				resp, err := http.Post(srv.URL+route+"?wait=60s", "application/json", bytes.NewReader(body))
				if err != nil {
					done <- answer{err: err}
					return
				}
				defer func() { _ = resp.Body.Close() }()
				a := answer{placement: resp.Header.Get("X-Heddle-Placement")}
				if resp.StatusCode != http.StatusOK {
					a.err = &httpStatusError{resp.StatusCode}
				}
				a.err = firstErr(a.err, json.NewDecoder(resp.Body).Decode(&a.body))
				done <- a
			}()

			// A commit that brings nothing: the poll looks again, and waits on.
			<-set.looked
			set.wake()
			<-set.looked
			select {
			case a := <-done:
				t.Fatalf("the long poll ended at a commit that changed no placement: %+v", a)
			default:
			}

			// The placement moves on: the poll ends now, naming version 2.
			set.version.Store(2)
			set.wake()
			select {
			case a := <-done:
				if a.err != nil {
					t.Fatalf("the long poll answered %v", a.err)
				}
				if a.placement != "2 2" {
					t.Fatalf("the answer names placement %q, want %q (2 shards, version 2)", a.placement, "2 2")
				}
				for _, k := range []string{"jobs", "reviews", "tasks"} {
					if v, ok := a.body[k].([]any); ok && len(v) > 0 {
						t.Fatalf("the answer holds %s %v, want none", k, v)
					}
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the long poll went on waiting after the node's placement moved on")
			}
		})
	}
}

type httpStatusError struct{ code int }

func (e *httpStatusError) Error() string { return http.StatusText(e.code) }

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
