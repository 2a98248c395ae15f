package machine_test

import (
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// A run started with StartDelayMS waits (Retrying, reason start_delay) until
// the delay has passed, then is claimed like any run; its run timeout
// counts from the end of the delay.
func TestStartDelayHoldsTheRunBack(t *testing.T) {
	h := newSchedHarness(t)
	for _, bad := range []*engine.CreateJob{
		{Type: "t", Queue: "q", StartDelayMS: -1},
		{Type: "t", Queue: "q", StartDelayMS: engine.MaxDelayMS + 1},
		{Type: "t", Queue: "q", StartDelayMS: 1000, CronSchedule: "*/5 * * * *"},
	} {
		h.mustFail(bad, engine.ErrInvalidCommand)
	}
	start := h.now
	cr := h.must(&engine.CreateJob{WorkflowID: "d", Type: "t", Queue: "q", StartDelayMS: 5000, RunTimeoutMS: 1000}).(*engine.CreateResult)
	j := h.job(cr.Job)
	if j.Status != engine.StatusRetrying || j.ReleaseAtMS != start+5000 || j.RunDeadlineMS != start+6000 {
		t.Fatalf("delayed run: %s, release at %d (want %d), run deadline %d (want %d)", j.Status, j.ReleaseAtMS, start+5000,
			j.RunDeadlineMS, start+6000)
	}
	if hist := h.history(cr.Job); hist[len(hist)-1].Type != engine.EventJobRequeued || hist[len(hist)-1].Reason != engine.ReasonStartDelay {
		t.Fatalf("last event %+v, want job_requeued start_delay", hist[len(hist)-1])
	}
	h.now = start + 4999
	h.must(&engine.ReleaseDelayed{Max: 10})
	if s := h.job(cr.Job).Status; s != engine.StatusRetrying {
		t.Fatalf("released before its delay: %s", s)
	}
	h.now = start + 5000
	h.must(&engine.ReleaseDelayed{Max: 10})
	if c := h.claimOne(10_000); c.Job != cr.Job {
		t.Fatalf("claimed %d, want the delayed run %d", c.Job, cr.Job)
	}
	// Without a delay the run is ready at once.
	now := h.must(&engine.CreateJob{Type: "t", Queue: "q"}).(*engine.CreateResult)
	if s := h.job(now.Job).Status; s != engine.StatusQueued {
		t.Fatalf("undelayed run: %s", s)
	}
}
