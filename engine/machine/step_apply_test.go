package engine

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/storage"
)

// stepH is a harness with step helpers.
type stepH struct{ *harness }

func newStepH(t *testing.T) stepH { return stepH{newHarness(t)} }

// running creates a job on its own queue and claims it.
func (h stepH) running(wf string) LeaseRef {
	h.t.Helper()
	id := h.must(&CreateJob{WorkflowID: wf, Type: "order", Queue: "q-" + wf}).(*CreateResult).Job
	c := h.must(&Claim{Queue: "q-" + wf, Owner: "w-" + wf, Max: 1, LeaseMS: 600_000}).(*ClaimResult)
	if len(c.Jobs) != 1 || c.Jobs[0].Job != id {
		h.t.Fatalf("claim of %s: %+v", wf, c.Jobs)
	}
	return LeaseRef{Job: id, Attempt: c.Jobs[0].Attempt}
}

func (h stepH) lease(ref LeaseRef, step string, caps ...string) *StepResult {
	h.t.Helper()
	return h.must(&LeaseStep{LeaseRef: ref, Step: step, Name: "Fetch", LeaseMS: 10_000, Capabilities: caps}).(*StepResult)
}

func (h stepH) rec(id JobID, step string) *StepRecord {
	h.t.Helper()
	var r *StepRecord
	viewOK(h.t, h.db, func(rd *storage.Reader) error {
		var err error
		r, err = readStep(rd.Get, id, step)
		return err
	})
	if r == nil {
		h.t.Fatalf("step %q of job %d has no record", step, id)
	}
	return r
}

func (h stepH) resource(id string) *Resource {
	h.t.Helper()
	var r *Resource
	viewOK(h.t, h.db, func(rd *storage.Reader) error {
		var err error
		r, err = readResource(rd.Get, id)
		return err
	})
	return r
}

func (h stepH) stepEvents(id JobID, step string) []EventType {
	var out []EventType
	for _, ev := range h.history(id) {
		if ev.Step == step && IsStepEvent(ev.Type) {
			out = append(out, ev.Type)
		}
	}
	return out
}

func (h stepH) addResource(id string, capacity int, caps ...string) {
	h.t.Helper()
	h.must(&AddResource{ID: id, Capabilities: caps, Capacity: capacity})
}

func wantState(t *testing.T, r *StepResult, state StepState, granted bool, resource string) {
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
	wantState(t, r, StepLeased, true, "")
	if r.StepAttempt != 1 || r.StepLeaseExpiryMS != h.now+10_000 {
		t.Fatalf("lease: try %d until %d", r.StepAttempt, r.StepLeaseExpiryMS)
	}
	h.now += 100
	hb := h.must(&StepHeartbeat{LeaseRef: ref, Step: "1", StepAttempt: 1, LeaseMS: 600_000}).(*StepResult)
	if hb.State != StepRunning || hb.LeaseExpiryMS != h.now+600_000 {
		t.Fatalf("heartbeat: %+v", hb)
	}
	h.must(&StepHeartbeat{LeaseRef: ref, Step: "1", StepAttempt: 1, LeaseMS: 600_000})
	if got := h.rec(ref.Job, "1"); got.LastHeartbeatMS != h.now || got.Owner != "w-a" {
		t.Fatalf("record after heartbeats: %+v", got)
	}
	h.must(&CommitStep{LeaseRef: ref, Step: "1", Type: EventActivityCompleted, StepAttempt: 1, Decision: DecisionAccept})
	if got := h.rec(ref.Job, "1"); got.State != StepSucceeded || len(h.job(ref.Job).LiveSteps) != 0 {
		t.Fatalf("after commit: %+v, live %v", got, h.job(ref.Job).LiveSteps)
	}
	want := []EventType{EventStepLeased, EventStepStarted, EventActivityCompleted}
	if got := h.stepEvents(ref.Job, "1"); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	h.mustFail(&LeaseStep{LeaseRef: ref, Step: "1", Name: "Fetch", LeaseMS: 1000}, ErrStepCommitted)
	h.verify()
}

// Capacity is never exceeded: the third step waits, and is leased the unit
// the first one frees, in the same command, ahead of a later request.
func TestStepResourceFIFO(t *testing.T) {
	h := newStepH(t)
	h.addResource("b1", 2, "browser")
	a, b, c := h.running("a"), h.running("b"), h.running("c")
	wantState(t, h.lease(a, "1", "browser"), StepLeased, true, "b1")
	wantState(t, h.lease(b, "1", "browser"), StepLeased, true, "b1")
	wantState(t, h.lease(c, "1", "browser"), StepPending, false, "")
	if r := h.rec(c.Job, "1"); r.WaiterSeq == 0 {
		t.Fatal("the third step is not queued")
	}
	d := h.running("d")
	if r := h.lease(d, "1", "browser"); !r.Queued {
		t.Fatalf("a later request jumped the queue: %+v", r)
	}
	h.verify()
	// a's try fails and will be retried: its unit goes to c, not d.
	h.must(&EndStepAttempt{LeaseRef: a, Step: "1", Name: "Fetch", StepAttempt: 1, Outcome: OutcomeRetry, Payload: []byte(`{}`)})
	if r := h.rec(c.Job, "1"); r.State != StepLeased || r.Resource != "b1" || r.JobAttempt != 0 {
		t.Fatalf("c after a's release: %+v", r)
	}
	if r := h.rec(d.Job, "1"); r.WaiterSeq == 0 {
		t.Fatal("d was served before c")
	}
	// c's job adopts the lease the engine granted.
	wantState(t, h.lease(c, "1", "browser"), StepLeased, true, "b1")
	if r := h.rec(c.Job, "1"); r.JobAttempt != c.Attempt {
		t.Fatalf("c's lease not adopted: %+v", r)
	}
	// a asks again for its retry and queues behind d.
	if r := h.lease(a, "1", "browser"); !r.Queued || r.State != StepRetrying {
		t.Fatalf("a's retry: %+v", r)
	}
	if rs := h.resource("b1"); len(rs.Holders) != 2 {
		t.Fatalf("b1 holds %d units", len(rs.Holders))
	}
	h.verify()
	// b's job ends: its unit goes to d, then c's commit frees one for a.
	h.must(&Complete{LeaseRef: b})
	if r := h.rec(d.Job, "1"); r.State != StepLeased {
		t.Fatalf("d after b's job ended: %+v", r)
	}
	h.must(&CommitStep{LeaseRef: c, Step: "1", Type: EventActivityCompleted, StepAttempt: 1})
	if r := h.rec(a.Job, "1"); r.State != StepRunning || r.Attempt != 2 || r.Resource != "b1" {
		t.Fatalf("a's retry after c's commit: %+v", r)
	}
	h.verify()
}

// A resource error puts the resource on the step's avoid-list, and the
// step is leased another; with none left, LeaseStep names what it needs.
func TestStepSwitchResource(t *testing.T) {
	h := newStepH(t)
	h.must(&AddResource{ID: "b1", Capabilities: []string{"browser"}, Labels: map[string]string{"region": "eu"}, Capacity: 5})
	h.must(&AddResource{ID: "b2", Capabilities: []string{"browser"}, Labels: map[string]string{"region": "eu"}, Capacity: 1})
	h.must(&AddResource{ID: "b3", Capabilities: []string{"browser"}, Labels: map[string]string{"region": "us"}, Capacity: 9})
	ref := h.running("a")
	lease := &LeaseStep{LeaseRef: ref, Step: "1", Name: "Fetch", LeaseMS: 10_000, Capabilities: []string{"browser"},
		Selector: map[string]string{"region": "eu"}}
	wantState(t, h.must(lease).(*StepResult), StepLeased, true, "b1") // the most free units
	h.must(&EndStepAttempt{LeaseRef: ref, Step: "1", Name: "Fetch", StepAttempt: 1, Outcome: OutcomeSwitchResource, Decision: DecisionSwitchResource})
	if r := h.rec(ref.Job, "1"); r.State != StepSwitchingResource || !slices.Equal(r.Avoid, []string{"b1"}) || r.Resource != "" {
		t.Fatalf("after the resource failed: %+v", r)
	}
	r := h.must(lease).(*StepResult)
	wantState(t, r, StepLeased, true, "b2")
	if r.StepAttempt != 2 || r.Labels["region"] != "eu" {
		t.Fatalf("second lease: %+v", r)
	}
	h.must(&EndStepAttempt{LeaseRef: ref, Step: "1", Name: "Fetch", StepAttempt: 2, Outcome: OutcomeSwitchResource})
	_, err := h.apply(lease)
	var nr *NoResourceError
	if !errors.As(err, &nr) || !slices.Equal(nr.Avoid, []string{"b1", "b2"}) || nr.Selector["region"] != "eu" {
		t.Fatalf("third lease: %v", err)
	}
	for _, want := range []string{"browser", "region=eu", "b1", "b2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not name %s", err, want)
		}
	}
	h.must(&CommitStep{LeaseRef: ref, Step: "1", Type: EventActivityFailed, Failed: true, Reason: ReasonNotStarted})
	want := []StepState{StepPending, StepLeased, StepRunning, StepFailedResource, StepSwitchingResource, StepLeased,
		StepRunning, StepFailedResource, StepSwitchingResource, StepFailedFatal, StepFailed}
	if p := DeriveStepState(h.history(ref.Job)); !slices.Equal(p.Path, want) {
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
	h.must(&StepHeartbeat{LeaseRef: ref, Step: "1", StepAttempt: 1, LeaseMS: 600_000})
	h.now += 11_000
	res := h.must(&ExpireSteps{Max: 10}).(*SweepResult)
	if len(res.Jobs) != 1 {
		t.Fatalf("expire: %+v", res)
	}
	if r := h.rec(ref.Job, "1"); r.State != StepRetrying || r.Resource != "" {
		t.Fatalf("after the running step's lease ran out: %+v", r)
	}
	wantState(t, h.lease(ref, "1", "browser"), StepRunning, true, "b1") // the retry's start
	for _, c := range []Command{
		&StepHeartbeat{LeaseRef: ref, Step: "1", StepAttempt: 1, LeaseMS: 600_000},
		&EndStepAttempt{LeaseRef: ref, Step: "1", Name: "Fetch", StepAttempt: 1, Outcome: OutcomeRetry},
		&CommitStep{LeaseRef: ref, Step: "1", Type: EventActivityCompleted, StepAttempt: 1},
	} {
		_, err := h.apply(c)
		var se *StaleStepError
		if !errors.As(err, &se) || !errors.Is(err, ErrStaleAttempt) || se.Current != 2 {
			t.Fatalf("%s of try 1: %v", c.Kind(), err)
		}
	}
	if h.job(ref.Job).Status != StatusRunning {
		t.Fatal("the job lost its lease")
	}
	h.must(&CommitStep{LeaseRef: ref, Step: "1", Type: EventActivityCompleted, StepAttempt: 2})
	h.verify()
}

// A step without a record that heartbeats is noted on the job record; an
// older try's heartbeat or commit is refused.
func TestStepImplicitHeartbeat(t *testing.T) {
	h := newStepH(t)
	ref := h.running("a")
	h.must(&StepHeartbeat{LeaseRef: ref, Step: "3", StepAttempt: 2, LeaseMS: 600_000})
	if b := h.job(ref.Job).Beats; len(b) != 1 || b[0].StepAttempt != 2 || b[0].AtMS != h.now {
		t.Fatalf("beats %+v", b)
	}
	h.mustFail(&StepHeartbeat{LeaseRef: ref, Step: "3", StepAttempt: 1, LeaseMS: 600_000}, ErrStaleAttempt)
	h.mustFail(&CommitStep{LeaseRef: ref, Step: "3", Type: EventActivityCompleted, StepAttempt: 1}, ErrStaleAttempt)
	h.must(&CommitStep{LeaseRef: ref, Step: "3", Type: EventActivityCompleted, StepAttempt: 2})
	if b := h.job(ref.Job).Beats; len(b) != 0 {
		t.Fatalf("beats after the commit: %+v", b)
	}
	h.mustFail(&StepHeartbeat{LeaseRef: ref, Step: "3", StepAttempt: 2, LeaseMS: 600_000}, ErrStaleAttempt)
	infos := h.steps(ref.Job)
	if len(infos) != 1 || infos[0].State != StepSucceeded || infos[0].Attempt != 2 {
		t.Fatalf("steps %+v", infos)
	}
	h.verify()
}

func (h stepH) steps(id JobID) []StepInfo {
	h.t.Helper()
	var out []StepInfo
	viewOK(h.t, h.db, func(r *storage.Reader) error {
		j, err := ReadJob(r, id)
		if err != nil {
			return err
		}
		hist, _, err := ReadHistory(r, id, 0, 0)
		if err != nil {
			return err
		}
		recs := map[string]*StepRecord{}
		err = r.Scan(storage.StepPrefix(uint64(id)), nil, true, func(k, v []byte) (bool, error) {
			s, err := DecodeStepRecord(v)
			if err == nil {
				recs[s.Step] = s
			}
			return err == nil, err
		})
		out = StepInfos(j, hist, recs)
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
	h.mustFail(&AnswerStep{Target: Target{WorkflowID: "a"}, Step: "1", Answer: []byte("x")}, ErrStepState)
	h.must(&EndStepAttempt{LeaseRef: ref, Step: "1", Name: "Fetch", StepAttempt: 1, Outcome: OutcomeNeedsUser,
		Payload: []byte(`"enter the code"`), Decision: DecisionNeedsUser})
	r := h.rec(ref.Job, "1")
	if r.State != StepNeedsUser || r.Resource != "p1" || r.LeaseExpiryMS != 0 || string(r.Question) != `"enter the code"` {
		t.Fatalf("needs user: %+v", r)
	}
	h.must(&Wait{LeaseRef: ref, Spec: WaitSpec{Steps: []string{"1"}, Park: true}, SeenSeq: h.job(ref.Job).LastSeq})
	if s := h.job(ref.Job).Status; s != StatusParked {
		t.Fatalf("job %s", s)
	}
	h.now += 3_600_000
	h.must(&ExpireSteps{Max: 10}) // no timeout: nothing happens
	if h.rec(ref.Job, "1").State != StepNeedsUser {
		t.Fatal("the question timed out without a timeout")
	}
	res := h.must(&AnswerStep{Target: Target{WorkflowID: "a"}, Step: "1", Answer: []byte(`"4711"`)}).(*StepResult)
	if res.State != StepRunning || res.StepAttempt != 2 {
		t.Fatalf("answer: %+v", res)
	}
	if s := h.job(ref.Job).Status; s != StatusQueued {
		t.Fatalf("job %s after the answer", s)
	}
	if rs := h.resource("p1"); len(rs.Holders) != 1 || rs.Holders[0].StepAttempt != 2 {
		t.Fatalf("p1 holders %+v", rs.Holders)
	}
	c := h.must(&Claim{Queue: "q-a", Owner: "w2", Max: 1, LeaseMS: 600_000}).(*ClaimResult).Jobs[0]
	ref2 := c.Lease()
	wantState(t, h.lease(ref2, "1", "phone"), StepRunning, true, "p1")
	h.must(&CommitStep{LeaseRef: ref2, Step: "1", Type: EventActivityCompleted, StepAttempt: 2})
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
	h.must(&EndStepAttempt{LeaseRef: ref, Step: "4", Name: "Confirm", StepAttempt: 1, Outcome: OutcomeNeedsUser,
		Payload: []byte(`"confirm?"`), AnswerTimeoutMS: 5_000})
	h.now += 4_999
	h.must(&ExpireSteps{Max: 10})
	h.now++
	h.must(&ExpireSteps{Max: 10})
	var answered *Event
	for _, ev := range h.history(ref.Job) {
		if ev.Type == EventStepAnswered {
			answered = &ev
		}
	}
	if answered == nil || answered.Reason != ReasonAnswerTimeout || answered.Payload != nil || answered.StepAttempt != 2 {
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
	dep := &LeaseStep{LeaseRef: ref, Step: "3", Name: "Merge", LeaseMS: 10_000, DependsOn: []string{"1", "2"}}
	r := h.must(dep).(*StepResult)
	if r.State != StepWaitingDeps || !r.WaitingDeps || r.Granted {
		t.Fatalf("lease before its dependencies: %+v", r)
	}
	h.must(&CommitStep{LeaseRef: ref, Step: "1", Type: EventActivityCompleted, StepAttempt: 1})
	if h.rec(ref.Job, "3").State != StepWaitingDeps {
		t.Fatal("leased after one of two dependencies")
	}
	cs := h.must(&CommitStep{LeaseRef: ref, Step: "2", Type: EventActivityCompleted, StepAttempt: 1}).(*AppendResult)
	if cs.LastSeq != cs.FirstSeq+1 {
		t.Fatalf("the commit leading to a lease reports seqs %d..%d", cs.FirstSeq, cs.LastSeq)
	}
	if got := h.rec(ref.Job, "3"); got.State != StepLeased || got.JobAttempt != 0 {
		t.Fatalf("after its dependencies: %+v", got)
	}
	wantState(t, h.must(dep).(*StepResult), StepLeased, true, "")
	// A failed dependency.
	h.must(&CommitStep{LeaseRef: ref, Step: "5", Type: EventActivityFailed, Failed: true, StepAttempt: 1})
	h.mustFail(&LeaseStep{LeaseRef: ref, Step: "6", Name: "Merge", LeaseMS: 10_000, DependsOn: []string{"5"}}, ErrDependencyFailed)
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
	h.must(&Cancel{Target: Target{Job: b.Job}})
	h.must(&Terminate{Target: Target{Job: a.Job}})
	if r := h.rec(c.Job, "1"); r.State != StepLeased || r.Resource != "g" {
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
	h.must(&Reclaim{Max: 10})
	c := h.must(&Claim{Queue: "q-a", Owner: "w2", Max: 1, LeaseMS: 600_000}).(*ClaimResult).Jobs[0]
	ref2 := c.Lease()
	r := h.lease(ref2, "1", "gpu")
	if r.State != StepLeased || r.StepAttempt != 2 || r.Resource != "g" {
		t.Fatalf("taken over: %+v", r)
	}
	want := []EventType{EventStepLeased, EventStepLeaseTimeout, EventStepLeased}
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
	h.must(&DrainResource{ID: "b1"})
	h.mustFail(&RemoveResource{ID: "b1"}, ErrResourceBusy)
	if _, err := h.apply(&LeaseStep{LeaseRef: b, Step: "1", Name: "Fetch", LeaseMS: 1000, Capabilities: []string{"browser"}}); !errors.Is(err, ErrNoResource) {
		t.Fatalf("lease of a drained pool: %v", err)
	}
	h.must(&CommitStep{LeaseRef: a, Step: "1", Type: EventActivityCompleted, StepAttempt: 1})
	if rs := h.resource("b1"); len(rs.Holders) != 0 || !rs.Drained {
		t.Fatalf("b1 %+v", rs)
	}
	h.must(&RemoveResource{ID: "b1"})
	h.mustFail(&RemoveResource{ID: "b1"}, ErrUnknownResource)
	h.addResource("b2", 1, "browser")
	h.mustFail(&AddResource{ID: "b2", Capacity: 1}, ErrResourceExists)
	c := h.running("c")
	h.lease(b, "1", "browser")
	h.lease(c, "1", "browser") // waits for b's unit
	h.must(&AddResource{ID: "b3", Capabilities: []string{"browser", "js"}, Capacity: 3})
	if r := h.rec(c.Job, "1"); r.State != StepLeased || r.Resource != "b3" {
		t.Fatalf("c after b3 was added: %+v", r)
	}
	h.verify()
}

// Engine-owned step events cannot be appended by a worker, and a step with
// a record records its tries through EndStepAttempt only.
func TestStepEventsAreTheEngines(t *testing.T) {
	h := newStepH(t)
	ref := h.running("a")
	for _, typ := range []EventType{EventStepLeased, EventStepStarted, EventStepLeaseTimeout, EventStepResourceFailed,
		EventStepNeedsUser, EventStepAnswered, EventStepWaitingDeps} {
		h.mustFail(&AppendEvents{LeaseRef: ref, Events: []NewEvent{{Type: typ, Step: "1"}}}, ErrInvalidCommand)
		h.mustFail(&CommitStep{LeaseRef: ref, Step: "1", Type: typ}, ErrInvalidCommand)
	}
	h.lease(ref, "1")
	h.mustFail(&AppendEvents{LeaseRef: ref, Events: []NewEvent{{Type: EventActivityAttemptFailed, Step: "1"}}}, ErrInvalidCommand)
	h.must(&AppendEvents{LeaseRef: ref, Events: []NewEvent{{Type: EventActivityAttemptFailed, Step: "2", StepAttempt: 1}}})
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
	notStarted := func(ref LeaseRef, try uint32) *CommitStep {
		return &CommitStep{LeaseRef: ref, Step: "1", Type: EventActivityFailed, Failed: true, Reason: ReasonNotStarted, StepAttempt: try}
	}
	refused := func(t *testing.T, h stepH, cmd *CommitStep, why string) {
		t.Helper()
		before := h.snapshot()
		_, err := h.apply(cmd)
		var se *StaleStepError
		if !errors.As(err, &se) || !errors.Is(err, ErrStaleAttempt) {
			t.Fatalf("%s: not_started commit by try %d: %v, want a stale try", why, cmd.StepAttempt, err)
		}
		sameStore(t, before, h.snapshot())
		h.verify()
	}
	retried := func(h stepH, ref LeaseRef) {
		h.must(&LeaseStep{LeaseRef: ref, Step: "1", Name: "Fetch", LeaseMS: 10_000, Start: true})
		h.must(&EndStepAttempt{LeaseRef: ref, Step: "1", Name: "Fetch", StepAttempt: 1, Outcome: OutcomeRetry})
	}

	t.Run("an older try while the newest runs", func(t *testing.T) {
		h := newStepH(t)
		ref := h.running("wf")
		retried(h, ref)
		if r := h.must(&LeaseStep{LeaseRef: ref, Step: "1", Name: "Fetch", LeaseMS: 10_000, Start: true}).(*StepResult); r.StepAttempt != 2 {
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
		h.must(&LeaseStep{LeaseRef: ref, Step: "1", Name: "Fetch", LeaseMS: 10_000, Start: true})
		h.must(&EndStepAttempt{LeaseRef: ref, Step: "1", Name: "Fetch", StepAttempt: 1, Outcome: OutcomeNeedsUser, Payload: []byte(`"which?"`)})
		h.must(&AnswerStep{Target: Target{Job: ref.Job}, Step: "1", Answer: []byte(`"that"`)})
		refused(t, h, notStarted(ref, 1), "the answered try")
	})
	t.Run("the newest try of a waiting step", func(t *testing.T) {
		for _, try := range []uint32{0, 1} {
			h := newStepH(t)
			ref := h.running("wf")
			retried(h, ref)
			h.must(notStarted(ref, try))
			if p := DeriveStepState(h.history(ref.Job)); p.State != StepFailed || p.Attempt != 1 {
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
	lease := func(step string, deps ...string) (Result, error) {
		return h.apply(&LeaseStep{LeaseRef: ref, Step: step, Name: "Fetch", LeaseMS: 10_000, DependsOn: deps})
	}
	for _, s := range []struct {
		step string
		deps []string
	}{{"a", []string{"b"}}, {"c", []string{"d"}}, {"d", []string{"e"}}} {
		r, err := lease(s.step, s.deps...)
		if err != nil || r.(*StepResult).State != StepWaitingDeps {
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
		var ce *DependencyCycleError
		if !errors.As(err, &ce) || !errors.Is(err, ErrDependencyFailed) || !strings.Contains(err.Error(), tc.cycle) {
			t.Fatalf("lease %s on %v: %v, want the cycle %s refused", tc.step, tc.deps, err, tc.cycle)
		}
		sameStore(t, before, h.snapshot())
	}
	// A step that depends on the waiting ones without closing a cycle is
	// leased as before.
	if r, err := lease("f", "a", "c"); err != nil || r.(*StepResult).State != StepWaitingDeps {
		t.Fatalf("lease f: %+v %v", r, err)
	}
	h.verify()
}
