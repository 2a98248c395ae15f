package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// checkOutcome verifies, from the store alone, what the demo claims to have
// shown: every order completed with each step committed exactly once, the
// recovered order re-ran only the uncommitted steps, the stale write was
// refused, and the signal, the timer and the retry left their events.
func (d *demo) checkOutcome(ctx context.Context) error {
	d.rep.plain("")
	d.rep.plain("checks:")
	for _, o := range demoOrders() {
		if err := d.checkOrder(ctx, o.id); err != nil {
			return fmt.Errorf("check %s: %w", o.id, err)
		}
	}
	if d.refused == nil {
		return fmt.Errorf("check: the crashed worker's late write was never attempted")
	}
	d.rep.plain("  fencing  the late write of attempt 1 was refused with engine.ErrStaleAttempt and left no trace")
	d.schedMu.Lock()
	defer d.schedMu.Unlock()
	if len(d.schedErrs) > 0 {
		return fmt.Errorf("check: the scheduler reported %d errors, first: %w", len(d.schedErrs), d.schedErrs[0])
	}
	return nil
}

// wantAttempts is the attempt that must have committed each step, per
// order: order-1's first step survives the crash, the rest are redone by
// attempt 2; the gated orders commit what follows their gate in attempt 2.
var wantAttempts = map[string][]uint64{
	"order-1": {1, 2, 2},
	"order-2": {1, 2, 2},
	"order-3": {1, 1, 2},
}

// checkOrder checks one order's status, commits and story events.
func (d *demo) checkOrder(ctx context.Context, wf string) error {
	id := d.jobs[wf]
	j, err := d.e.Describe(ctx, engine.Target{Job: id})
	if err != nil {
		return err
	}
	if j.Status != engine.StatusCompleted || j.Attempt != 2 {
		return fmt.Errorf("job %d is %s at attempt %d, want Completed at attempt 2", id, j.Status, j.Attempt)
	}
	hist, err := readHistory(ctx, d.e, id)
	if err != nil {
		return err
	}
	var got []string
	for i, step := range orderSteps {
		if err := d.checkCommit(ctx, id, hist, step, wantAttempts[wf][i]); err != nil {
			return err
		}
		got = append(got, fmt.Sprintf("%s@%d", step, wantAttempts[wf][i]))
	}
	if err := checkStory(wf, hist); err != nil {
		return err
	}
	d.rep.plain("  %-8s Completed; %s (step@attempt), each committed exactly once", wf, strings.Join(got, " "))
	return nil
}

// checkCommit checks that step committed exactly once, by attempt want,
// in the history and in its effect record alike.
func (d *demo) checkCommit(ctx context.Context, id engine.JobID, hist []engine.Event, step string, want uint64) error {
	n := 0
	for _, ev := range hist {
		if ev.Commit && ev.Step == step {
			n++
			if ev.Attempt != want {
				return fmt.Errorf("step %s committed by attempt %d, want %d", step, ev.Attempt, want)
			}
		}
	}
	if n != 1 {
		return fmt.Errorf("step %s committed %d times, want once", step, n)
	}
	eff, err := d.e.Effect(ctx, id, step)
	if err != nil {
		return err
	}
	if eff == nil || eff.Attempt != want || eff.CommittedSeq == 0 {
		return fmt.Errorf("effect of step %s is %+v, want committed by attempt %d", step, eff, want)
	}
	return nil
}

// storyEvent is an event one order's story must have left in its history;
// empty fields match anything.
type storyEvent struct {
	typ             engine.EventType
	step, name, why string
}

// storyEvents are the events that tell each order's story: the reclaim of
// the crashed attempt, the approval, the failed try and the timer.
var storyEvents = map[string][]storyEvent{
	"order-1": {{typ: engine.EventJobRequeued, why: engine.ReasonLeaseExpired}},
	"order-2": {{typ: engine.EventSignalReceived, name: "approved"}, {typ: engine.EventWaitCompleted, name: "approved"}},
	"order-3": {{typ: evActivityFailed, step: "charge-card"}, {typ: engine.EventTimerFired, name: "ship-window"},
		{typ: engine.EventWaitCompleted, name: "ship-window"}},
}

// checkStory checks that hist holds every story event of order wf.
func checkStory(wf string, hist []engine.Event) error {
	for _, want := range storyEvents[wf] {
		if !slices.ContainsFunc(hist, want.matches) {
			return fmt.Errorf("history lacks %+v", want)
		}
	}
	return nil
}

func (s storyEvent) matches(ev engine.Event) bool {
	return ev.Type == s.typ && (s.step == "" || ev.Step == s.step) &&
		(s.name == "" || ev.Name == s.name) && (s.why == "" || ev.Reason == s.why)
}

// verifyStore runs engine.Verify over one consistent read of the whole
// store: histories legal, records, indexes and effects all in agreement.
func (d *demo) verifyStore(ctx context.Context) error {
	var problems []error
	jobs := 0
	err := d.e.DB().View(func(r *storage.Reader) error {
		problems = engine.Verify(r, 0)
		return r.Scan(storage.JobPrefix, nil, false, func(_, _ []byte) (bool, error) {
			jobs++
			return true, nil
		})
	})
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	d.rep.plain("")
	d.rep.plain("store verified: %d jobs, %d problems", jobs, len(problems))
	for _, p := range problems {
		d.rep.plain("  problem: %v", p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("engine.Verify found %d problems, first: %w", len(problems), problems[0])
	}
	if jobs != len(d.jobs) {
		return fmt.Errorf("verify: store holds %d jobs, the demo created %d", jobs, len(d.jobs))
	}
	return nil
}
