package embedded

import (
	"errors"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// A claim asked for TailEvents hands each job its newest events, ending
// with the job_leased at LastSeq, read after the claim applied; a claim
// that does not ask gets none, and a retry by request id gets them again.
func TestClaimTailEvents(t *testing.T) {
	e, err := Open(Config{InMemory: true, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	short, _ := e.Create(bg, engine.CreateJob{Type: "t", Queue: "q"})
	long, _ := e.Create(bg, engine.CreateJob{Type: "t", Queue: "q"})
	jobs, err := e.Claim(bg, engine.Claim{Queue: "q", Owner: "w", Max: 2, LeaseMS: 60_000})
	if err != nil || len(jobs) != 2 || jobs[0].Events != nil || jobs[1].Events != nil {
		t.Fatalf("claim without TailEvents = %+v, %v", jobs, err)
	}
	// The long job writes a few events and is requeued; the short one too, with none.
	ref := jobs[1].Lease()
	if _, err := e.Append(bg, engine.AppendEvents{LeaseRef: ref, Events: []engine.NewEvent{{Type: "a"}, {Type: "b"}, {Type: "c"}}}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []engine.LeaseRef{jobs[0].Lease(), ref} {
		if _, err := e.Requeue(bg, engine.Requeue{LeaseRef: r}); err != nil {
			t.Fatal(err)
		}
	}
	c := engine.Claim{Queue: "q", Owner: "w", Max: 2, LeaseMS: 60_000, TailEvents: 4}
	c.RequestID = "tail-1"
	for try := 0; try < 2; try++ { // the second is a retry of the recorded claim
		jobs, err = e.Claim(bg, c)
		if err != nil || len(jobs) != 2 {
			t.Fatalf("try %d: claim = %+v, %v", try, jobs, err)
		}
		want := map[engine.JobID][]engine.EventType{
			short.Job: {engine.EventJobCreated, engine.EventJobLeased, engine.EventJobRequeued, engine.EventJobLeased},
			long.Job:  {"b", "c", engine.EventJobRequeued, engine.EventJobLeased},
		}
		for _, j := range jobs {
			var got []engine.EventType
			for _, ev := range j.Events {
				got = append(got, ev.Type)
			}
			w := want[j.Job]
			if len(got) != len(w) || j.Events[len(j.Events)-1].Seq != j.LastSeq {
				t.Fatalf("try %d: job %d tail %v, want %v ending at seq %d", try, j.Job, got, w, j.LastSeq)
			}
			for i := range w {
				if got[i] != w[i] {
					t.Fatalf("try %d: job %d tail %v, want %v", try, j.Job, got, w)
				}
			}
		}
	}
	if _, err := e.Claim(bg, engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 1000, TailEvents: engine.MaxTailEvents + 1}); !errors.Is(err, engine.ErrInvalidCommand) {
		t.Fatalf("TailEvents over the limit: %v, want ErrInvalidCommand", err)
	}
}

// The scheduler's batch defaults to the machine's MaxBatch when that is
// below DefaultSchedulerBatch, and a batch over it is refused.
func TestSchedulerBatchFollowsTheLimits(t *testing.T) {
	tests := []struct {
		batch, maxBatch, want int
		ok                    bool
	}{
		{0, 0, DefaultSchedulerBatch, true},
		{0, 100, 100, true},
		{50, 100, 50, true},
		{101, 100, 0, false},
		{-1, 0, 0, false},
	}
	for _, tt := range tests {
		got, err := SchedulerBatch(tt.batch, engine.Limits{MaxBatch: tt.maxBatch})
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("SchedulerBatch(%d, MaxBatch %d) = %d, %v; want %d, ok %v", tt.batch, tt.maxBatch, got, err, tt.want, tt.ok)
		}
	}
	if err := (Config{InMemory: true, SchedulerBatch: 2000}).Validate(); !errors.Is(err, engine.ErrInvalidCommand) {
		t.Fatalf("Config with SchedulerBatch over MaxBatch: %v", err)
	}
}
