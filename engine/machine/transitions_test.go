package machine_test

import (
	"errors"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// drive puts a fresh job into status s through real commands and returns it
// with its latest attempt.
func drive(h *harness, s engine.Status, wf string) engine.LeaseRef {
	h.t.Helper()
	create := &engine.CreateJob{WorkflowID: wf, Type: "t", Queue: "q"}
	if s == engine.StatusTimedOut {
		create.RunTimeoutMS = 500
	}
	return driveJob(h, create, s)
}

// driveJob is drive for a job created by create (its queue must be "q", and
// no other job may be ready there).
func driveJob(h *harness, create *engine.CreateJob, s engine.Status) engine.LeaseRef {
	h.t.Helper()
	create.Draft = s == engine.StatusDraft
	id := h.must(create).(*engine.CreateResult).Job
	switch s {
	case engine.StatusQueued, engine.StatusDraft:
		return engine.LeaseRef{Job: id}
	case engine.StatusCancelled:
		h.must(&engine.Cancel{Target: engine.Target{Job: id}})
		return engine.LeaseRef{Job: id}
	case engine.StatusTerminated:
		h.must(&engine.Terminate{Target: engine.Target{Job: id}})
		return engine.LeaseRef{Job: id}
	case engine.StatusTimedOut:
		h.now += 500
		h.must(&engine.ExpireDeadlines{Max: 10})
		if got := h.job(id).Status; got != s {
			h.t.Fatalf("drive to %s reached %s", s, got)
		}
		return engine.LeaseRef{Job: id}
	case engine.StatusSuspended:
		h.must(&engine.Suspend{Target: engine.Target{Job: id}})
		return engine.LeaseRef{Job: id}
	}
	c := h.must(&engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 1000}).(*engine.ClaimResult).Jobs[0]
	ref := engine.LeaseRef{Job: id, Attempt: c.Attempt}
	switch s {
	case engine.StatusWaiting:
		h.must(&engine.Wait{LeaseRef: ref, Spec: engine.WaitSpec{Signals: []string{"go"}}, SeenSeq: c.LastSeq})
	case engine.StatusParked:
		h.must(&engine.Wait{LeaseRef: ref, Spec: engine.WaitSpec{Signals: []string{"go"}, Park: true}, SeenSeq: c.LastSeq})
	case engine.StatusRetrying:
		h.must(&engine.Requeue{LeaseRef: ref, DelayMS: 5000})
	case engine.StatusCompleted:
		h.must(&engine.Complete{LeaseRef: ref})
	case engine.StatusFailed:
		h.must(&engine.Fail{LeaseRef: ref})
	}
	if got := h.job(id).Status; got != s {
		h.t.Fatalf("drive to %s reached %s", s, got)
	}
	return ref
}

// Every lifecycle command in every status, through Apply: the legal ones
// land in the status the table names, the illegal ones are refused with the
// right sentinel and write nothing.
func TestCommandsInEveryStatus(t *testing.T) {
	type outcome struct {
		to  engine.Status // the status after a legal command
		err error         // the sentinel of an illegal one
	}
	legalIn := func(to engine.Status, in ...engine.Status) func(engine.Status) outcome {
		return func(s engine.Status) outcome {
			for _, x := range in {
				if x == s {
					return outcome{to: to}
				}
			}
			return outcome{err: engine.ErrIllegalTransition}
		}
	}
	fencedIn := func(to engine.Status) func(engine.Status) outcome {
		return func(s engine.Status) outcome {
			if s == engine.StatusRunning {
				return outcome{to: to}
			}
			return outcome{err: engine.ErrStaleAttempt}
		}
	}
	commands := []struct {
		name string
		cmd  func(ref engine.LeaseRef) engine.Command
		want func(engine.Status) outcome
	}{
		{"cancel", func(r engine.LeaseRef) engine.Command { return &engine.Cancel{Target: engine.Target{Job: r.Job}} },
			legalIn(engine.StatusCancelled, engine.StatusQueued, engine.StatusRunning, engine.StatusWaiting, engine.StatusParked, engine.StatusRetrying, engine.StatusDraft, engine.StatusSuspended)},
		{"terminate", func(r engine.LeaseRef) engine.Command { return &engine.Terminate{Target: engine.Target{Job: r.Job}} },
			legalIn(engine.StatusTerminated, engine.StatusQueued, engine.StatusRunning, engine.StatusWaiting, engine.StatusParked, engine.StatusRetrying, engine.StatusDraft, engine.StatusSuspended)},
		{"suspend", func(r engine.LeaseRef) engine.Command { return &engine.Suspend{Target: engine.Target{Job: r.Job}} },
			legalIn(engine.StatusSuspended, engine.StatusQueued, engine.StatusRunning, engine.StatusWaiting, engine.StatusParked, engine.StatusRetrying, engine.StatusDraft)},
		{"resume", func(r engine.LeaseRef) engine.Command { return &engine.Resume{Target: engine.Target{Job: r.Job}} }, legalIn(engine.StatusQueued, engine.StatusSuspended)},
		{"activate", func(r engine.LeaseRef) engine.Command { return &engine.Activate{Target: engine.Target{Job: r.Job}} }, legalIn(engine.StatusQueued, engine.StatusDraft)},
		{"retry failed", func(r engine.LeaseRef) engine.Command { return &engine.Requeue{LeaseRef: engine.LeaseRef{Job: r.Job}} }, legalIn(engine.StatusQueued, engine.StatusFailed)},
		{"complete", func(r engine.LeaseRef) engine.Command {
			return &engine.Complete{LeaseRef: engine.LeaseRef{Job: r.Job, Attempt: max(r.Attempt, 1)}}
		}, fencedIn(engine.StatusCompleted)},
		{"fail", func(r engine.LeaseRef) engine.Command {
			return &engine.Fail{LeaseRef: engine.LeaseRef{Job: r.Job, Attempt: max(r.Attempt, 1)}}
		}, fencedIn(engine.StatusFailed)},
		{"requeue", func(r engine.LeaseRef) engine.Command {
			return &engine.Requeue{LeaseRef: engine.LeaseRef{Job: r.Job, Attempt: max(r.Attempt, 1)}}
		}, fencedIn(engine.StatusQueued)},
		{"requeue delayed", func(r engine.LeaseRef) engine.Command {
			return &engine.Requeue{LeaseRef: engine.LeaseRef{Job: r.Job, Attempt: max(r.Attempt, 1)}, DelayMS: 10}
		}, fencedIn(engine.StatusRetrying)},
		{"wait", func(r engine.LeaseRef) engine.Command {
			return &engine.Wait{LeaseRef: engine.LeaseRef{Job: r.Job, Attempt: max(r.Attempt, 1)}, Spec: engine.WaitSpec{Signals: []string{"x"}}}
		}, fencedIn(engine.StatusWaiting)},
	}
	for _, c := range commands {
		for _, s := range engine.Statuses() {
			t.Run(c.name+"/"+s.String(), func(t *testing.T) {
				h := newHarness(t)
				ref := drive(h, s, "wf")
				want := c.want(s)
				before := h.snapshot()
				_, err := h.apply(c.cmd(ref))
				if want.err != nil {
					if !errors.Is(err, want.err) {
						t.Fatalf("%s in %s: error %v, want %v", c.name, s, err, want.err)
					}
					sameStore(t, before, h.snapshot())
					return
				}
				if err != nil {
					t.Fatalf("%s in %s: %v", c.name, s, err)
				}
				if got := h.job(ref.Job).Status; got != want.to {
					t.Fatalf("%s in %s led to %s, want %s", c.name, s, got, want.to)
				}
				h.verify()
			})
		}
	}
}

// Claim, signal and reclaim in every status.
func TestSweepsAndSignalsInEveryStatus(t *testing.T) {
	for _, s := range engine.Statuses() {
		t.Run(s.String(), func(t *testing.T) {
			h := newHarness(t)
			ref := drive(h, s, "wf")
			claimed := h.must(&engine.Claim{Queue: "q", Owner: "w2", Max: 5, LeaseMS: 1000}).(*engine.ClaimResult)
			if got, want := len(claimed.Jobs), map[bool]int{true: 1, false: 0}[s == engine.StatusQueued]; got != want {
				t.Fatalf("claim in %s took %d jobs, want %d", s, got, want)
			}
			if s == engine.StatusQueued {
				return
			}
			// Expire every lease: only a Running job is reclaimed.
			h.now += 10_000_000
			r := h.must(&engine.Reclaim{Max: 10}).(*engine.SweepResult)
			if got, want := len(r.Jobs), map[bool]int{true: 1, false: 0}[s == engine.StatusRunning]; got != want {
				t.Fatalf("reclaim in %s took %d jobs, want %d", s, got, want)
			}
			h.verify()
			if s == engine.StatusRunning {
				return
			}
			sr, err := h.apply(&engine.Signal{Target: engine.Target{Job: ref.Job}, Name: "go"})
			switch {
			case s.Terminal():
				if !errors.Is(err, engine.ErrJobClosed) {
					t.Fatalf("signal to %s job: %v, want ErrJobClosed", s, err)
				}
			case err != nil:
				t.Fatalf("signal in %s: %v", s, err)
			case sr.(*engine.SignalResult).Woke != (s == engine.StatusWaiting || s == engine.StatusParked):
				t.Fatalf("signal in %s woke=%v", s, sr.(*engine.SignalResult).Woke)
			}
			h.verify()
		})
	}
}
