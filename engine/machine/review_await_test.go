package machine_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

func glMemEngine(t testing.TB) *embedded.Engine {
	t.Helper()
	e, err := embedded.Open(embedded.Config{InMemory: true, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, e) })
	return e
}

// driveReview creates a task alone in its queue and moves it to want, one of
// REVIEW_REQUIRED, APPROVAL_REQUIRED, INTERVENTION_REQUIRED, PENDING or
// RUNNING, through the commands a worker, a reviewer and a person give.
func (h *harness) driveReview(job, phase, queue, typ string, want engine.ReviewState) engine.ReviewID {
	h.t.Helper()
	id := h.must(&engine.CreateReview{Job: job, Phase: phase, Queue: queue, Type: typ}).(*engine.ReviewResult).Review
	if want == engine.ReviewPending {
		return id
	}
	w := h.claimReview(engine.ReviewRoleWork, queue, 60_000)
	if len(w) != 1 || w[0].Review != id {
		h.t.Fatalf("work claim on %s = %+v, want task %d", queue, w, id)
	}
	if want == engine.ReviewRunning {
		return id
	}
	h.must(&engine.ReviewReport{ReviewLeaseRef: w[0].Lease(), Op: engine.ReviewReportOutput, Output: []byte("out"), Summary: "did it"})
	if want == engine.ReviewReviewRequired {
		return id
	}
	h.decide(id, engine.ReviewOpStep, "")
	rv := h.claimReview(engine.ReviewRoleReview, queue, 60_000)
	if len(rv) != 1 || rv[0].Review != id {
		h.t.Fatalf("review claim on %s = %+v, want task %d", queue, rv, id)
	}
	verdict := engine.VerdictApprove
	if want == engine.ReviewInterventionRequired {
		verdict = engine.VerdictIntervene
	}
	h.must(&engine.ReviewReport{ReviewLeaseRef: engine.ReviewLeaseRef{Review: id, Attempt: rv[0].Attempt}, Op: engine.ReviewReportVerdict, Assessment: &engine.Assessment{Verdict: verdict, Summary: "reviewed"}})
	if s := h.review(id).State; s != want {
		h.t.Fatalf("task %d is %s, want %s", id, s, want)
	}
	return id
}

func (h *harness) awaiting(q engine.AwaitingQuery) *engine.AwaitingPage {
	h.t.Helper()
	if q.Limit == 0 {
		q.Limit = 100
	}
	var p *engine.AwaitingPage
	viewOK(h.t, h.db, func(r *storage.Reader) error {
		var err error
		p, err = machine.ReadAwaitingReviews(r, q)
		return err
	})
	return p
}

func pageIDs(p *engine.AwaitingPage) []engine.ReviewID {
	out := []engine.ReviewID{}
	for _, t := range p.Reviews {
		out = append(out, t.ID)
	}
	return out
}

// Review tasks of two jobs in every state that awaits a person, and some that
// await nobody: the list holds exactly the first kind, in creation order,
// filtered and paged; a decision takes a task off it in the same command.
func TestAwaitingReviewsAcrossJobs(t *testing.T) {
	h := newHarness(t)
	approve := h.driveReview("order-1", "draft", "q1", "write", engine.ReviewApprovalRequired)
	pending := h.driveReview("order-1", "later", "q4", "write", engine.ReviewPending)
	intervene := h.driveReview("order-2", "draft", "q2", "translate", engine.ReviewInterventionRequired)
	running := h.driveReview("order-2", "busy", "q3", "write", engine.ReviewRunning)
	review := h.driveReview("order-3", "draft", "q1", "write", engine.ReviewReviewRequired)
	h.verify()

	all := []engine.ReviewID{approve, intervene, review}
	for _, c := range []struct {
		name string
		q    engine.AwaitingQuery
		want []engine.ReviewID
		next engine.ReviewID
	}{
		{"all", engine.AwaitingQuery{}, all, 0},
		{"approval", engine.AwaitingQuery{State: engine.ReviewApprovalRequired}, []engine.ReviewID{approve}, 0},
		{"intervention", engine.AwaitingQuery{State: engine.ReviewInterventionRequired}, []engine.ReviewID{intervene}, 0},
		{"review", engine.AwaitingQuery{State: engine.ReviewReviewRequired}, []engine.ReviewID{review}, 0},
		{"queue q1", engine.AwaitingQuery{Queue: "q1"}, []engine.ReviewID{approve, review}, 0},
		{"queue of a running task", engine.AwaitingQuery{Queue: "q3"}, []engine.ReviewID{}, 0},
		{"type", engine.AwaitingQuery{Type: "translate"}, []engine.ReviewID{intervene}, 0},
		{"state and queue", engine.AwaitingQuery{State: engine.ReviewReviewRequired, Queue: "q1"}, []engine.ReviewID{review}, 0},
		{"first page", engine.AwaitingQuery{Limit: 2}, []engine.ReviewID{approve, intervene}, intervene},
		{"second page", engine.AwaitingQuery{Limit: 2, After: intervene}, []engine.ReviewID{review}, 0},
		{"filtered page", engine.AwaitingQuery{Limit: 1, Queue: "q1"}, []engine.ReviewID{approve}, approve},
		{"past the end", engine.AwaitingQuery{After: review}, []engine.ReviewID{}, 0},
		{"largest cursor", engine.AwaitingQuery{After: math.MaxUint64}, []engine.ReviewID{}, 0},
	} {
		p := h.awaiting(c.q)
		if got := pageIDs(p); !slices.Equal(got, c.want) || p.Next != c.next {
			t.Errorf("%s: tasks %v next %d, want %v next %d", c.name, got, p.Next, c.want, c.next)
		}
	}
	if p := h.awaiting(engine.AwaitingQuery{}); p.Reviews[0].Job != "order-1" || p.Reviews[1].State != engine.ReviewInterventionRequired {
		t.Errorf("records of the list: %+v", p.Reviews)
	}

	h.decide(approve, engine.ReviewOpApprove, "")
	h.decide(intervene, engine.ReviewOpResubmit, "try again")
	h.decide(review, engine.ReviewOpStep, "")
	if got := pageIDs(h.awaiting(engine.AwaitingQuery{})); len(got) != 0 {
		t.Fatalf("after the decisions, awaiting %v, want none", got)
	}
	h.verify()
	if h.review(pending).State != engine.ReviewPending || h.review(running).State != engine.ReviewRunning {
		t.Fatalf("the tasks awaiting nobody moved: %s, %s", h.review(pending).State, h.review(running).State)
	}
}

// The engine refuses a filter on a state that awaits nobody, and a limit
// out of range, naming them.
func TestAwaitingQueryRefused(t *testing.T) {
	e := glMemEngine(t)
	for _, c := range []struct {
		q    engine.AwaitingQuery
		want string
	}{
		{engine.AwaitingQuery{State: engine.ReviewRunning}, "RUNNING does not await a person"},
		{engine.AwaitingQuery{State: engine.ReviewReviewing}, "REVIEWING does not await a person"},
		{engine.AwaitingQuery{Limit: -1}, "limit -1"},
		{engine.AwaitingQuery{Limit: engine.MaxPage + 1}, "limit"},
	} {
		_, err := e.ListAwaitingReviews(context.Background(), c.q)
		if !errors.Is(err, engine.ErrInvalidCommand) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want ErrInvalidCommand naming %q", c.q, err, c.want)
		}
	}
	p, err := e.ListAwaitingReviews(context.Background(), engine.AwaitingQuery{})
	if err != nil || p.Reviews == nil || len(p.Reviews) != 0 || p.Next != 0 {
		t.Fatalf("empty engine: %+v, %v", p, err)
	}
}

// Verify checks the index of tasks awaiting a person against the records:
// an entry missing for an awaiting task, and one for a task that awaits
// nobody, are both reported.
func TestVerifyChecksAwaitingIndex(t *testing.T) {
	for _, c := range []struct {
		name   string
		tamper func(txn *badger.Txn, awaiting, pending engine.ReviewID) error
		want   string
	}{
		{"missing", func(txn *badger.Txn, awaiting, _ engine.ReviewID) error {
			return txn.Delete(storage.ReviewAwaitKey(uint64(awaiting)))
		}, "is missing"},
		{"stray", func(txn *badger.Txn, _, pending engine.ReviewID) error {
			return txn.Set(storage.ReviewAwaitKey(uint64(pending)), nil)
		}, "implied by no task record"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			awaiting := h.driveReview("j", "a", "q1", "w", engine.ReviewApprovalRequired)
			pending := h.driveReview("j", "b", "q2", "w", engine.ReviewPending)
			h.verify()
			if err := h.db.Badger().Update(func(txn *badger.Txn) error { return c.tamper(txn, awaiting, pending) }); err != nil {
				t.Fatal(err)
			}
			var errs []error
			viewOK(t, h.db, func(r *storage.Reader) error { errs = machine.Verify(r, 10); return nil })
			if len(errs) == 0 || !strings.Contains(errors.Join(errs...).Error(), c.want) {
				t.Fatalf("Verify after the %s entry: %v, want an error saying %q", c.name, errs, c.want)
			}
		})
	}
}
