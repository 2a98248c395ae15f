package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// pathLog records the paths a server was asked, in order.
type pathLog struct {
	mu    sync.Mutex
	paths []string
}

func (l *pathLog) add(p string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.paths = append(l.paths, p)
}

func (l *pathLog) count(suffix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, p := range l.paths {
		if strings.HasSuffix(p, suffix) {
			n++
		}
	}
	return n
}

// TestWaitClosingLongPoll: WaitClosing answers a run's end and the event
// that closed it, its result in the payload, from long polls of
// .../closing alone (one request a poll; a poll that times out first
// answers the open record, with no event, and the client asks again).
// Against a server without the route, as a node of an earlier version,
// the client waits with .../closed and reads the event with .../history,
// and answers the same.
func TestWaitClosingLongPoll(t *testing.T) {
	for _, old := range []bool{false, true} {
		name := "closing"
		if old {
			name = "without-closing"
		}
		t.Run(name, func(t *testing.T) {
			e := openEngine(t, engine.Limits{})
			s, err := NewServer(ServerConfig{Service: e})
			if err != nil {
				t.Fatal(err)
			}
			log := &pathLog{}
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				log.add(r.URL.Path)
				if old && strings.HasSuffix(r.URL.Path, "/closing") {
					r.URL.Path += "-unknown" // no route matches
				}
				s.ServeHTTP(w, r)
			}))
			t.Cleanup(func() {
				s.Close()
				hs.CloseClientConnections()
				hs.Close()
			})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if _, err := e.Create(ctx, engine.CreateJob{WorkflowID: "w/1", Type: "T", Queue: "lp"}); err != nil {
				t.Fatal(err)
			}
			if !old {
				var open engine.Closing
				r := doRaw(t, "GET", hs.URL+"/v1/workflows/w%2F1/closing?wait=10ms", nil, nil)
				if err := decodeAnswer(formatJSON, r.body, &open); err != nil || r.status != 200 || open.Job.Status != engine.StatusQueued || open.Event.Seq != 0 {
					t.Fatalf("a timed-out wait answered %d %s", r.status, r.body)
				}
			}
			c := newClient(t, ClientConfig{Addrs: []string{hs.URL}, PollWait: 20 * time.Millisecond})
			done := make(chan *engine.Closing, 1)
			go func() {
				cl, err := c.WaitClosing(ctx, engine.Target{WorkflowID: "w/1"})
				if err != nil {
					t.Error(err)
				}
				done <- cl
			}()
			jobs, err := e.Claim(ctx, testClaim)
			if err != nil || len(jobs) != 1 {
				t.Fatal(jobs, err)
			}
			if _, err := e.Complete(ctx, engine.Complete{LeaseRef: jobs[0].Lease(), Result: []byte(`"done"`)}); err != nil {
				t.Fatal(err)
			}
			cl := <-done
			if cl == nil || cl.Job.Status != engine.StatusCompleted || cl.Event.Seq != cl.Job.LastSeq || string(cl.Event.Payload) != `"done"` {
				t.Fatalf("WaitClosing = %+v", cl)
			}
			closing, closed, history := log.count("/closing"), log.count("/closed"), log.count("/history")
			switch {
			case !old && (closing == 0 || closed+history != 0):
				t.Fatalf("asked /closing %d times, /closed %d and /history %d; want /closing alone", closing, closed, history)
			case old && (closing != 1 || closed == 0 || history != 1):
				t.Fatalf("against a server without /closing: asked it %d times, /closed %d and /history %d; want it once, then both", closing, closed, history)
			}
		})
	}
}
