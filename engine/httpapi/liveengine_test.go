package httpapi

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/clock"
	"github.com/heddlewf/heddle/engine/embedded"
)

// lookingService is countingService that also says, through the engine,
// whether a queue may hold ready jobs, and reports every time it is asked.
type lookingService struct {
	*countingService
	looked chan struct{}
}

func (s *lookingService) MayHaveReady(queue string) (bool, error) {
	ready, err := s.e.MayHaveReady(queue)
	select {
	case s.looked <- struct{}{}:
	default:
	}
	return ready, err
}

// A long-poll claim of a claimer that runs type b does not propose claims
// while the only job, of type b, is deferred by a claimer of type a (the
// job is out of the ready index), and takes it as soon as its release
// commits.
func TestClaimLongPollWaitsOutADeferral(t *testing.T) {
	clk := clock.NewManual(time.UnixMilli(5_000_000))
	e, err := embedded.Open(embedded.Config{InMemory: true, DisableScheduler: true, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	}()
	svc := &lookingService{countingService: newCountingService(e), looked: make(chan struct{}, 1)}
	_, hs := serve(t, ServerConfig{Service: svc})
	c := newClient(t, ClientConfig{Addrs: []string{hs.URL}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	created, err := e.Create(ctx, engine.CreateJob{Type: "b", Queue: "lp"})
	if err != nil {
		t.Fatal(err)
	}
	if jobs, err := e.Claim(ctx, engine.Claim{Queue: "lp", Owner: "w-a", Max: 1, LeaseMS: 1000, Types: []string{"a"}}); err != nil || len(jobs) != 0 {
		t.Fatalf("claim of a = %v, %v", jobs, err)
	}
	done := make(chan []engine.ClaimedJob, 1)
	go func() {
		jobs, err := c.ClaimWait(ctx, engine.Claim{Queue: "lp", Owner: "w-b", Max: 1, LeaseMS: 1000, Types: []string{"b"}})
		if err != nil {
			t.Error(err)
		}
		done <- jobs
	}()
	<-svc.looked  // the poll is on the server and found nothing ready
	for range 5 { // unrelated commits wake the poll; each look says no
		if _, err := e.Create(ctx, engine.CreateJob{Type: "T", Queue: "elsewhere"}); err != nil {
			t.Fatal(err)
		}
		<-svc.looked
	}
	clk.Advance(time.Second)
	if _, err := e.Propose(ctx, &engine.ReleaseDelayed{Max: 10}); err != nil {
		t.Fatal(err)
	}
	select {
	case jobs := <-done:
		if len(jobs) != 1 || jobs[0].Job != created.Job {
			t.Fatalf("ClaimWait = %+v, want job %d", jobs, created.Job)
		}
	case <-ctx.Done():
		t.Fatal("the long poll was not woken by the release")
	}
	if n := svc.claims.Load(); n != 1 {
		t.Fatalf("the long poll proposed %d claims, want 1 (none while the job was deferred)", n)
	}
}

// Terminate over HTTP: the run ends as Terminated (WaitClosed returns it),
// and a second terminate is an illegal transition.
func TestTerminateOverHTTP(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, hs := serve(t, ServerConfig{Service: e})
	c := newClient(t, ClientConfig{Addrs: []string{hs.URL}})
	ctx := context.Background()
	a, err := c.Create(ctx, engine.CreateJob{WorkflowID: "a", Type: "T", Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Terminate(ctx, engine.Terminate{Target: engine.Target{WorkflowID: "a"}, Reason: "ops"})
	if err != nil || r.Job != a.Job || r.Status != engine.StatusTerminated {
		t.Fatalf("Terminate = %+v, %v", r, err)
	}
	if _, err := c.Terminate(ctx, engine.Terminate{Target: engine.Target{Job: a.Job}}); !errors.Is(err, engine.ErrIllegalTransition) {
		t.Fatalf("second Terminate: %v, want ErrIllegalTransition", err)
	}
	b, err := c.Create(ctx, engine.CreateJob{Type: "T", Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Terminate(ctx, engine.Terminate{Target: engine.Target{Job: b.Job}}); err != nil {
		t.Fatal(err)
	}
	j, err := c.WaitClosed(ctx, engine.Target{Job: b.Job})
	if err != nil || j.Status != engine.StatusTerminated {
		t.Fatalf("WaitClosed = %+v, %v", j, err)
	}
}

// Claim.TailEvents travels over HTTP: the claimed job comes with its
// newest events.
func TestClaimTailEventsOverHTTP(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, hs := serve(t, ServerConfig{Service: e})
	c := newClient(t, ClientConfig{Addrs: []string{hs.URL}})
	ctx := context.Background()
	if _, err := c.Create(ctx, engine.CreateJob{Type: "T", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	jobs, err := c.Claim(ctx, engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 60_000, TailEvents: 8})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Claim = %+v, %v", jobs, err)
	}
	evs := jobs[0].Events
	if len(evs) != 2 || evs[0].Type != engine.EventJobCreated || evs[1].Type != engine.EventJobLeased || evs[1].Seq != jobs[0].LastSeq {
		t.Fatalf("tail events %+v, want job_created, job_leased", evs)
	}
}
