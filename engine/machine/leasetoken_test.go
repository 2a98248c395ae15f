package engine

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/storage"
)

// claimTokened claims one job of queue as the Engine does: with a fresh
// nonce, so the lease has a token.
func (h *harness) claimTokened(queue string) ClaimedJob {
	h.t.Helper()
	c := &Claim{Queue: queue, Owner: "holder", Max: 1, LeaseMS: 60_000}
	stampNonce(c)
	r := h.must(c).(*ClaimResult)
	if len(r.Jobs) != 1 {
		h.t.Fatalf("claim of %s got %d jobs, want 1", queue, len(r.Jobs))
	}
	if r.Jobs[0].LeaseToken == "" {
		h.t.Fatalf("a claim with a nonce gave no lease token: %+v", r.Jobs[0])
	}
	return r.Jobs[0]
}

// The attempt is public; the lease token is not. Every fenced write of a
// job carries its lease's token: a write that names the live attempt
// without it (any other worker that read the attempt from describe or the
// history) is refused as stale and writes nothing, and one with it is
// taken.
func TestLeaseTokenFencesEveryWrite(t *testing.T) {
	h := newHarness(t)
	id := h.create("wf")
	c := h.claimTokened("q")
	if ev := h.lastEvent(id); ev.Type != EventJobLeased || !ev.TokenIssued {
		t.Fatalf("the claim's event %+v does not say it issued a token", ev)
	}
	holder := c.Lease()
	for _, forged := range []LeaseRef{
		{Job: id, Attempt: c.Attempt},
		{Job: id, Attempt: c.Attempt, Token: "0123456789abcdef0123456789abcdef"},
		{Job: id, Attempt: c.Attempt, Token: c.LeaseToken[:31]},
		{Job: id, Attempt: c.Attempt, Token: strings.ToUpper(c.LeaseToken)},
	} {
		for _, cmd := range []Command{
			&AppendEvents{LeaseRef: forged, Events: []NewEvent{{Type: "marker", Name: "m"}}},
			&CommitStep{LeaseRef: forged, Step: "1", Type: "activity_completed", Payload: []byte("forged")},
			&Wait{LeaseRef: forged, Spec: WaitSpec{Signals: []string{"s"}}, SeenSeq: c.LastSeq},
			&Complete{LeaseRef: forged, Result: []byte("forged")},
			&Fail{LeaseRef: forged},
			&Requeue{LeaseRef: forged},
			&ContinueAsNew{LeaseRef: forged},
			&LeaseStep{LeaseRef: forged, Step: "2", Name: "a", LeaseMS: 1000},
			&StepHeartbeat{LeaseRef: forged, Step: "2", StepAttempt: 1, LeaseMS: 1000},
			&EndStepAttempt{LeaseRef: forged, Step: "2", Name: "a", StepAttempt: 1, Outcome: OutcomeRetry},
			&Terminate{Target: Target{WorkflowID: "wf"}, ByParent: &forged},
		} {
			before := h.snapshot()
			_, err := h.apply(cmd)
			var se *StaleAttemptError
			if !errors.As(err, &se) || !se.WrongToken || !errors.Is(err, ErrStaleAttempt) {
				t.Fatalf("%s with token %q: %v, want a stale attempt without the lease token", cmd.Kind(), forged.Token, err)
			}
			if strings.Contains(err.Error(), c.LeaseToken) {
				t.Fatalf("the refusal shows the lease token: %v", err)
			}
			sameStore(t, before, h.snapshot())
		}
		hb := h.must(&Heartbeat{Leases: []LeaseRef{forged}, LeaseMS: 120_000}).(*HeartbeatResult)
		if len(hb.Refused) != 1 || hb.Refused[0].Code != StaleAttemptCode || hb.Refused[0].Token != "" {
			t.Fatalf("heartbeat with token %q: %+v, want refused (without echoing the token)", forged.Token, hb)
		}
	}
	if j := h.job(id); j.LeaseExpiryMS != c.LeaseExpiryMS {
		t.Fatalf("a refused heartbeat moved the lease to %d", j.LeaseExpiryMS)
	}
	h.must(&Heartbeat{Leases: []LeaseRef{holder}, LeaseMS: 120_000})
	h.must(&AppendEvents{LeaseRef: holder, Events: []NewEvent{{Type: "marker", Name: "m"}}})
	h.must(&Complete{LeaseRef: holder, Result: []byte("done")})
	if j := h.job(id); j.Status != StatusCompleted || len(j.LeaseDigest) != 0 {
		t.Fatalf("completed record %+v keeps a lease digest", j)
	}
	h.verify()
}

// The job record keeps only the token's digest, and nothing a reader gets
// (the record, its JSON, the history) holds the token.
func TestLeaseTokenIsNotReadable(t *testing.T) {
	h := newHarness(t)
	id := h.create("wf")
	c := h.claimTokened("q")
	j := h.job(id)
	if len(j.LeaseDigest) == 0 || strings.Contains(string(j.LeaseDigest), c.LeaseToken) {
		t.Fatalf("record's digest %x for token %s", j.LeaseDigest, c.LeaseToken)
	}
	js, _ := json.Marshal(j)
	hist, _ := json.Marshal(h.history(id))
	for what, b := range map[string][]byte{"record JSON": js, "history JSON": hist, "record": EncodeJob(j)} {
		if strings.Contains(string(b), c.LeaseToken) {
			t.Fatalf("the %s holds the lease token: %s", what, b)
		}
	}
}

// The Engine, not the caller, picks the nonce a claim's tokens come from:
// a caller that sent its own would otherwise compute every token.
func TestEngineChoosesTheClaimNonce(t *testing.T) {
	e, err := Open(Config{InMemory: true, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	chosen := []byte("0123456789abcdef")
	tokens := map[string]bool{}
	for i := range 3 {
		r, err := e.Create(bg, CreateJob{Type: "t", Queue: "q"})
		if err != nil {
			t.Fatal(err)
		}
		jobs, err := e.Claim(bg, Claim{Header: Header{Nonce: chosen}, Queue: "q", Owner: "w", Max: 1, LeaseMS: 60_000})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("claim %d: %+v %v", i, jobs, err)
		}
		tok := jobs[0].LeaseToken
		if len(tok) != 32 || tok == leaseToken(chosen, "job", uint64(r.Job), 1) || tokens[tok] {
			t.Fatalf("claim %d: token %q (the caller's nonce would give %q)", i, tok, leaseToken(chosen, "job", uint64(r.Job), 1))
		}
		tokens[tok] = true
		if _, err := e.Complete(bg, Complete{LeaseRef: LeaseRef{Job: r.Job, Attempt: 1}}); !errors.Is(err, ErrStaleAttempt) {
			t.Fatalf("complete without the token: %v, want ErrStaleAttempt", err)
		}
		if _, err := e.Complete(bg, Complete{LeaseRef: jobs[0].Lease()}); err != nil {
			t.Fatal(err)
		}
	}
}

// A lease claimed without a nonce (from a log written before tokens, or a
// claim applied straight to Apply) has no token: its job_leased says so,
// it is fenced by its attempt alone, and a write carrying a token is
// refused, since no token was issued.
func TestLeaseWithoutTokenIsFencedByAttempt(t *testing.T) {
	h := newHarness(t)
	id := h.create("wf")
	c := h.claimOne(60_000)
	if c.LeaseToken != "" || h.lastEvent(id).TokenIssued || len(h.job(id).LeaseDigest) != 0 {
		t.Fatalf("a claim without a nonce issued a token: %+v", c)
	}
	h.mustFail(&AppendEvents{LeaseRef: LeaseRef{Job: id, Attempt: c.Attempt, Token: "x"}, Events: []NewEvent{{Type: "m"}}}, ErrStaleAttempt)
	h.must(&AppendEvents{LeaseRef: c.Lease(), Events: []NewEvent{{Type: "m"}}})
	h.verify()
}

// Verify holds the record's token digest to its claim: a Running record
// whose claim issued a token has its digest, and no other record has one.
func TestVerifyChecksLeaseTokenDigest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tamper func(j *Job)
	}{
		{"digest lost", func(j *Job) { j.LeaseDigest = nil }},
		{"digest on an ended job", func(j *Job) { j.Status, j.LeaseOwner, j.LeaseExpiryMS = StatusRunning, "", 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			id := h.create("wf")
			c := h.claimTokened("q")
			if tc.name == "digest on an ended job" {
				h.must(&Requeue{LeaseRef: c.Lease()})
				h.verify()
				j := h.job(id)
				j.LeaseDigest = leaseDigest("something")
				h.put(j)
			} else {
				j := h.job(id)
				tc.tamper(j)
				h.put(j)
			}
			var errs []error
			viewOK(t, h.db, func(r *storage.Reader) error { errs = Verify(r, 10); return nil })
			if len(errs) == 0 || !strings.Contains(errors.Join(errs...).Error(), "lease token digest") {
				t.Fatalf("Verify found %v, want the lease token digest", errs)
			}
		})
	}
}

// put overwrites a job record (a test's corruption).
func (h *harness) put(j *Job) {
	h.t.Helper()
	b := h.db.NewBatch()
	defer b.Discard()
	tx := b.Begin()
	tx.Set(storage.JobKey(uint64(j.ID)), EncodeJob(j))
	if err := b.Add(tx); err != nil {
		h.t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		h.t.Fatal(err)
	}
}

// A client could create a job naming another run as its
// parent, cancel it, and so write a failed result into the victim's step
// (and wake it); the step's real result was dropped later. A create
// naming a parent must now carry the parent's current lease.
func TestOnlyTheParentsHolderStartsItsChildren(t *testing.T) {
	h := newHarness(t)
	victim := h.create("victim")
	c := h.claimTokened("q")
	holder := c.Lease()
	h.must(&Wait{LeaseRef: holder, Spec: WaitSpec{Steps: []string{"1"}}, SeenSeq: c.LastSeq})
	// The victim is Waiting now; its next attempt will hold it.
	before := h.snapshot()
	for _, tc := range []struct {
		name  string
		lease *LeaseRef
		want  error
	}{
		{"no lease", nil, ErrInvalidCommand},
		{"the public attempt", &LeaseRef{Job: victim, Attempt: c.Attempt}, ErrStaleAttempt},
		{"the holder's lease, but the run waits", &holder, ErrStaleAttempt},
		{"another job's lease", &LeaseRef{Job: victim + 1, Attempt: 1}, ErrInvalidCommand},
	} {
		cmd := &CreateJob{WorkflowID: "evil-" + tc.name, Type: ActivityTypePrefix + "x", Queue: "evil",
			ParentID: victim, ParentStep: "1", ParentLease: tc.lease}
		stampNonce(cmd) // as the Engine does with every create it proposes
		_, err := h.apply(cmd)
		if !errors.Is(err, tc.want) {
			t.Fatalf("%s: %v, want %v", tc.name, err, tc.want)
		}
		sameStore(t, before, h.snapshot())
	}
	// The same goes for a review task: its end writes into a step too.
	for _, pl := range []*LeaseRef{nil, {Job: victim, Attempt: c.Attempt}} {
		cmd := &CreateTask{Job: "evil", Phase: "p", Queue: "evil", Type: "w", ParentJob: victim, ParentStep: "1", ParentLease: pl}
		stampNonce(cmd)
		if _, err := h.apply(cmd); pl == nil && !errors.Is(err, ErrInvalidCommand) || pl != nil && !errors.Is(err, ErrStaleAttempt) {
			t.Fatalf("task under another's run, lease %+v: %v", pl, err)
		}
	}
	_, err := h.apply(&CreateTask{Job: "evil", Phase: "p", Queue: "evil", Type: "w", ParentJob: victim, ParentStep: "1",
		ParentLease: &LeaseRef{Job: victim, Attempt: c.Attempt}})
	if !errors.Is(err, ErrStaleAttempt) {
		t.Fatalf("task under another's run: %v, want ErrStaleAttempt", err)
	}
	sameStore(t, before, h.snapshot())

	// The run's own worker starts its child, whose end is its step's.
	h.must(&Signal{Target: Target{Job: victim}, Name: "wake"}) // nothing waits for it
	h.must(&RequestCancel{Target: Target{Job: victim}})        // wakes it
	c2 := h.claimTokened("q")
	own := c2.Lease()
	child := h.must(&CreateJob{WorkflowID: "child", Type: "c", Queue: "cq", ParentID: victim, ParentStep: "1", ParentLease: &own}).(*CreateResult).Job
	h.must(&Cancel{Target: Target{Job: child}})
	if eff := h.effectOf(victim, "1"); eff == nil || !eff.Failed {
		t.Fatalf("the own child's cancellation gave effect %+v", eff)
	}
	h.verify()
}

// A retry of a child's create by a later attempt of its parent, under the
// same request id, gets the first answer: the parent lease is not part of
// the request's digest.
func TestChildCreateRetriedByALaterAttempt(t *testing.T) {
	h := newHarness(t)
	parent := h.create("p")
	c1 := h.claimTokened("q")
	l1 := c1.Lease()
	create := func(l *LeaseRef) (Result, error) {
		return h.apply(&CreateJob{Header: Header{RequestID: "heddle/1/3"}, WorkflowID: "p/1/3", Type: "c", Queue: "cq",
			ParentID: parent, ParentStep: "3", ParentLease: l})
	}
	first, err := create(&l1)
	if err != nil {
		t.Fatal(err)
	}
	h.must(&Requeue{LeaseRef: l1})
	c2 := h.claimTokened("q")
	l2 := c2.Lease()
	again, err := create(&l2)
	if err != nil || again.(*CreateResult).Job != first.(*CreateResult).Job {
		t.Fatalf("retry by attempt 2: %+v %v, want %+v", again, err, first)
	}
}

// An activity task parked for asynchronous completion is completed by its
// task token, which carries the parking attempt's lease token: the attempt
// alone (which anyone may read) is refused. A completion by id (Temporal's
// CompleteActivityByID) carries no token, by design.
func TestCompleteAsyncNeedsTheLeaseToken(t *testing.T) {
	for _, byID := range []bool{false, true} {
		h := newHarness(t)
		parent, pref := h.runningParent("wf")
		task := h.must(&CreateJob{WorkflowID: "wf/1/1", Type: ActivityTypePrefix + "Charge", Queue: "acts", ParentID: parent, ParentStep: "1", ParentLease: pref}).(*CreateResult).Job
		c := h.claimTokened("acts")
		h.must(&Wait{LeaseRef: c.Lease(), Spec: WaitSpec{Signals: []string{AsyncCompletionSignal}, Park: true}, SeenSeq: c.LastSeq})
		if len(h.job(task).LeaseDigest) == 0 {
			t.Fatal("the parked task lost its token's digest")
		}
		h.verify()
		before := h.snapshot()
		for _, tok := range []string{"", "0123456789abcdef0123456789abcdef"} {
			_, err := h.apply(&CompleteAsync{LeaseRef: LeaseRef{Job: task, Attempt: c.Attempt, Token: tok}, Result: []byte("forged")})
			var se *StaleAttemptError
			if !errors.As(err, &se) || !se.WrongToken {
				t.Fatalf("completion with token %q: %v, want refused without the lease token", tok, err)
			}
		}
		h.mustFail(&CompleteAsync{LeaseRef: c.Lease(), ByID: true}, ErrInvalidCommand) // by id carries no token
		sameStore(t, before, h.snapshot())
		ref := c.Lease()
		if byID {
			ref.Token = ""
		}
		if r := h.must(&CompleteAsync{LeaseRef: ref, ByID: byID, Result: []byte("ok")}).(*StatusResult); r.Status != StatusCompleted {
			t.Fatalf("completed into %s", r.Status)
		}
		if eff := h.effectOf(parent, "1"); eff == nil || string(eff.Payload) != "ok" {
			t.Fatalf("parent's effect %+v", eff)
		}
		h.verify()
	}
}

// A review task's lease has a token too: a report or heartbeat naming the
// live attempt without it is refused.
func TestTaskLeaseTokenFencesReports(t *testing.T) {
	h := newHarness(t)
	id := h.must(&CreateTask{Job: "j", Phase: "p", Queue: "tq", Type: "w"}).(*TaskResult).Task
	claim := &ClaimTasks{Role: TaskRoleWork, Queue: "tq", Owner: "w", Max: 1, LeaseMS: 60_000}
	stampNonce(claim)
	got := h.must(claim).(*ClaimTasksResult).Tasks
	if len(got) != 1 || got[0].LeaseToken == "" {
		t.Fatalf("task claim %+v gave no token", got)
	}
	forged := TaskLeaseRef{Task: id, Attempt: got[0].Attempt} // the attempt anyone may read
	before := h.snapshot()
	_, err := h.apply(&TaskReport{TaskLeaseRef: forged, Op: TaskReportOutput, Output: []byte("forged")})
	var se *StaleTaskError
	if !errors.As(err, &se) || !se.WrongToken {
		t.Fatalf("report without the token: %v", err)
	}
	hb := h.must(&TaskHeartbeat{Leases: []TaskLeaseRef{forged}, LeaseMS: 120_000}).(*TaskHeartbeatResult)
	if len(hb.Refused) != 1 {
		t.Fatalf("heartbeat without the token: %+v", hb)
	}
	sameStore(t, before, h.snapshot())
	h.must(&TaskReport{TaskLeaseRef: got[0].Lease(), Op: TaskReportOutput, Output: []byte("ok")})
	h.verify()
}

// A create naming a parent without its lease, in a Raft log written before
// parent leases existed, carries no nonce either: a node replaying it
// applies it as the nodes that applied it then did, so their states stay
// the same. Through an Engine, the same create is refused.
func TestChildCreateFromAnOldLogApplies(t *testing.T) {
	h := newHarness(t)
	parent := h.create("p") // Queued: an old create needed only an open parent
	old := &CreateJob{WorkflowID: "p/1/1", Type: "c", Queue: "cq", ParentID: parent, ParentStep: "1"}
	if _, err := h.apply(old); err != nil {
		t.Fatalf("an old log's child create: %v", err)
	}
	oldTask := &CreateTask{Job: "j", Phase: "p", Queue: "tq", Type: "w", ParentJob: parent, ParentStep: "2"}
	if _, err := h.apply(oldTask); err != nil {
		t.Fatalf("an old log's task create: %v", err)
	}
	h.verify()

	e, err := Open(Config{InMemory: true, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	p, err := e.Create(bg, CreateJob{Type: "p", Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Create(bg, CreateJob{Type: "c", Queue: "cq", ParentID: p.Job, ParentStep: "1"}); !errors.Is(err, ErrInvalidCommand) {
		t.Fatalf("a child create without the parent's lease through the Engine: %v", err)
	}
	if _, err := e.CreateTask(bg, CreateTask{Job: "j", Phase: "p", Queue: "tq", Type: "w", ParentJob: p.Job, ParentStep: "2"}); !errors.Is(err, ErrInvalidCommand) {
		t.Fatalf("a task create without the parent's lease through the Engine: %v", err)
	}
}

// A completion by id carries no token, so it ends only a task whose code
// handed its completion over (parked); a running attempt is its worker's,
// and only its task token ends it.
func TestCompleteAsyncByIDOnlyWhenParked(t *testing.T) {
	h := newHarness(t)
	parent, pref := h.runningParent("wf")
	task := h.must(&CreateJob{WorkflowID: "wf/1/1", Type: ActivityTypePrefix + "Charge", Queue: "acts", ParentID: parent, ParentStep: "1", ParentLease: pref}).(*CreateResult).Job
	c := h.claimTokened("acts")
	before := h.snapshot()
	_, err := h.apply(&CompleteAsync{LeaseRef: LeaseRef{Job: task, Attempt: c.Attempt}, ByID: true, Result: []byte("forged")})
	var se *StaleAttemptError
	if !errors.As(err, &se) || !se.NotParked || !strings.Contains(err.Error(), "not parked") {
		t.Fatalf("by id while the attempt runs: %v, want refused", err)
	}
	sameStore(t, before, h.snapshot())
	h.must(&CompleteAsync{LeaseRef: c.Lease(), Result: []byte("by the token")})
	h.verify()
}
