package machine_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// stepH is a harness with step helpers.
type stepH struct{ *harness }

func newStepH(t *testing.T) stepH { return stepH{newHarness(t)} }

// running creates a job on its own queue and claims it.
func (h stepH) running(wf string) engine.LeaseRef {
	h.t.Helper()
	id := h.must(&engine.CreateJob{WorkflowID: wf, Type: "order", Queue: "q-" + wf}).(*engine.CreateResult).Job
	c := h.must(&engine.Claim{Queue: "q-" + wf, Owner: "w-" + wf, Max: 1, LeaseMS: 600_000}).(*engine.ClaimResult)
	if len(c.Jobs) != 1 || c.Jobs[0].Job != id {
		h.t.Fatalf("claim of %s: %+v", wf, c.Jobs)
	}
	return engine.LeaseRef{Job: id, Attempt: c.Jobs[0].Attempt}
}

func (h stepH) lease(ref engine.LeaseRef, step string, caps ...string) *engine.StepResult {
	h.t.Helper()
	return h.must(&engine.LeaseStep{LeaseRef: ref, Step: step, Name: "Fetch", LeaseMS: 10_000, Capabilities: caps}).(*engine.StepResult)
}

func (h stepH) rec(id engine.JobID, step string) *engine.StepRecord {
	h.t.Helper()
	var r *engine.StepRecord
	viewOK(h.t, h.db, func(rd *storage.Reader) error {
		var err error
		r, err = machine.ReadStep(rd.Get, id, step)
		return err
	})
	if r == nil {
		h.t.Fatalf("step %q of job %d has no record", step, id)
	}
	return r
}

func (h stepH) resource(id string) *engine.Resource {
	h.t.Helper()
	var r *engine.Resource
	viewOK(h.t, h.db, func(rd *storage.Reader) error {
		var err error
		r, err = machine.ReadResource(rd.Get, id)
		return err
	})
	return r
}

func (h stepH) stepEvents(id engine.JobID, step string) []engine.EventType {
	var out []engine.EventType
	for _, ev := range h.history(id) {
		if ev.Step == step && engine.IsStepEvent(ev.Type) {
			out = append(out, ev.Type)
		}
	}
	return out
}

func (h stepH) addResource(id string, capacity int, caps ...string) {
	h.t.Helper()
	h.must(&engine.AddResource{ID: id, Capabilities: caps, Capacity: capacity})
}

func wantState(t *testing.T, r *engine.StepResult, state engine.StepState, granted bool, resource string) {
	t.Helper()
	if r.State != state || r.Granted != granted || r.Resource != resource {
		t.Fatalf("step %s: %s granted=%v on %q, want %s granted=%v on %q", r.Step, r.State, r.Granted, r.Resource, state, granted, resource)
	}
}

// A step with no requirement is leased at once; its first heartbeat starts
// it; its commit ends it and its record; the history projects the same.
func TestStepLeaseStartCommit(t *testing.T) {
	h := newStepH(t)
	ref := h.running("a")
	r := h.lease(ref, "1")
	wantState(t, r, engine.StepLeased, true, "")
	if r.StepAttempt != 1 || r.StepLeaseExpiryMS != h.now+10_000 {
		t.Fatalf("lease: try %d until %d", r.StepAttempt, r.StepLeaseExpiryMS)
	}
	h.now += 100
	hb := h.must(&engine.StepHeartbeat{LeaseRef: ref, Step: "1", StepAttempt: 1, LeaseMS: 600_000}).(*engine.StepResult)
	if hb.State != engine.StepRunning || hb.LeaseExpiryMS != h.now+600_000 {
		t.Fatalf("heartbeat: %+v", hb)
	}
	h.must(&engine.StepHeartbeat{LeaseRef: ref, Step: "1", StepAttempt: 1, LeaseMS: 600_000})
	if got := h.rec(ref.Job, "1"); got.LastHeartbeatMS != h.now || got.Owner != "w-a" {
		t.Fatalf("record after heartbeats: %+v", got)
	}
	h.must(&engine.CommitStep{LeaseRef: ref, Step: "1", Type: engine.EventActivityCompleted, StepAttempt: 1, Decision: engine.DecisionAccept})
	if got := h.rec(ref.Job, "1"); got.State != engine.StepSucceeded || len(h.job(ref.Job).LiveSteps) != 0 {
		t.Fatalf("after commit: %+v, live %v", got, h.job(ref.Job).LiveSteps)
	}
	want := []engine.EventType{engine.EventStepLeased, engine.EventStepStarted, engine.EventActivityCompleted}
	if got := h.stepEvents(ref.Job, "1"); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	h.mustFail(&engine.LeaseStep{LeaseRef: ref, Step: "1", Name: "Fetch", LeaseMS: 1000}, engine.ErrStepCommitted)
	h.verify()
}

// Capacity is never exceeded: the third step waits, and is leased the unit
// the first one frees, in the same command, ahead of a later request.
func TestStepResourceFIFO(t *testing.T) {
	h := newStepH(t)
	h.addResource("b1", 2, "browser")
	a, b, c := h.running("a"), h.running("b"), h.running("c")
	wantState(t, h.lease(a, "1", "browser"), engine.StepLeased, true, "b1")
	wantState(t, h.lease(b, "1", "browser"), engine.StepLeased, true, "b1")
	wantState(t, h.lease(c, "1", "browser"), engine.StepPending, false, "")
	if r := h.rec(c.Job, "1"); r.WaiterSeq == 0 {
		t.Fatal("the third step is not queued")
	}
	d := h.running("d")
	if r := h.lease(d, "1", "browser"); !r.Queued {
		t.Fatalf("a later request jumped the queue: %+v", r)
	}
	h.verify()
	// a's try fails and will be retried: its unit goes to c, not d.
	h.must(&engine.EndStepAttempt{LeaseRef: a, Step: "1", Name: "Fetch", StepAttempt: 1, Outcome: engine.OutcomeRetry, Payload: []byte(`{}`)})
	if r := h.rec(c.Job, "1"); r.State != engine.StepLeased || r.Resource != "b1" || r.JobAttempt != 0 {
		t.Fatalf("c after a's release: %+v", r)
	}
	if r := h.rec(d.Job, "1"); r.WaiterSeq == 0 {
		t.Fatal("d was served before c")
	}
	// c's job adopts the lease the engine granted.
	wantState(t, h.lease(c, "1", "browser"), engine.StepLeased, true, "b1")
	if r := h.rec(c.Job, "1"); r.JobAttempt != c.Attempt {
		t.Fatalf("c's lease not adopted: %+v", r)
	}
	// a asks again for its retry and queues behind d.
	if r := h.lease(a, "1", "browser"); !r.Queued || r.State != engine.StepRetrying {
		t.Fatalf("a's retry: %+v", r)
	}
	if rs := h.resource("b1"); len(rs.Holders) != 2 {
		t.Fatalf("b1 holds %d units", len(rs.Holders))
	}
	h.verify()
	// b's job ends: its unit goes to d, then c's commit frees one for a.
	h.must(&engine.Complete{LeaseRef: b})
	if r := h.rec(d.Job, "1"); r.State != engine.StepLeased {
		t.Fatalf("d after b's job ended: %+v", r)
	}
	h.must(&engine.CommitStep{LeaseRef: c, Step: "1", Type: engine.EventActivityCompleted, StepAttempt: 1})
	if r := h.rec(a.Job, "1"); r.State != engine.StepRunning || r.Attempt != 2 || r.Resource != "b1" {
		t.Fatalf("a's retry after c's commit: %+v", r)
	}
	h.verify()
}

// A resource error puts the resource on the step's avoid-list, and the
// step is leased another; with none left, LeaseStep names what it needs.
func TestStepSwitchResource(t *testing.T) {
	h := newStepH(t)
	h.must(&engine.AddResource{ID: "b1", Capabilities: []string{"browser"}, Labels: map[string]string{"region": "eu"}, Capacity: 5})
	h.must(&engine.AddResource{ID: "b2", Capabilities: []string{"browser"}, Labels: map[string]string{"region": "eu"}, Capacity: 1})
	h.must(&engine.AddResource{ID: "b3", Capabilities: []string{"browser"}, Labels: map[string]string{"region": "us"}, Capacity: 9})
	ref := h.running("a")
	lease := &engine.LeaseStep{LeaseRef: ref, Step: "1", Name: "Fetch", LeaseMS: 10_000, Capabilities: []string{"browser"},
		Selector: map[string]string{"region": "eu"}}
	wantState(t, h.must(lease).(*engine.StepResult), engine.StepLeased, true, "b1") // the most free units
	h.must(&engine.EndStepAttempt{LeaseRef: ref, Step: "1", Name: "Fetch", StepAttempt: 1, Outcome: engine.OutcomeSwitchResource, Decision: engine.DecisionSwitchResource})
	if r := h.rec(ref.Job, "1"); r.State != engine.StepSwitchingResource || !slices.Equal(r.Avoid, []string{"b1"}) || r.Resource != "" {
		t.Fatalf("after the resource failed: %+v", r)
	}
	r := h.must(lease).(*engine.StepResult)
	wantState(t, r, engine.StepLeased, true, "b2")
	if r.StepAttempt != 2 || r.Labels["region"] != "eu" {
		t.Fatalf("second lease: %+v", r)
	}
	h.must(&engine.EndStepAttempt{LeaseRef: ref, Step: "1", Name: "Fetch", StepAttempt: 2, Outcome: engine.OutcomeSwitchResource})
	_, err := h.apply(lease)
	var nr *engine.NoResourceError
	if !errors.As(err, &nr) || !slices.Equal(nr.Avoid, []string{"b1", "b2"}) || nr.Selector["region"] != "eu" {
		t.Fatalf("third lease: %v", err)
	}
	for _, want := range []string{"browser", "region=eu", "b1", "b2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not name %s", err, want)
		}
	}
	h.must(&engine.CommitStep{LeaseRef: ref, Step: "1", Type: engine.EventActivityFailed, Failed: true, Reason: engine.ReasonNotStarted})
	want := []engine.StepState{engine.StepPending, engine.StepLeased, engine.StepRunning, engine.StepFailedResource, engine.StepSwitchingResource, engine.StepLeased,
		engine.StepRunning, engine.StepFailedResource, engine.StepSwitchingResource, engine.StepFailedFatal, engine.StepFailed}
	if p := engine.DeriveStepState(h.history(ref.Job)); !slices.Equal(p.Path, want) {
		t.Fatalf("path %v, want %v", p.Path, want)
	}
	h.verify()
}

// A stale try is refused even while the job's lease is live: the step
// lease ran out, the step was leased again, and the first try's heartbeat,
// end and commit come late.
func TestStepStaleAttemptRefused(t *testing.T) {
	h := newStepH(t)
	h.addResource("b1", 1, "browser")
	ref := h.running("a")
	h.lease(ref, "1", "browser")
	h.must(&engine.StepHeartbeat{LeaseRef: ref, Step: "1", StepAttempt: 1, LeaseMS: 600_000})
	h.now += 11_000
	res := h.must(&engine.ExpireSteps{Max: 10}).(*engine.SweepResult)
	if len(res.Jobs) != 1 {
		t.Fatalf("expire: %+v", res)
	}
	if r := h.rec(ref.Job, "1"); r.State != engine.StepRetrying || r.Resource != "" {
		t.Fatalf("after the running step's lease ran out: %+v", r)
	}
	wantState(t, h.lease(ref, "1", "browser"), engine.StepRunning, true, "b1") // the retry's start
	for _, c := range []engine.Command{
		&engine.StepHeartbeat{LeaseRef: ref, Step: "1", StepAttempt: 1, LeaseMS: 600_000},
		&engine.EndStepAttempt{LeaseRef: ref, Step: "1", Name: "Fetch", StepAttempt: 1, Outcome: engine.OutcomeRetry},
		&engine.CommitStep{LeaseRef: ref, Step: "1", Type: engine.EventActivityCompleted, StepAttempt: 1},
	} {
		_, err := h.apply(c)
		var se *engine.StaleStepError
		if !errors.As(err, &se) || !errors.Is(err, engine.ErrStaleAttempt) || se.Current != 2 {
			t.Fatalf("%s of try 1: %v", c.Kind(), err)
		}
	}
	if h.job(ref.Job).Status != engine.StatusRunning {
		t.Fatal("the job lost its lease")
	}
	h.must(&engine.CommitStep{LeaseRef: ref, Step: "1", Type: engine.EventActivityCompleted, StepAttempt: 2})
	h.verify()
}

// A step without a record that heartbeats is noted on the job record; an
// older try's heartbeat or commit is refused.
func TestStepImplicitHeartbeat(t *testing.T) {
	h := newStepH(t)
	ref := h.running("a")
	h.must(&engine.StepHeartbeat{LeaseRef: ref, Step: "3", StepAttempt: 2, LeaseMS: 600_000})
	if b := h.job(ref.Job).Beats; len(b) != 1 || b[0].StepAttempt != 2 || b[0].AtMS != h.now {
		t.Fatalf("beats %+v", b)
	}
	h.mustFail(&engine.StepHeartbeat{LeaseRef: ref, Step: "3", StepAttempt: 1, LeaseMS: 600_000}, engine.ErrStaleAttempt)
	h.mustFail(&engine.CommitStep{LeaseRef: ref, Step: "3", Type: engine.EventActivityCompleted, StepAttempt: 1}, engine.ErrStaleAttempt)
	h.must(&engine.CommitStep{LeaseRef: ref, Step: "3", Type: engine.EventActivityCompleted, StepAttempt: 2})
	if b := h.job(ref.Job).Beats; len(b) != 0 {
		t.Fatalf("beats after the commit: %+v", b)
	}
	h.mustFail(&engine.StepHeartbeat{LeaseRef: ref, Step: "3", StepAttempt: 2, LeaseMS: 600_000}, engine.ErrStaleAttempt)
	infos := h.steps(ref.Job)
	if len(infos) != 1 || infos[0].State != engine.StepSucceeded || infos[0].Attempt != 2 {
		t.Fatalf("steps %+v", infos)
	}
	h.verify()
}

func (h stepH) steps(id engine.JobID) []engine.StepInfo {
	h.t.Helper()
	var out []engine.StepInfo
	viewOK(h.t, h.db, func(r *storage.Reader) error {
		j, err := machine.ReadJob(r, id)
		if err != nil {
			return err
		}
		hist, _, err := machine.ReadHistory(r, id, 0, 0)
		if err != nil {
			return err
		}
		recs := map[string]*engine.StepRecord{}
		err = r.Scan(storage.StepPrefix(uint64(id)), nil, true, func(k, v []byte) (bool, error) {
			s, err := machine.DecodeStepRecord(v)
			if err == nil {
				recs[s.Step] = s
			}
			return err == nil, err
		})
		out = engine.StepInfos(j, hist, recs)
		return err
	})
	return out
}

// NEEDS_USER: the step keeps its unit and holds no lease while the job
// waits; a person's answer moves it to RUNNING under a new try, wakes the
// job, and the job's next attempt adopts it. A step that asks nobody takes
// no answer.
func TestStepNeedsUserRoundTrip(t *testing.T) {
	h := newStepH(t)
	h.addResource("p1", 1, "phone")
	ref := h.running("a")
	h.lease(ref, "1", "phone")
	h.mustFail(&engine.AnswerStep{Target: engine.Target{WorkflowID: "a"}, Step: "1", Answer: []byte("x")}, engine.ErrStepState)
	h.must(&engine.EndStepAttempt{LeaseRef: ref, Step: "1", Name: "Fetch", StepAttempt: 1, Outcome: engine.OutcomeNeedsUser,
		Payload: []byte(`"enter the code"`), Decision: engine.DecisionNeedsUser})
	r := h.rec(ref.Job, "1")
	if r.State != engine.StepNeedsUser || r.Resource != "p1" || r.LeaseExpiryMS != 0 || string(r.Question) != `"enter the code"` {
		t.Fatalf("needs user: %+v", r)
	}
	h.must(&engine.Wait{LeaseRef: ref, Spec: engine.WaitSpec{Steps: []string{"1"}, Park: true}, SeenSeq: h.job(ref.Job).LastSeq})
	if s := h.job(ref.Job).Status; s != engine.StatusParked {
		t.Fatalf("job %s", s)
	}
	h.now += 3_600_000
	h.must(&engine.ExpireSteps{Max: 10}) // no timeout: nothing happens
	if h.rec(ref.Job, "1").State != engine.StepNeedsUser {
		t.Fatal("the question timed out without a timeout")
	}
	res := h.must(&engine.AnswerStep{Target: engine.Target{WorkflowID: "a"}, Step: "1", Answer: []byte(`"4711"`)}).(*engine.StepResult)
	if res.State != engine.StepRunning || res.StepAttempt != 2 {
		t.Fatalf("answer: %+v", res)
	}
	if s := h.job(ref.Job).Status; s != engine.StatusQueued {
		t.Fatalf("job %s after the answer", s)
	}
	if rs := h.resource("p1"); len(rs.Holders) != 1 || rs.Holders[0].StepAttempt != 2 {
		t.Fatalf("p1 holders %+v", rs.Holders)
	}
	c := h.must(&engine.Claim{Queue: "q-a", Owner: "w2", Max: 1, LeaseMS: 600_000}).(*engine.ClaimResult).Jobs[0]
	ref2 := c.Lease()
	wantState(t, h.lease(ref2, "1", "phone"), engine.StepRunning, true, "p1")
	h.must(&engine.CommitStep{LeaseRef: ref2, Step: "1", Type: engine.EventActivityCompleted, StepAttempt: 2})
	if rs := h.resource("p1"); len(rs.Holders) != 0 {
		t.Fatalf("p1 still held: %+v", rs.Holders)
	}
	h.verify()
}

// A question with a timeout is answered by the scheduler's sweep with no
// answer when nobody answers in time.
func TestStepNeedsUserTimeout(t *testing.T) {
	h := newStepH(t)
	ref := h.running("a")
	h.must(&engine.EndStepAttempt{LeaseRef: ref, Step: "4", Name: "Confirm", StepAttempt: 1, Outcome: engine.OutcomeNeedsUser,
		Payload: []byte(`"confirm?"`), AnswerTimeoutMS: 5_000})
	h.now += 4_999
	h.must(&engine.ExpireSteps{Max: 10})
	h.now++
	h.must(&engine.ExpireSteps{Max: 10})
	var answered *engine.Event
	for _, ev := range h.history(ref.Job) {
		if ev.Type == engine.EventStepAnswered {
			answered = &ev
		}
	}
	if answered == nil || answered.Reason != engine.ReasonAnswerTimeout || answered.Payload != nil || answered.StepAttempt != 2 {
		t.Fatalf("answered %+v", answered)
	}
	h.verify()
}

// WAITING_DEPS: a step issued before the steps it depends on succeed waits,
// and is leased by the commit of the last of them; a failed dependency
// refuses the lease.
func TestStepWaitingDeps(t *testing.T) {
	h := newStepH(t)
	ref := h.running("a")
	dep := &engine.LeaseStep{LeaseRef: ref, Step: "3", Name: "Merge", LeaseMS: 10_000, DependsOn: []string{"1", "2"}}
	r := h.must(dep).(*engine.StepResult)
	if r.State != engine.StepWaitingDeps || !r.WaitingDeps || r.Granted {
		t.Fatalf("lease before its dependencies: %+v", r)
	}
	h.must(&engine.CommitStep{LeaseRef: ref, Step: "1", Type: engine.EventActivityCompleted, StepAttempt: 1})
	if h.rec(ref.Job, "3").State != engine.StepWaitingDeps {
		t.Fatal("leased after one of two dependencies")
	}
	cs := h.must(&engine.CommitStep{LeaseRef: ref, Step: "2", Type: engine.EventActivityCompleted, StepAttempt: 1}).(*engine.AppendResult)
	if cs.LastSeq != cs.FirstSeq+1 {
		t.Fatalf("the commit leading to a lease reports seqs %d..%d", cs.FirstSeq, cs.LastSeq)
	}
	if got := h.rec(ref.Job, "3"); got.State != engine.StepLeased || got.JobAttempt != 0 {
		t.Fatalf("after its dependencies: %+v", got)
	}
	wantState(t, h.must(dep).(*engine.StepResult), engine.StepLeased, true, "")
	// A failed dependency.
	h.must(&engine.CommitStep{LeaseRef: ref, Step: "5", Type: engine.EventActivityFailed, Failed: true, StepAttempt: 1})
	h.mustFail(&engine.LeaseStep{LeaseRef: ref, Step: "6", Name: "Merge", LeaseMS: 10_000, DependsOn: []string{"5"}}, engine.ErrDependencyFailed)
	h.verify()
}

// A job's end releases the units its steps hold and their places in the
// queue; the freed units go to the next waiters.
func TestStepJobEndReleases(t *testing.T) {
	h := newStepH(t)
	h.addResource("g", 1, "gpu")
	a, b, c := h.running("a"), h.running("b"), h.running("c")
	h.lease(a, "1", "gpu")
	h.lease(b, "1", "gpu") // queued
	h.lease(c, "1", "gpu") // queued behind b
	h.must(&engine.Cancel{Target: engine.Target{Job: b.Job}})
	h.must(&engine.Terminate{Target: engine.Target{Job: a.Job}})
	if r := h.rec(c.Job, "1"); r.State != engine.StepLeased || r.Resource != "g" {
		t.Fatalf("c after a and b ended: %+v", r)
	}
	if r := h.rec(a.Job, "1"); !r.Released || r.Resource != "g" {
		t.Fatalf("a's record: %+v", r)
	}
	h.verify()
}

// A newer attempt of the job takes a step over from the older one.
func TestStepTakenOver(t *testing.T) {
	h := newStepH(t)
	h.addResource("g", 1, "gpu")
	ref := h.running("a")
	h.lease(ref, "1", "gpu")
	h.now += 600_001
	h.must(&engine.Reclaim{Max: 10})
	c := h.must(&engine.Claim{Queue: "q-a", Owner: "w2", Max: 1, LeaseMS: 600_000}).(*engine.ClaimResult).Jobs[0]
	ref2 := c.Lease()
	r := h.lease(ref2, "1", "gpu")
	if r.State != engine.StepLeased || r.StepAttempt != 2 || r.Resource != "g" {
		t.Fatalf("taken over: %+v", r)
	}
	want := []engine.EventType{engine.EventStepLeased, engine.EventStepLeaseTimeout, engine.EventStepLeased}
	if got := h.stepEvents(ref.Job, "1"); !slices.Equal(got, want) {
		t.Fatalf("events %v", got)
	}
	h.verify()
}

// Drained resources finish their leases and take no new ones; a busy one
// cannot be removed; undraining or adding a resource serves the queue.
func TestResourceDrainRemove(t *testing.T) {
	h := newStepH(t)
	h.addResource("b1", 1, "browser")
	a, b := h.running("a"), h.running("b")
	h.lease(a, "1", "browser")
	h.must(&engine.DrainResource{ID: "b1"})
	h.mustFail(&engine.RemoveResource{ID: "b1"}, engine.ErrResourceBusy)
	if _, err := h.apply(&engine.LeaseStep{LeaseRef: b, Step: "1", Name: "Fetch", LeaseMS: 1000, Capabilities: []string{"browser"}}); !errors.Is(err, engine.ErrNoResource) {
		t.Fatalf("lease of a drained pool: %v", err)
	}
	h.must(&engine.CommitStep{LeaseRef: a, Step: "1", Type: engine.EventActivityCompleted, StepAttempt: 1})
	if rs := h.resource("b1"); len(rs.Holders) != 0 || !rs.Drained {
		t.Fatalf("b1 %+v", rs)
	}
	h.must(&engine.RemoveResource{ID: "b1"})
	h.mustFail(&engine.RemoveResource{ID: "b1"}, engine.ErrUnknownResource)
	h.addResource("b2", 1, "browser")
	h.mustFail(&engine.AddResource{ID: "b2", Capacity: 1}, engine.ErrResourceExists)
	c := h.running("c")
	h.lease(b, "1", "browser")
	h.lease(c, "1", "browser") // waits for b's unit
	h.must(&engine.AddResource{ID: "b3", Capabilities: []string{"browser", "js"}, Capacity: 3})
	if r := h.rec(c.Job, "1"); r.State != engine.StepLeased || r.Resource != "b3" {
		t.Fatalf("c after b3 was added: %+v", r)
	}
	h.verify()
}

// Engine-owned step events cannot be appended by a worker, and a step with
// a record records its tries through EndStepAttempt only: a failed try
// recorded the straight way is a try that is not the step's live one.
func TestStepEventsAreTheEngines(t *testing.T) {
	h := newStepH(t)
	ref := h.running("a")
	for _, typ := range []engine.EventType{engine.EventStepLeased, engine.EventStepStarted, engine.EventStepLeaseTimeout, engine.EventStepResourceFailed,
		engine.EventStepNeedsUser, engine.EventStepAnswered, engine.EventStepWaitingDeps,
		engine.EventActivityPaused, engine.EventActivityUnpaused, engine.EventActivityReset, engine.EventActivityOptionsUpdated,
		engine.EventWorkflowPaused, engine.EventWorkflowUnpaused} {
		h.mustFail(&engine.AppendEvents{LeaseRef: ref, Events: []engine.NewEvent{{Type: typ, Step: "1"}}}, engine.ErrInvalidCommand)
		h.mustFail(&engine.CommitStep{LeaseRef: ref, Step: "1", Type: typ}, engine.ErrInvalidCommand)
	}
	h.lease(ref, "1")
	h.mustFail(&engine.AppendEvents{LeaseRef: ref, Events: []engine.NewEvent{{Type: engine.EventActivityAttemptFailed, Step: "1"}}}, engine.ErrStaleAttempt)
	h.mustFail(&engine.AppendEvents{LeaseRef: ref, Events: []engine.NewEvent{{Type: engine.EventActivityCompleted, Step: "1"}}}, engine.ErrInvalidCommand)
	h.must(&engine.AppendEvents{LeaseRef: ref, Events: []engine.NewEvent{{Type: engine.EventActivityAttemptFailed, Step: "2", StepAttempt: 1}}})
	h.verify()
}

// A commit that fails a step where it waits
// (ReasonNotStarted) skipped the check on which try writes. It was taken
// from an older try, from a try never leased, from one a person's answer
// replaced, and while another try ran; the older try's left a history
// Verify calls broken. It is fenced like every other step commit now: only
// while the step waits, and only from its newest try (or none: the engine
// numbers it).
func TestNotStartedCommitIsFencedByTheTry(t *testing.T) {
	notStarted := func(ref engine.LeaseRef, try uint32) *engine.CommitStep {
		return &engine.CommitStep{LeaseRef: ref, Step: "1", Type: engine.EventActivityFailed, Failed: true, Reason: engine.ReasonNotStarted, StepAttempt: try}
	}
	refused := func(t *testing.T, h stepH, cmd *engine.CommitStep, why string) {
		t.Helper()
		before := h.snapshot()
		_, err := h.apply(cmd)
		var se *engine.StaleStepError
		if !errors.As(err, &se) || !errors.Is(err, engine.ErrStaleAttempt) {
			t.Fatalf("%s: not_started commit by try %d: %v, want a stale try", why, cmd.StepAttempt, err)
		}
		sameStore(t, before, h.snapshot())
		h.verify()
	}
	retried := func(h stepH, ref engine.LeaseRef) {
		h.must(&engine.LeaseStep{LeaseRef: ref, Step: "1", Name: "Fetch", LeaseMS: 10_000, Start: true})
		h.must(&engine.EndStepAttempt{LeaseRef: ref, Step: "1", Name: "Fetch", StepAttempt: 1, Outcome: engine.OutcomeRetry})
	}

	t.Run("an older try while the newest runs", func(t *testing.T) {
		h := newStepH(t)
		ref := h.running("wf")
		retried(h, ref)
		if r := h.must(&engine.LeaseStep{LeaseRef: ref, Step: "1", Name: "Fetch", LeaseMS: 10_000, Start: true}).(*engine.StepResult); r.StepAttempt != 2 {
			t.Fatalf("second try %+v", r)
		}
		refused(t, h, notStarted(ref, 1), "older try")
		refused(t, h, notStarted(ref, 0), "while a try runs")
		refused(t, h, notStarted(ref, 2), "the running try")
	})
	t.Run("a try never leased", func(t *testing.T) {
		h := newStepH(t)
		ref := h.running("wf")
		retried(h, ref) // RETRYING after try 1
		refused(t, h, notStarted(ref, 2), "try 2, never leased")
		refused(t, h, notStarted(ref, 9), "try 9, never leased")
	})
	t.Run("the try a person's answer replaced", func(t *testing.T) {
		h := newStepH(t)
		ref := h.running("wf")
		h.must(&engine.LeaseStep{LeaseRef: ref, Step: "1", Name: "Fetch", LeaseMS: 10_000, Start: true})
		h.must(&engine.EndStepAttempt{LeaseRef: ref, Step: "1", Name: "Fetch", StepAttempt: 1, Outcome: engine.OutcomeNeedsUser, Payload: []byte(`"which?"`)})
		h.must(&engine.AnswerStep{Target: engine.Target{Job: ref.Job}, Step: "1", Answer: []byte(`"that"`)})
		refused(t, h, notStarted(ref, 1), "the answered try")
	})
	t.Run("the newest try of a waiting step", func(t *testing.T) {
		for _, try := range []uint32{0, 1} {
			h := newStepH(t)
			ref := h.running("wf")
			retried(h, ref)
			h.must(notStarted(ref, try))
			if p := engine.DeriveStepState(h.history(ref.Job)); p.State != engine.StepFailed || p.Attempt != 1 {
				t.Fatalf("try %d: step %+v, want FAILED at try 1", try, p)
			}
			h.verify()
		}
	})
}

// Two steps that depend on each other (A on B, B on A)
// were both accepted and waited for ever. The lease that closes a cycle is
// refused, naming it, and writes nothing; longer cycles too.
func TestDependencyCycleIsRefused(t *testing.T) {
	h := newStepH(t)
	ref := h.running("wf")
	lease := func(step string, deps ...string) (engine.Result, error) {
		return h.apply(&engine.LeaseStep{LeaseRef: ref, Step: step, Name: "Fetch", LeaseMS: 10_000, DependsOn: deps})
	}
	for _, s := range []struct {
		step string
		deps []string
	}{{"a", []string{"b"}}, {"c", []string{"d"}}, {"d", []string{"e"}}} {
		r, err := lease(s.step, s.deps...)
		if err != nil || r.(*engine.StepResult).State != engine.StepWaitingDeps {
			t.Fatalf("lease %s on %v: %+v %v", s.step, s.deps, r, err)
		}
	}
	for _, tc := range []struct {
		step  string
		deps  []string
		cycle string
	}{
		{"b", []string{"a"}, "b → a → b"},
		{"e", []string{"x", "c"}, "e → c → d → e"},
	} {
		before := h.snapshot()
		_, err := lease(tc.step, tc.deps...)
		var ce *engine.DependencyCycleError
		if !errors.As(err, &ce) || !errors.Is(err, engine.ErrDependencyFailed) || !strings.Contains(err.Error(), tc.cycle) {
			t.Fatalf("lease %s on %v: %v, want the cycle %s refused", tc.step, tc.deps, err, tc.cycle)
		}
		sameStore(t, before, h.snapshot())
	}
	// A step that depends on the waiting ones without closing a cycle is
	// leased as before.
	if r, err := lease("f", "a", "c"); err != nil || r.(*engine.StepResult).State != engine.StepWaitingDeps {
		t.Fatalf("lease f: %+v %v", r, err)
	}
	h.verify()
}
