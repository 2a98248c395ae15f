package machine_test

import (
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// When a parent ends by Terminate or a timeout, the engine applies each open
// child's parent-close policy: terminate (transitively, to the child's own
// children), request cancel (the child sees cancel_requested and is woken),
// or abandon. Children already ended are left as they are, and the child
// index empties as children close.
func TestParentClosePolicies(t *testing.T) {
	ends := []struct {
		name string
		end  func(h *harness, parent engine.JobID)
		want engine.Status
	}{
		{"terminate", func(h *harness, parent engine.JobID) {
			h.must(&engine.Terminate{Target: engine.Target{Job: parent}, Reason: "operator"})
		}, engine.StatusTerminated},
		{"run-timeout", func(h *harness, parent engine.JobID) {
			h.now += 10_000
			h.must(&engine.ExpireDeadlines{Max: 10})
		}, engine.StatusTimedOut},
	}
	for _, end := range ends {
		t.Run(end.name, func(t *testing.T) {
			h := newHarness(t)
			parent := h.must(&engine.CreateJob{WorkflowID: "parent", Type: "p", Queue: "pq", RunTimeoutMS: 5_000}).(*engine.CreateResult).Job
			holder := func(queue string) *engine.LeaseRef {
				c := h.must(&engine.Claim{Queue: queue, Owner: "w", Max: 1, LeaseMS: 60_000}).(*engine.ClaimResult).Jobs[0]
				ref := c.Lease()
				return &ref
			}
			pref := holder("pq")
			child := func(wf string, p *engine.LeaseRef, pcp engine.ParentClosePolicy) engine.JobID {
				return h.must(&engine.CreateJob{WorkflowID: wf, Type: "c", Queue: "cq", ParentID: p.Job, ParentStep: wf, ParentLease: p, ParentClosePolicy: pcp}).(*engine.CreateResult).Job
			}
			term := child("term", pref, engine.ParentCloseTerminate)
			grandchild := child("grandchild", holder("cq"), engine.ParentCloseTerminate) // term's, which it claimed
			cancel := child("cancel", pref, engine.ParentCloseRequestCancel)
			abandon := child("abandon", pref, engine.ParentCloseAbandon)
			done := child("done", pref, engine.ParentCloseTerminate)
			// "done" ends before its parent does: it keeps its own end.
			r := h.must(&engine.Claim{Queue: "cq", Owner: "w", Max: 10, LeaseMS: 60_000}).(*engine.ClaimResult)
			var doneRef engine.LeaseRef
			for _, c := range r.Jobs {
				if c.Job == done {
					doneRef = engine.LeaseRef{Job: done, Attempt: c.Attempt}
				}
			}
			if doneRef.Job == 0 {
				t.Fatalf("claim did not return job %d: %+v", done, r.Jobs)
			}
			h.must(&engine.Complete{LeaseRef: doneRef, Result: []byte("ok")})
			h.verify()

			end.end(h, parent)

			if s := h.job(parent).Status; s != end.want {
				t.Fatalf("parent is %s, want %s", s, end.want)
			}
			for _, c := range []struct {
				id   engine.JobID
				want engine.Status
			}{{term, engine.StatusTerminated}, {grandchild, engine.StatusTerminated}, {done, engine.StatusCompleted}} {
				if s := h.job(c.id).Status; s != c.want {
					t.Errorf("job %d is %s, want %s", c.id, s, c.want)
				}
			}
			if j := h.job(cancel); j.Status.Terminal() || !j.CancelRequested {
				t.Errorf("request-cancel child: status %s, cancel requested %v; want open and asked to cancel", j.Status, j.CancelRequested)
			}
			if ev := h.lastEvent(cancel); ev.Type != engine.EventCancelRequested {
				t.Errorf("request-cancel child's last event is %s, want cancel_requested", ev.Type)
			}
			if j := h.job(abandon); j.Status.Terminal() || j.CancelRequested {
				t.Errorf("abandoned child: status %s, cancel requested %v; want left alone", j.Status, j.CancelRequested)
			}
			if ev := h.lastEvent(term); ev.Type != engine.EventJobTerminated || ev.Reason != "parent parent ended" {
				t.Errorf("terminated child's last event %s %q", ev.Type, ev.Reason)
			}
			h.verify()
		})
	}
}
