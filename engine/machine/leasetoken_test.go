package machine_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// claimTokened claims one job of queue as the Engine does: with a fresh
// nonce, so the lease has a token.
func (h *harness) claimTokened(queue string) engine.ClaimedJob {
	h.t.Helper()
	c := &engine.Claim{Queue: queue, Owner: "holder", Max: 1, LeaseMS: 60_000}
	engine.StampNonce(c)
	r := h.must(c).(*engine.ClaimResult)
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
	if ev := h.lastEvent(id); ev.Type != engine.EventJobLeased || !ev.TokenIssued {
		t.Fatalf("the claim's event %+v does not say it issued a token", ev)
	}
	holder := c.Lease()
	for _, forged := range []engine.LeaseRef{
		{Job: id, Attempt: c.Attempt},
		{Job: id, Attempt: c.Attempt, Token: "0123456789abcdef0123456789abcdef"},
		{Job: id, Attempt: c.Attempt, Token: c.LeaseToken[:31]},
		{Job: id, Attempt: c.Attempt, Token: strings.ToUpper(c.LeaseToken)},
	} {
		for _, cmd := range []engine.Command{
			&engine.AppendEvents{LeaseRef: forged, Events: []engine.NewEvent{{Type: "marker", Name: "m"}}},
			&engine.CommitStep{LeaseRef: forged, Step: "1", Type: "activity_completed", Payload: []byte("forged")},
			&engine.Wait{LeaseRef: forged, Spec: engine.WaitSpec{Signals: []string{"s"}}, SeenSeq: c.LastSeq},
			&engine.Complete{LeaseRef: forged, Result: []byte("forged")},
			&engine.Fail{LeaseRef: forged},
			&engine.Requeue{LeaseRef: forged},
			&engine.ContinueAsNew{LeaseRef: forged},
			&engine.LeaseStep{LeaseRef: forged, Step: "2", Name: "a", LeaseMS: 1000},
			&engine.StepHeartbeat{LeaseRef: forged, Step: "2", StepAttempt: 1, LeaseMS: 1000},
			&engine.EndStepAttempt{LeaseRef: forged, Step: "2", Name: "a", StepAttempt: 1, Outcome: engine.OutcomeRetry},
			&engine.Terminate{Target: engine.Target{WorkflowID: "wf"}, ByParent: &forged},
		} {
			before := h.snapshot()
			_, err := h.apply(cmd)
			var se *engine.StaleAttemptError
			if !errors.As(err, &se) || !se.WrongToken || !errors.Is(err, engine.ErrStaleAttempt) {
				t.Fatalf("%s with token %q: %v, want a stale attempt without the lease token", cmd.Kind(), forged.Token, err)
			}
			if strings.Contains(err.Error(), c.LeaseToken) {
				t.Fatalf("the refusal shows the lease token: %v", err)
			}
			sameStore(t, before, h.snapshot())
		}
		hb := h.must(&engine.Heartbeat{Leases: []engine.LeaseRef{forged}, LeaseMS: 120_000}).(*engine.HeartbeatResult)
		if len(hb.Refused) != 1 || hb.Refused[0].Code != engine.StaleAttemptCode || hb.Refused[0].Token != "" {
			t.Fatalf("heartbeat with token %q: %+v, want refused (without echoing the token)", forged.Token, hb)
		}
	}
	if j := h.job(id); j.LeaseExpiryMS != c.LeaseExpiryMS {
		t.Fatalf("a refused heartbeat moved the lease to %d", j.LeaseExpiryMS)
	}
	h.must(&engine.Heartbeat{Leases: []engine.LeaseRef{holder}, LeaseMS: 120_000})
	h.must(&engine.AppendEvents{LeaseRef: holder, Events: []engine.NewEvent{{Type: "marker", Name: "m"}}})
	h.must(&engine.Complete{LeaseRef: holder, Result: []byte("done")})
	if j := h.job(id); j.Status != engine.StatusCompleted || len(j.LeaseDigest) != 0 {
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
	for what, b := range map[string][]byte{"record JSON": js, "history JSON": hist, "record": machine.EncodeJob(j)} {
		if strings.Contains(string(b), c.LeaseToken) {
			t.Fatalf("the %s holds the lease token: %s", what, b)
		}
	}
}

// The Engine, not the caller, picks the nonce a claim's tokens come from:
// a caller that sent its own would otherwise compute every token.
func TestEngineChoosesTheClaimNonce(t *testing.T) {
	e, err := embedded.Open(embedded.Config{InMemory: true, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	chosen := []byte("0123456789abcdef")
	tokens := map[string]bool{}
	for i := range 3 {
		r, err := e.Create(bg, engine.CreateJob{Type: "t", Queue: "q"})
		if err != nil {
			t.Fatal(err)
		}
		jobs, err := e.Claim(bg, engine.Claim{Header: engine.Header{Nonce: chosen}, Queue: "q", Owner: "w", Max: 1, LeaseMS: 60_000})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("claim %d: %+v %v", i, jobs, err)
		}
		tok := jobs[0].LeaseToken
		if len(tok) != 32 || tok == machine.LeaseToken(chosen, "job", uint64(r.Job), 1) || tokens[tok] {
			t.Fatalf("claim %d: token %q (the caller's nonce would give %q)", i, tok, machine.LeaseToken(chosen, "job", uint64(r.Job), 1))
		}
		tokens[tok] = true
		if _, err := e.Complete(bg, engine.Complete{LeaseRef: engine.LeaseRef{Job: r.Job, Attempt: 1}}); !errors.Is(err, engine.ErrStaleAttempt) {
			t.Fatalf("complete without the token: %v, want ErrStaleAttempt", err)
		}
		if _, err := e.Complete(bg, engine.Complete{LeaseRef: jobs[0].Lease()}); err != nil {
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
	h.mustFail(&engine.AppendEvents{LeaseRef: engine.LeaseRef{Job: id, Attempt: c.Attempt, Token: "x"}, Events: []engine.NewEvent{{Type: "m"}}}, engine.ErrStaleAttempt)
	h.must(&engine.AppendEvents{LeaseRef: c.Lease(), Events: []engine.NewEvent{{Type: "m"}}})
	h.verify()
}

// Verify holds the record's token digest to its claim: a Running record
// whose claim issued a token has its digest, and no other record has one.
func TestVerifyChecksLeaseTokenDigest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tamper func(j *engine.Job)
	}{
		{"digest lost", func(j *engine.Job) { j.LeaseDigest = nil }},
		{"digest on an ended job", func(j *engine.Job) { j.Status, j.LeaseOwner, j.LeaseExpiryMS = engine.StatusRunning, "", 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			id := h.create("wf")
			c := h.claimTokened("q")
			if tc.name == "digest on an ended job" {
				h.must(&engine.Requeue{LeaseRef: c.Lease()})
				h.verify()
				j := h.job(id)
				j.LeaseDigest = machine.LeaseDigest("something")
				h.put(j)
			} else {
				j := h.job(id)
				tc.tamper(j)
				h.put(j)
			}
			var errs []error
			viewOK(t, h.db, func(r *storage.Reader) error { errs = machine.Verify(r, 10); return nil })
			if len(errs) == 0 || !strings.Contains(errors.Join(errs...).Error(), "lease token digest") {
				t.Fatalf("Verify found %v, want the lease token digest", errs)
			}
		})
	}
}

// put overwrites a job record (a test's corruption).
func (h *harness) put(j *engine.Job) {
	h.t.Helper()
	b := h.db.NewBatch()
	defer b.Discard()
	tx := b.Begin()
	tx.Set(storage.JobKey(uint64(j.ID)), machine.EncodeJob(j))
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
	h.must(&engine.Wait{LeaseRef: holder, Spec: engine.WaitSpec{Steps: []string{"1"}}, SeenSeq: c.LastSeq})
	// The victim is Waiting now; its next attempt will hold it.
	before := h.snapshot()
	for _, tc := range []struct {
		name  string
		lease *engine.LeaseRef
		want  error
	}{
		{"no lease", nil, engine.ErrInvalidCommand},
		{"the public attempt", &engine.LeaseRef{Job: victim, Attempt: c.Attempt}, engine.ErrStaleAttempt},
		{"the holder's lease, but the run waits", &holder, engine.ErrStaleAttempt},
		{"another job's lease", &engine.LeaseRef{Job: victim + 1, Attempt: 1}, engine.ErrInvalidCommand},
	} {
		cmd := &engine.CreateJob{WorkflowID: "evil-" + tc.name, Type: engine.ActivityTypePrefix + "x", Queue: "evil",
			ParentID: victim, ParentStep: "1", ParentLease: tc.lease}
		engine.StampNonce(cmd) // as the Engine does with every create it proposes
		_, err := h.apply(cmd)
		if !errors.Is(err, tc.want) {
			t.Fatalf("%s: %v, want %v", tc.name, err, tc.want)
		}
		sameStore(t, before, h.snapshot())
	}
	// The same goes for a review task: its end writes into a step too.
	for _, pl := range []*engine.LeaseRef{nil, {Job: victim, Attempt: c.Attempt}} {
		cmd := &engine.CreateReview{Job: "evil", Phase: "p", Queue: "evil", Type: "w", ParentJob: victim, ParentStep: "1", ParentLease: pl}
		engine.StampNonce(cmd)
		if _, err := h.apply(cmd); pl == nil && !errors.Is(err, engine.ErrInvalidCommand) || pl != nil && !errors.Is(err, engine.ErrStaleAttempt) {
			t.Fatalf("task under another's run, lease %+v: %v", pl, err)
		}
	}
	_, err := h.apply(&engine.CreateReview{Job: "evil", Phase: "p", Queue: "evil", Type: "w", ParentJob: victim, ParentStep: "1",
		ParentLease: &engine.LeaseRef{Job: victim, Attempt: c.Attempt}})
	if !errors.Is(err, engine.ErrStaleAttempt) {
		t.Fatalf("task under another's run: %v, want ErrStaleAttempt", err)
	}
	sameStore(t, before, h.snapshot())

	// The run's own worker starts its child, whose end is its step's.
	h.must(&engine.Signal{Target: engine.Target{Job: victim}, Name: "wake"}) // nothing waits for it
	h.must(&engine.RequestCancel{Target: engine.Target{Job: victim}})        // wakes it
	c2 := h.claimTokened("q")
	own := c2.Lease()
	child := h.must(&engine.CreateJob{WorkflowID: "child", Type: "c", Queue: "cq", ParentID: victim, ParentStep: "1", ParentLease: &own}).(*engine.CreateResult).Job
	h.must(&engine.Cancel{Target: engine.Target{Job: child}})
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
	create := func(l *engine.LeaseRef) (engine.Result, error) {
		return h.apply(&engine.CreateJob{Header: engine.Header{RequestID: "heddle/1/3"}, WorkflowID: "p/1/3", Type: "c", Queue: "cq",
			ParentID: parent, ParentStep: "3", ParentLease: l})
	}
	first, err := create(&l1)
	if err != nil {
		t.Fatal(err)
	}
	h.must(&engine.Requeue{LeaseRef: l1})
	c2 := h.claimTokened("q")
	l2 := c2.Lease()
	again, err := create(&l2)
	if err != nil || again.(*engine.CreateResult).Job != first.(*engine.CreateResult).Job {
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
		task := h.must(&engine.CreateJob{WorkflowID: "wf/1/1", Type: engine.ActivityTypePrefix + "Charge", Queue: "acts", ParentID: parent, ParentStep: "1", ParentLease: pref}).(*engine.CreateResult).Job
		c := h.claimTokened("acts")
		h.must(&engine.Wait{LeaseRef: c.Lease(), Spec: engine.WaitSpec{Signals: []string{engine.AsyncCompletionSignal}, Park: true}, SeenSeq: c.LastSeq})
		if len(h.job(task).LeaseDigest) == 0 {
			t.Fatal("the parked task lost its token's digest")
		}
		h.verify()
		before := h.snapshot()
		for _, tok := range []string{"", "0123456789abcdef0123456789abcdef"} {
			_, err := h.apply(&engine.CompleteAsync{LeaseRef: engine.LeaseRef{Job: task, Attempt: c.Attempt, Token: tok}, Result: []byte("forged")})
			var se *engine.StaleAttemptError
			if !errors.As(err, &se) || !se.WrongToken {
				t.Fatalf("completion with token %q: %v, want refused without the lease token", tok, err)
			}
		}
		h.mustFail(&engine.CompleteAsync{LeaseRef: c.Lease(), ByID: true}, engine.ErrInvalidCommand) // by id carries no token
		sameStore(t, before, h.snapshot())
		ref := c.Lease()
		if byID {
			ref.Token = ""
		}
		if r := h.must(&engine.CompleteAsync{LeaseRef: ref, ByID: byID, Result: []byte("ok")}).(*engine.StatusResult); r.Status != engine.StatusCompleted {
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
func TestReviewLeaseTokenFencesReports(t *testing.T) {
	h := newHarness(t)
	id := h.must(&engine.CreateReview{Job: "j", Phase: "p", Queue: "tq", Type: "w"}).(*engine.ReviewResult).Review
	claim := &engine.ClaimReviews{Role: engine.ReviewRoleWork, Queue: "tq", Owner: "w", Max: 1, LeaseMS: 60_000}
	engine.StampNonce(claim)
	got := h.must(claim).(*engine.ClaimReviewsResult).Reviews
	if len(got) != 1 || got[0].LeaseToken == "" {
		t.Fatalf("task claim %+v gave no token", got)
	}
	forged := engine.ReviewLeaseRef{Review: id, Attempt: got[0].Attempt} // the attempt anyone may read
	before := h.snapshot()
	_, err := h.apply(&engine.ReviewReport{ReviewLeaseRef: forged, Op: engine.ReviewReportOutput, Output: []byte("forged")})
	var se *engine.StaleReviewError
	if !errors.As(err, &se) || !se.WrongToken {
		t.Fatalf("report without the token: %v", err)
	}
	hb := h.must(&engine.ReviewHeartbeat{Leases: []engine.ReviewLeaseRef{forged}, LeaseMS: 120_000}).(*engine.ReviewHeartbeatResult)
	if len(hb.Refused) != 1 {
		t.Fatalf("heartbeat without the token: %+v", hb)
	}
	sameStore(t, before, h.snapshot())
	h.must(&engine.ReviewReport{ReviewLeaseRef: got[0].Lease(), Op: engine.ReviewReportOutput, Output: []byte("ok")})
	h.verify()
}

// A create naming a parent without its lease, in a Raft log written before
// parent leases existed, carries no nonce either: a node replaying it
// applies it as the nodes that applied it then did, so their states stay
// the same. Through an Engine, the same create is refused.
func TestChildCreateFromAnOldLogApplies(t *testing.T) {
	h := newHarness(t)
	parent := h.create("p") // Queued: an old create needed only an open parent
	old := &engine.CreateJob{WorkflowID: "p/1/1", Type: "c", Queue: "cq", ParentID: parent, ParentStep: "1"}
	if _, err := h.apply(old); err != nil {
		t.Fatalf("an old log's child create: %v", err)
	}
	oldReview := &engine.CreateReview{Job: "j", Phase: "p", Queue: "tq", Type: "w", ParentJob: parent, ParentStep: "2"}
	if _, err := h.apply(oldReview); err != nil {
		t.Fatalf("an old log's task create: %v", err)
	}
	h.verify()

	e, err := embedded.Open(embedded.Config{InMemory: true, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	p, err := e.Create(bg, engine.CreateJob{Type: "p", Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Create(bg, engine.CreateJob{Type: "c", Queue: "cq", ParentID: p.Job, ParentStep: "1"}); !errors.Is(err, engine.ErrInvalidCommand) {
		t.Fatalf("a child create without the parent's lease through the Engine: %v", err)
	}
	if _, err := e.CreateReview(bg, engine.CreateReview{Job: "j", Phase: "p", Queue: "tq", Type: "w", ParentJob: p.Job, ParentStep: "2"}); !errors.Is(err, engine.ErrInvalidCommand) {
		t.Fatalf("a task create without the parent's lease through the Engine: %v", err)
	}
}

// A completion by id carries no token, so it ends only a task whose code
// handed its completion over (parked); a running attempt is its worker's,
// and only its task token ends it.
func TestCompleteAsyncByIDOnlyWhenParked(t *testing.T) {
	h := newHarness(t)
	parent, pref := h.runningParent("wf")
	task := h.must(&engine.CreateJob{WorkflowID: "wf/1/1", Type: engine.ActivityTypePrefix + "Charge", Queue: "acts", ParentID: parent, ParentStep: "1", ParentLease: pref}).(*engine.CreateResult).Job
	c := h.claimTokened("acts")
	before := h.snapshot()
	_, err := h.apply(&engine.CompleteAsync{LeaseRef: engine.LeaseRef{Job: task, Attempt: c.Attempt}, ByID: true, Result: []byte("forged")})
	var se *engine.StaleAttemptError
	if !errors.As(err, &se) || !se.NotParked || !strings.Contains(err.Error(), "not parked") {
		t.Fatalf("by id while the attempt runs: %v, want refused", err)
	}
	sameStore(t, before, h.snapshot())
	h.must(&engine.CompleteAsync{LeaseRef: c.Lease(), Result: []byte("by the token")})
	h.verify()
}
