package machine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/embedded"
)

// A worker that keeps its job while activities run sets the workflow's
// timers with AppendEvents; the scheduler fires them while the job is
// still Running, without waking or requeueing it, and a cancelled one
// never fires.
func TestTimersSetWhileRunning(t *testing.T) {
	h := newHarness(t)
	id := h.create("wf")
	c := h.claimOne(60_000)
	ref := engine.LeaseRef{Job: id, Attempt: c.Attempt}
	h.must(&engine.AppendEvents{LeaseRef: ref, Events: []engine.NewEvent{{Type: "timer_scheduled", Step: "1"}, {Type: "timer_scheduled", Step: "2"}},
		Timers: []engine.Timer{{ID: "1", FireMS: h.now + 100}, {ID: "2", FireMS: h.now + 200}}})
	if ts := h.job(id).Timers; len(ts) != 2 {
		t.Fatalf("timers %v, want two pending", ts)
	}
	// Timer 2 is cancelled before it is due; an unknown id is ignored.
	h.must(&engine.AppendEvents{LeaseRef: ref, CancelTimers: []string{"2", "nope"}})
	h.now += 500
	fired := h.must(&engine.FireTimers{Max: 10}).(*engine.SweepResult)
	if len(fired.Jobs) != 1 || len(fired.Ready) != 0 {
		t.Fatalf("FireTimers = %+v, want one timer fired and no job woken", fired)
	}
	j := h.job(id)
	if j.Status != engine.StatusRunning || len(j.Timers) != 0 {
		t.Fatalf("job %s with timers %v, want Running with none pending", j.Status, j.Timers)
	}
	var firedIDs []string
	for _, ev := range h.history(id) {
		if ev.Type == engine.EventTimerFired {
			firedIDs = append(firedIDs, ev.Name)
		}
	}
	if len(firedIDs) != 1 || firedIDs[0] != "1" {
		t.Fatalf("timers fired %v, want only 1", firedIDs)
	}
	h.verify()
}

// A wait's timers replace the job's pending ones: a timer set earlier in
// the turn and named again is kept, one the wait leaves out is dropped.
func TestWaitReplacesTimers(t *testing.T) {
	h := newHarness(t)
	id := h.create("wf")
	c := h.claimOne(60_000)
	ref := engine.LeaseRef{Job: id, Attempt: c.Attempt}
	res := h.must(&engine.AppendEvents{LeaseRef: ref, Timers: []engine.Timer{{ID: "1", FireMS: h.now + 100}, {ID: "2", FireMS: h.now + 200}}}).(*engine.AppendResult)
	if res.FirstSeq != 0 {
		t.Fatalf("an append of timers alone wrote events: %+v", res)
	}
	h.must(&engine.Wait{LeaseRef: ref, Spec: engine.WaitSpec{Timers: []engine.Timer{{ID: "2", FireMS: h.now + 200}}}, SeenSeq: h.job(id).LastSeq})
	if ts := h.job(id).Timers; len(ts) != 1 || ts[0].ID != "2" {
		t.Fatalf("timers after the wait %v, want only 2", ts)
	}
	h.now += 500
	h.must(&engine.FireTimers{Max: 10})
	if j := h.job(id); j.Status != engine.StatusQueued {
		t.Fatalf("job %s, want Queued (woken by timer 2)", j.Status)
	}
	h.verify()
}

// AppendEvents refuses an empty append and bad timers, naming the field.
func TestAppendEventsTimersChecked(t *testing.T) {
	h := newHarness(t)
	id := h.create("wf")
	c := h.claimOne(60_000)
	ref := engine.LeaseRef{Job: id, Attempt: c.Attempt}
	for _, tc := range []struct {
		cmd  *engine.AppendEvents
		want string
	}{
		{&engine.AppendEvents{LeaseRef: ref}, "AppendEvents.Events"},
		{&engine.AppendEvents{LeaseRef: ref, Timers: []engine.Timer{{ID: "", FireMS: 5}}}, "AppendEvents.Timers[0].ID"},
		{&engine.AppendEvents{LeaseRef: ref, Timers: []engine.Timer{{ID: "t", FireMS: 0}}}, "AppendEvents.Timers[0].FireMS"},
		{&engine.AppendEvents{LeaseRef: ref, CancelTimers: []string{""}}, "AppendEvents.CancelTimers[0]"},
	} {
		_, err := h.apply(tc.cmd)
		if !errors.Is(err, engine.ErrInvalidCommand) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want it to name %s", tc.cmd, err, tc.want)
		}
	}
}

// WatchHistory answers at once when the job has events after the seq, and
// otherwise waits for the next write of the job: a signal here.
func TestWatchHistory(t *testing.T) {
	e, err := embedded.Open(embedded.Config{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cr, err := e.Create(ctx, engine.CreateJob{WorkflowID: "wf", Type: "t", Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	page, err := e.WatchHistory(ctx, cr.Job, 0, 10)
	if err != nil || len(page.Events) != 1 || page.Events[0].Type != engine.EventJobCreated {
		t.Fatalf("WatchHistory from 0 = %+v, %v; want job_created at once", page, err)
	}
	got := make(chan *engine.HistoryPage, 1)
	go func() {
		p, err := e.WatchHistory(ctx, cr.Job, 1, 10)
		if err != nil {
			t.Error(err)
		}
		got <- p
	}()
	// Another job's writes do not answer the watch.
	if _, err := e.Create(ctx, engine.CreateJob{WorkflowID: "other", Type: "t", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-got:
		t.Fatalf("the watch answered %+v before the job changed", p)
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := e.Signal(ctx, engine.Signal{Target: engine.Target{Job: cr.Job}, Name: "go"}); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-got:
		if len(p.Events) != 1 || p.Events[0].Type != engine.EventSignalReceived {
			t.Fatalf("the watch answered %+v, want the signal", p)
		}
	case <-ctx.Done():
		t.Fatal("the watch never answered the signal")
	}
	short, cancelShort := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancelShort()
	if _, err := e.WatchHistory(short, cr.Job, 2, 10); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a watch with nothing new = %v, want the context's deadline", err)
	}
}
