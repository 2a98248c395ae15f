package machine_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
)

// A retried command with the same request id returns the first result and
// writes nothing twice.
func TestRequestIDMakesCommandsIdempotent(t *testing.T) {
	h := newHarness(t)
	first := h.must(&engine.CreateJob{Header: engine.Header{RequestID: "r1"}, WorkflowID: "wf", Type: "t", Queue: "q"})
	claim := h.must(&engine.Claim{Header: engine.Header{RequestID: "r2"}, Queue: "q", Owner: "w", Max: 1, LeaseMS: 1000})
	before := h.snapshot()
	h.now += 10
	again := h.must(&engine.CreateJob{Header: engine.Header{RequestID: "r1"}, WorkflowID: "wf", Type: "t", Queue: "q"})
	claimAgain := h.must(&engine.Claim{Header: engine.Header{RequestID: "r2"}, Queue: "q", Owner: "w", Max: 1, LeaseMS: 1000})
	if !reflect.DeepEqual(first, again) || !reflect.DeepEqual(claim, claimAgain) {
		t.Fatalf("retries answered %+v / %+v, first %+v / %+v", again, claimAgain, first, claim)
	}
	sameStore(t, before, h.snapshot())
	// Reusing the id for another kind of command is an error.
	h.mustFail(&engine.Cancel{Header: engine.Header{RequestID: "r1"}, Target: engine.Target{Job: 1}}, engine.ErrInvalidCommand)
	// After the retention, the record is pruned by the first later request
	// whose prune turn it is (one in eight, by its id and time), and kept
	// by the others.
	h.now += 3600_000 + 1
	pruned := false
	for i := 0; i < 64 && !pruned; i++ {
		rid := fmt.Sprintf("later-%d", i)
		h.now++
		pruned = machine.PruneTurn(rid, h.now)
		h.must(&engine.Signal{Header: engine.Header{RequestID: rid}, Target: engine.Target{Job: 1}, Name: "x"})
		_, err := h.db.Get([]byte("rr1"))
		switch {
		case pruned && err == nil:
			t.Fatalf("request record r1 survived its retention past the prune turn of %s", rid)
		case !pruned && err != nil:
			t.Fatalf("request record r1 was removed by %s, whose turn it was not to prune: %v", rid, err)
		}
	}
	if !pruned {
		t.Fatal("none of 64 later requests had a prune turn")
	}
	h.verify()
}

func TestWorkflowIDReusePolicies(t *testing.T) {
	h := newHarness(t)
	start := func(p engine.IDReusePolicy, input string) (*engine.CreateResult, error) {
		r, err := h.apply(&engine.CreateJob{WorkflowID: "wf", Type: "t", Queue: "q", Input: []byte(input), ReusePolicy: p})
		if err != nil {
			return nil, err
		}
		return r.(*engine.CreateResult), nil
	}
	first, err := start(engine.IDReuseAllowAfterTerminal, "a")
	if err != nil {
		t.Fatal(err)
	}
	// Open run: refused by the default and by reject; identical start returns it.
	if _, err := start(engine.IDReuseAllowAfterTerminal, "a"); !errors.Is(err, engine.ErrWorkflowExists) {
		t.Fatalf("default policy on an open run: %v", err)
	}
	if _, err := start(engine.IDReuseRejectDuplicate, "a"); !errors.Is(err, engine.ErrWorkflowExists) {
		t.Fatalf("reject policy on an open run: %v", err)
	}
	same, err := start(engine.IDReuseReturnExisting, "a")
	if err != nil || !same.Existing || same.Job != first.Job {
		t.Fatalf("identical start = %+v, %v; want run %d", same, err, first.Job)
	}
	if _, err := start(engine.IDReuseReturnExisting, "b"); !errors.Is(err, engine.ErrWorkflowExists) {
		t.Fatalf("different start under return-existing: %v", err)
	}
	// Terminal run: reject still refuses, the others start a new run.
	h.must(&engine.Cancel{Target: engine.Target{Job: first.Job}})
	if _, err := start(engine.IDReuseRejectDuplicate, "a"); !errors.Is(err, engine.ErrWorkflowExists) {
		t.Fatalf("reject policy after a terminal run: %v", err)
	}
	second, err := start(engine.IDReuseAllowAfterTerminal, "a")
	if err != nil || second.Job == first.Job || second.Existing {
		t.Fatalf("start after terminal = %+v, %v", second, err)
	}
	if j := h.job(second.Job); j.WorkflowID != "wf" {
		t.Fatalf("new run has workflow id %q", j.WorkflowID)
	}
	h.verify() // the workflow-id key names the newest run
}

// Now is kept monotonic: a command stamped earlier than its predecessor
// takes the predecessor's time.
func TestNowIsMonotonic(t *testing.T) {
	h := newHarness(t)
	id := h.create("wf")
	h.now -= 500
	h.must(&engine.Signal{Target: engine.Target{Job: id}, Name: "late"})
	evs := h.history(id)
	if evs[1].AtMS != evs[0].AtMS {
		t.Fatalf("event stamped %d after one stamped %d", evs[1].AtMS, evs[0].AtMS)
	}
}

// Signals sent while a job is Queued, Running and Waiting are recorded once
// each, in order; only the one a wait names wakes the job.
func TestSignalsInOrderAndWake(t *testing.T) {
	h := newHarness(t)
	id := h.create("wf")
	h.must(&engine.Signal{Target: engine.Target{Job: id}, Name: "s", Payload: []byte("1")})
	c := h.claimOne(1000)
	ref := engine.LeaseRef{Job: id, Attempt: c.Attempt}
	h.must(&engine.Signal{Target: engine.Target{WorkflowID: "wf"}, Name: "s", Payload: []byte("2")})
	h.must(&engine.Wait{LeaseRef: ref, Spec: engine.WaitSpec{Signals: []string{"go"}}, SeenSeq: h.job(id).LastSeq})
	if r := h.must(&engine.Signal{Target: engine.Target{Job: id}, Name: "s", Payload: []byte("3")}).(*engine.SignalResult); r.Woke {
		t.Fatal("a signal the wait does not name woke the job")
	}
	if r := h.must(&engine.Signal{Target: engine.Target{Job: id}, Name: "go", Payload: []byte("4")}).(*engine.SignalResult); !r.Woke {
		t.Fatal("the awaited signal did not wake the job")
	}
	var got []string
	for _, ev := range h.history(id) {
		if ev.Type == engine.EventSignalReceived {
			got = append(got, string(ev.Payload))
		}
	}
	if !reflect.DeepEqual(got, []string{"1", "2", "3", "4"}) {
		t.Fatalf("signals recorded %v, want 1 2 3 4", got)
	}
	h.verify()
}

// A wait for something that already happened after SeenSeq does not block.
func TestWaitAlreadySatisfied(t *testing.T) {
	h := newHarness(t)
	id := h.create("wf")
	c := h.claimOne(1000)
	ref := engine.LeaseRef{Job: id, Attempt: c.Attempt}
	h.must(&engine.Signal{Target: engine.Target{Job: id}, Name: "go"})
	before := h.snapshot()
	w := h.must(&engine.Wait{LeaseRef: ref, Spec: engine.WaitSpec{Signals: []string{"go"}}, SeenSeq: c.LastSeq}).(*engine.WaitResult)
	if !w.Woken || w.Status != engine.StatusRunning {
		t.Fatalf("wait = %+v, want woken and still running", w)
	}
	sameStore(t, before, h.snapshot())
	// Having seen the signal, the worker's next wait does block.
	w = h.must(&engine.Wait{LeaseRef: ref, Spec: engine.WaitSpec{Signals: []string{"go"}}, SeenSeq: h.job(id).LastSeq}).(*engine.WaitResult)
	if w.Woken || w.Status != engine.StatusWaiting {
		t.Fatalf("second wait = %+v, want Waiting", w)
	}
	h.verify()
}

// A child job's result becomes its parent's step effect (phase 1), wakes the
// parent, and the parent catches it up into its history (phase 2) once.
func TestChildResultIsCaughtUp(t *testing.T) {
	h := newHarness(t)
	parent := h.create("parent")
	pc := h.claimOne(1000)
	pref := engine.LeaseRef{Job: parent, Attempt: pc.Attempt}
	child := h.must(&engine.CreateJob{WorkflowID: "child", Type: "t", Queue: "remote", ParentID: parent, ParentStep: "s1", ParentLease: &pref}).(*engine.CreateResult).Job
	h.must(&engine.Wait{LeaseRef: pref, Spec: engine.WaitSpec{Steps: []string{"s1"}}, SeenSeq: h.job(parent).LastSeq})

	cc := h.must(&engine.Claim{Queue: "remote", Owner: "w2", Max: 1, LeaseMS: 1000}).(*engine.ClaimResult).Jobs[0]
	h.must(&engine.Complete{LeaseRef: engine.LeaseRef{Job: child, Attempt: cc.Attempt}, Result: []byte("42")})
	if got := h.job(parent).Status; got != engine.StatusQueued {
		t.Fatalf("parent after child completed: %s, want Queued", got)
	}
	pc2 := h.claimOne(1000)
	pref2 := engine.LeaseRef{Job: parent, Attempt: pc2.Attempt}
	h.mustFail(&engine.CommitStep{LeaseRef: pref2, Step: "s1", Type: "child_completed", Payload: []byte("x")}, engine.ErrStepCommitted)
	r := h.must(&engine.CommitStep{LeaseRef: pref2, Step: "s1", Type: "child_completed", CatchUp: true}).(*engine.AppendResult)
	if ev := h.history(parent)[r.FirstSeq-1]; string(ev.Payload) != "42" || !ev.Commit {
		t.Fatalf("caught-up event %+v, want the child's result", ev)
	}
	h.mustFail(&engine.CommitStep{LeaseRef: pref2, Step: "s1", Type: "child_completed", CatchUp: true}, engine.ErrStepCommitted)
	h.verify()
}

// A retry delay makes a job Retrying; release returns it to the queue.
func TestRetryDelayAndRelease(t *testing.T) {
	h := newHarness(t)
	ref := drive(h, engine.StatusRunning, "wf")
	h.must(&engine.Requeue{LeaseRef: ref, DelayMS: 3000})
	if n := len(h.must(&engine.Claim{Queue: "q", Owner: "w", Max: 5, LeaseMS: 10}).(*engine.ClaimResult).Jobs); n != 0 {
		t.Fatalf("claimed a Retrying job")
	}
	h.now += 2999
	if r := h.must(&engine.ReleaseDelayed{Max: 5}).(*engine.SweepResult); len(r.Jobs) != 0 {
		t.Fatalf("released early: %+v", r)
	}
	h.now++
	if r := h.must(&engine.ReleaseDelayed{Max: 5}).(*engine.SweepResult); len(r.Ready) != 1 {
		t.Fatalf("release = %+v", r)
	}
	if j := h.job(ref.Job); j.Status != engine.StatusQueued || j.Retries != 1 {
		t.Fatalf("job %+v", j)
	}
	h.verify()
}

// Sweeps take at most Max jobs, oldest first, and say when more are due.
func TestSweepBatches(t *testing.T) {
	h := newHarness(t)
	for i := 0; i < 5; i++ {
		h.create("")
	}
	h.must(&engine.Claim{Queue: "q", Owner: "w", Max: 5, LeaseMS: 100})
	h.now += 100
	r := h.must(&engine.Reclaim{Max: 3}).(*engine.SweepResult)
	if !reflect.DeepEqual(r.Jobs, []engine.JobID{1, 2, 3}) || !r.More {
		t.Fatalf("first reclaim %+v", r)
	}
	r = h.must(&engine.Reclaim{Max: 3}).(*engine.SweepResult)
	if !reflect.DeepEqual(r.Jobs, []engine.JobID{4, 5}) || r.More {
		t.Fatalf("second reclaim %+v", r)
	}
	h.verify()
}

// A job started without a workflow id never takes over an id a user chose.
func TestDefaultWorkflowIDAvoidsUserIDs(t *testing.T) {
	h := newHarness(t)
	user := h.create("job-2") // job 1, under a name the default scheme would give job 2
	r := h.must(&engine.CreateJob{Type: "t", Queue: "q"}).(*engine.CreateResult)
	if r.Job != 2 || r.WorkflowID != "job-2.1" {
		t.Fatalf("default-named job = %+v, want job 2 named job-2.1", r)
	}
	if j := h.job(user); j.WorkflowID != "job-2" {
		t.Fatalf("user's job renamed: %+v", j)
	}
	h.verify()
}

// A failed run that a newer run of the same workflow id replaced cannot be
// retried: one workflow id has at most one open run.
func TestRetryOfSupersededRunRefused(t *testing.T) {
	h := newHarness(t)
	old := drive(h, engine.StatusFailed, "wf")
	h.create("wf") // the new run
	h.mustFail(&engine.Requeue{LeaseRef: engine.LeaseRef{Job: old.Job}}, engine.ErrWorkflowExists)
	h.verify()
}

// A command that finds nothing to do writes nothing, not even the clock.
func TestIdleCommandsWriteNothing(t *testing.T) {
	h := newHarness(t)
	h.create("wf")
	h.claimOne(1000)
	before := h.snapshot()
	h.now += 5000
	h.must(&engine.Claim{Queue: "q", Owner: "w", Max: 10, LeaseMS: 1000})
	h.must(&engine.FireTimers{Max: 10})
	h.must(&engine.ReleaseDelayed{Max: 10})
	sameStore(t, before, h.snapshot())
}

// A wait on several timers and on any signal; a cancel request wakes a
// waiting job and ends an open wait before it starts.
func TestWaitOnTimersAnySignalAndCancelRequest(t *testing.T) {
	h := newHarness(t)
	id := h.create("wf")
	c := h.claimOne(1000)
	ref := engine.LeaseRef{Job: id, Attempt: c.Attempt}
	w := h.must(&engine.Wait{LeaseRef: ref, SeenSeq: c.LastSeq,
		Spec:   engine.WaitSpec{Timers: []engine.Timer{{ID: "3", FireMS: h.now + 500}, {ID: "5", FireMS: h.now + 100}}, AnySignal: true},
		Events: []engine.NewEvent{{Type: "timer_scheduled", Step: "3"}, {Type: "timer_scheduled", Step: "5"}}}).(*engine.WaitResult)
	if w.Woken || w.Seq != c.LastSeq+3 {
		t.Fatalf("wait = %+v, want job_waiting after two recorded events", w)
	}
	h.now += 100
	if r := h.must(&engine.FireTimers{Max: 10}).(*engine.SweepResult); len(r.Ready) != 1 {
		t.Fatalf("the earlier timer did not wake the job: %+v", r)
	}
	c2 := h.claimOne(1000)
	ref2 := engine.LeaseRef{Job: id, Attempt: c2.Attempt}
	h.must(&engine.Wait{LeaseRef: ref2, SeenSeq: c2.LastSeq, Spec: engine.WaitSpec{Timers: []engine.Timer{{ID: "3", FireMS: h.now + 400}}, AnySignal: true}})
	if r := h.must(&engine.Signal{Target: engine.Target{Job: id}, Name: "anything"}).(*engine.SignalResult); !r.Woke {
		t.Fatal("AnySignal did not wake on an arbitrary signal")
	}
	c3 := h.claimOne(1000)
	ref3 := engine.LeaseRef{Job: id, Attempt: c3.Attempt}
	h.must(&engine.RequestCancel{Target: engine.Target{Job: id}})
	if w := h.must(&engine.Wait{LeaseRef: ref3, SeenSeq: c3.LastSeq, Spec: engine.WaitSpec{AnySignal: true}}).(*engine.WaitResult); !w.Woken {
		t.Fatal("a wait after an unseen cancel request blocked")
	}
	h.must(&engine.Wait{LeaseRef: ref3, SeenSeq: h.job(id).LastSeq, Spec: engine.WaitSpec{Steps: []string{"x"}}})
	if r := h.must(&engine.RequestCancel{Target: engine.Target{WorkflowID: "wf"}}).(*engine.StatusResult); r.Status != engine.StatusQueued {
		t.Fatalf("cancel request left the waiting job %s", r.Status)
	}
	h.verify()
	h.must(&engine.Cancel{Target: engine.Target{Job: id}})
	h.mustFail(&engine.RequestCancel{Target: engine.Target{Job: id}}, engine.ErrJobClosed)
}

// Continue-as-new completes the run and starts the next one under the same
// workflow id in one command; the parent link moves to the new run.
func TestContinueAsNew(t *testing.T) {
	h := newHarness(t)
	parent := h.create("parent")
	pc := h.must(&engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 1000}).(*engine.ClaimResult).Jobs[0] // the parent
	pl := pc.Lease()
	child := h.must(&engine.CreateJob{WorkflowID: "loop", Type: "t", Queue: "q", ParentID: parent, ParentStep: "7", ParentLease: &pl}).(*engine.CreateResult).Job
	c := h.must(&engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 1000}).(*engine.ClaimResult).Jobs[0]
	if c.Job != child {
		t.Fatalf("claimed %d, want the child %d", c.Job, child)
	}
	r := h.must(&engine.ContinueAsNew{LeaseRef: engine.LeaseRef{Job: child, Attempt: c.Attempt}, Input: []byte("n=2")}).(*engine.CreateResult)
	if r.WorkflowID != "loop" || r.Job == child {
		t.Fatalf("continue-as-new = %+v", r)
	}
	old, next := h.job(child), h.job(r.Job)
	if old.Status != engine.StatusCompleted || next.Status != engine.StatusQueued || next.ParentID != parent || next.ParentStep != "7" {
		t.Fatalf("old %+v, next %+v", old, next)
	}
	if eff, _ := h.m.Apply(h.db.NewBatch().Begin(), &engine.Signal{Header: engine.Header{NowMS: h.now}, Target: engine.Target{WorkflowID: "loop"}, Name: "x"}); eff.(*engine.SignalResult).Job != r.Job {
		t.Fatal("the workflow id does not name the new run")
	}
	h.mustFail(&engine.AppendEvents{LeaseRef: engine.LeaseRef{Job: child, Attempt: c.Attempt}, Events: []engine.NewEvent{{Type: "x"}}}, engine.ErrStaleAttempt)
	h.verify()
}
