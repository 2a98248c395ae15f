package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// followerService answers reads only when they are marked stale, as a
// cluster follower with no known leader would.
type followerService struct{ engine.Service }

func (f followerService) Describe(ctx context.Context, t engine.Target) (*engine.Job, error) {
	if !engine.IsStaleRead(ctx) {
		return nil, &engine.NotLeaderError{}
	}
	return f.Service.Describe(ctx, t)
}

// ?stale=1 (sent by the Client for a context marked WithStaleRead) reaches
// the Service as a stale read; without it the read is linearizable and a
// follower refuses it.
func TestStaleReads(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	ctx := context.Background()
	if _, err := e.Create(ctx, engine.CreateJob{WorkflowID: "w", Type: "T", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(ServerConfig{Service: followerService{e}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	defer hs.Close()
	c := newClient(t, ClientConfig{Addrs: []string{hs.URL}, RetryTimeout: 1})
	if j, err := c.Describe(engine.WithStaleRead(ctx), engine.Target{WorkflowID: "w"}); err != nil || j.WorkflowID != "w" {
		t.Fatalf("stale read = %+v, %v", j, err)
	}
	if _, err := c.Describe(ctx, engine.Target{WorkflowID: "w"}); !errors.Is(err, engine.ErrNotLeader) {
		t.Fatalf("linearizable read on a follower = %v, want ErrNotLeader", err)
	}
	resp, err := http.Get(hs.URL + "/v1/workflows/w?stale=maybe")
	if err != nil {
		t.Fatal(err)
	}
	if err := resp.Body.Close(); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("stale=maybe answered %d, want 400", resp.StatusCode)
	}
}
