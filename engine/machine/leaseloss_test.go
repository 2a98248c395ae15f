package machine_test

import (
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// A job created with TimeoutOnLeaseExpiry ends when its lease runs out,
// instead of going back to its queue for another worker: its parent's step
// fails with a Heartbeat TimeoutError, and a job without the flag is
// requeued as before.
func TestLeaseExpiryTimesOutBoundJobs(t *testing.T) {
	tests := []struct {
		name       string
		bound      bool
		wantStatus engine.Status
		wantEvent  engine.EventType
	}{
		{"requeued for another worker", false, engine.StatusQueued, engine.EventJobRequeued},
		{"bound to its worker: timed out", true, engine.StatusTimedOut, engine.EventJobTimedOut},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			parent, pref := h.runningParent("wf")
			task := h.must(&engine.CreateJob{WorkflowID: "wf/1/1", Type: engine.ActivityTypePrefix + "session", Queue: "acts",
				ParentID: parent, ParentStep: "1", ParentLease: pref, TimeoutOnLeaseExpiry: tt.bound}).(*engine.CreateResult).Job
			h.must(&engine.Claim{Queue: "acts", Owner: "w", Max: 1, LeaseMS: 1_000})
			h.now += 999
			if r := h.must(&engine.Reclaim{Max: 10}).(*engine.SweepResult); len(r.Jobs) != 0 {
				t.Fatalf("reclaimed before the lease ran out: %+v", r)
			}
			h.now++
			r := h.must(&engine.Reclaim{Max: 10}).(*engine.SweepResult)
			if len(r.Jobs) != 1 || r.Jobs[0] != task {
				t.Fatalf("reclaim = %+v, want job %d", r, task)
			}
			if got := h.job(task).Status; got != tt.wantStatus {
				t.Fatalf("status %s, want %s", got, tt.wantStatus)
			}
			hist := h.history(task)
			if last := hist[len(hist)-1]; last.Type != tt.wantEvent || last.Reason != engine.ReasonLeaseExpired {
				t.Fatalf("last event %+v, want %s with reason %s", last, tt.wantEvent, engine.ReasonLeaseExpired)
			}
			var eff *engine.Effect
			viewOK(t, h.db, func(r *storage.Reader) error {
				b, err := r.Get(storage.EffectKey(uint64(parent), "1"))
				if err != nil {
					return nil // no effect yet
				}
				eff = new(engine.Effect)
				_, err = storage.Decode(b, storage.KindEffect, machine.EffectVersion, eff)
				return err
			})
			if !tt.bound {
				if eff != nil {
					t.Fatalf("a requeued job gave its parent an effect: %+v", eff)
				}
				h.verify()
				return
			}
			if eff == nil || !eff.Failed {
				t.Fatalf("parent's effect %+v, want a failure", eff)
			}
			f, err := engine.DecodeFailure(eff.Payload)
			if err != nil || f.Type != engine.FailureTimeout || f.TimeoutType != engine.TimeoutHeartbeat || !f.NonRetryable {
				t.Fatalf("parent's failure %+v, %v; want a non-retryable Heartbeat timeout", f, err)
			}
			h.verify()
		})
	}
}
