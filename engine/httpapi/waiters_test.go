package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// The waiter queue reads through Client and Server in queue order; a
// Service without the read answers no_route, and a bad limit is named.
func TestClientResourceWaiters(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, hs := serve(t, ServerConfig{Service: e})
	s := newClient(t, ClientConfig{Addrs: []string{hs.URL}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.AddResource(ctx, engine.AddResource{ID: "gpu-1", Capabilities: []string{"cuda"}, Capacity: 1}); err != nil {
		t.Fatal(err)
	}
	var refs []engine.LeaseRef
	for _, wf := range []string{"w/1", "w/2", "w/3"} {
		if _, err := s.Create(ctx, engine.CreateJob{WorkflowID: wf, Type: "T", Queue: "q"}); err != nil {
			t.Fatal(err)
		}
		jobs, err := s.Claim(ctx, engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 60_000})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("claim %s: %v %v", wf, jobs, err)
		}
		ref := jobs[0].Lease()
		refs = append(refs, ref)
		if _, err := s.LeaseStep(ctx, engine.LeaseStep{LeaseRef: ref, Step: "1", Name: "Train", LeaseMS: 30_000, Capabilities: []string{"cuda"}}); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := s.ResourceWaiters(ctx, 0)
	if err != nil || len(ws) != 2 || ws[0].Job != refs[1].Job || ws[1].Job != refs[2].Job || ws[0].Activity != "Train" {
		t.Fatalf("waiters: %+v %v", ws, err)
	}
	if ws, err := s.ResourceWaiters(ctx, 1); err != nil || len(ws) != 1 || ws[0].Job != refs[1].Job {
		t.Fatalf("limit 1: %+v %v", ws, err)
	}
	r := doRaw(t, http.MethodGet, hs.URL+"/v1/resources/waiters?limit=x", nil, nil)
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "limit") {
		t.Fatalf("a bad limit: %d %s", r.status, r.body)
	}

	// A Service that is not an engine.ResourceWaiterReader.
	_, plain := serve(t, ServerConfig{Service: struct{ engine.Service }{e}})
	other := newClient(t, ClientConfig{Addrs: []string{plain.URL}})
	if _, err := other.ResourceWaiters(ctx, 0); !errors.Is(err, ErrNoRoute) {
		t.Fatalf("a service without the read: %v", err)
	}
}
