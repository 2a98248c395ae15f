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

// driveTask creates a task alone in its queue and moves it to want, one of
// REVIEW_REQUIRED, APPROVAL_REQUIRED, INTERVENTION_REQUIRED, PENDING or
// RUNNING, through the commands a worker, a reviewer and a person give.
func (h *harness) driveTask(job, phase, queue, typ string, want engine.TaskState) engine.TaskID {
	h.t.Helper()
	id := h.must(&engine.CreateTask{Job: job, Phase: phase, Queue: queue, Type: typ}).(*engine.TaskResult).Task
	if want == engine.TaskPending {
		return id
	}
	w := h.claimTask(engine.TaskRoleWork, queue, 60_000)
	if len(w) != 1 || w[0].Task != id {
		h.t.Fatalf("work claim on %s = %+v, want task %d", queue, w, id)
	}
	if want == engine.TaskRunning {
		return id
	}
	h.must(&engine.TaskReport{TaskLeaseRef: w[0].Lease(), Op: engine.TaskReportOutput, Output: []byte("out"), Summary: "did it"})
	if want == engine.TaskReviewRequired {
		return id
	}
	h.decide(id, engine.TaskOpStep, "")
	rv := h.claimTask(engine.TaskRoleReview, queue, 60_000)
	if len(rv) != 1 || rv[0].Task != id {
		h.t.Fatalf("review claim on %s = %+v, want task %d", queue, rv, id)
	}
	verdict := engine.VerdictApprove
	if want == engine.TaskInterventionRequired {
		verdict = engine.VerdictIntervene
	}
	h.must(&engine.TaskReport{TaskLeaseRef: engine.TaskLeaseRef{Task: id, Attempt: rv[0].Attempt}, Op: engine.TaskReportVerdict, Review: &engine.Review{Verdict: verdict, Summary: "reviewed"}})
	if s := h.task(id).State; s != want {
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
		p, err = machine.ReadAwaitingTasks(r, q)
		return err
	})
	return p
}

func pageIDs(p *engine.AwaitingPage) []engine.TaskID {
	out := []engine.TaskID{}
	for _, t := range p.Tasks {
		out = append(out, t.ID)
	}
	return out
}

// Tasks of two jobs in every state that awaits a person, and some that
// await nobody: the list holds exactly the first kind, in creation order,
// filtered and paged; a decision takes a task off it in the same command.
func TestAwaitingTasksAcrossJobs(t *testing.T) {
	h := newHarness(t)
	approve := h.driveTask("order-1", "draft", "q1", "write", engine.TaskApprovalRequired)
	pending := h.driveTask("order-1", "later", "q4", "write", engine.TaskPending)
	intervene := h.driveTask("order-2", "draft", "q2", "translate", engine.TaskInterventionRequired)
	running := h.driveTask("order-2", "busy", "q3", "write", engine.TaskRunning)
	review := h.driveTask("order-3", "draft", "q1", "write", engine.TaskReviewRequired)
	h.verify()

	all := []engine.TaskID{approve, intervene, review}
	for _, c := range []struct {
		name string
		q    engine.AwaitingQuery
		want []engine.TaskID
		next engine.TaskID
	}{
		{"all", engine.AwaitingQuery{}, all, 0},
		{"approval", engine.AwaitingQuery{State: engine.TaskApprovalRequired}, []engine.TaskID{approve}, 0},
		{"intervention", engine.AwaitingQuery{State: engine.TaskInterventionRequired}, []engine.TaskID{intervene}, 0},
		{"review", engine.AwaitingQuery{State: engine.TaskReviewRequired}, []engine.TaskID{review}, 0},
		{"queue q1", engine.AwaitingQuery{Queue: "q1"}, []engine.TaskID{approve, review}, 0},
		{"queue of a running task", engine.AwaitingQuery{Queue: "q3"}, []engine.TaskID{}, 0},
		{"type", engine.AwaitingQuery{Type: "translate"}, []engine.TaskID{intervene}, 0},
		{"state and queue", engine.AwaitingQuery{State: engine.TaskReviewRequired, Queue: "q1"}, []engine.TaskID{review}, 0},
		{"first page", engine.AwaitingQuery{Limit: 2}, []engine.TaskID{approve, intervene}, intervene},
		{"second page", engine.AwaitingQuery{Limit: 2, After: intervene}, []engine.TaskID{review}, 0},
		{"filtered page", engine.AwaitingQuery{Limit: 1, Queue: "q1"}, []engine.TaskID{approve}, approve},
		{"past the end", engine.AwaitingQuery{After: review}, []engine.TaskID{}, 0},
		{"largest cursor", engine.AwaitingQuery{After: math.MaxUint64}, []engine.TaskID{}, 0},
	} {
		p := h.awaiting(c.q)
		if got := pageIDs(p); !slices.Equal(got, c.want) || p.Next != c.next {
			t.Errorf("%s: tasks %v next %d, want %v next %d", c.name, got, p.Next, c.want, c.next)
		}
	}
	if p := h.awaiting(engine.AwaitingQuery{}); p.Tasks[0].Job != "order-1" || p.Tasks[1].State != engine.TaskInterventionRequired {
		t.Errorf("records of the list: %+v", p.Tasks)
	}

	h.decide(approve, engine.TaskOpApprove, "")
	h.decide(intervene, engine.TaskOpResubmit, "try again")
	h.decide(review, engine.TaskOpStep, "")
	if got := pageIDs(h.awaiting(engine.AwaitingQuery{})); len(got) != 0 {
		t.Fatalf("after the decisions, awaiting %v, want none", got)
	}
	h.verify()
	if h.task(pending).State != engine.TaskPending || h.task(running).State != engine.TaskRunning {
		t.Fatalf("the tasks awaiting nobody moved: %s, %s", h.task(pending).State, h.task(running).State)
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
		{engine.AwaitingQuery{State: engine.TaskRunning}, "RUNNING does not await a person"},
		{engine.AwaitingQuery{State: engine.TaskReviewing}, "REVIEWING does not await a person"},
		{engine.AwaitingQuery{Limit: -1}, "limit -1"},
		{engine.AwaitingQuery{Limit: engine.MaxPage + 1}, "limit"},
	} {
		_, err := e.ListAwaitingTasks(context.Background(), c.q)
		if !errors.Is(err, engine.ErrInvalidCommand) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want ErrInvalidCommand naming %q", c.q, err, c.want)
		}
	}
	p, err := e.ListAwaitingTasks(context.Background(), engine.AwaitingQuery{})
	if err != nil || p.Tasks == nil || len(p.Tasks) != 0 || p.Next != 0 {
		t.Fatalf("empty engine: %+v, %v", p, err)
	}
}

// Verify checks the index of tasks awaiting a person against the records:
// an entry missing for an awaiting task, and one for a task that awaits
// nobody, are both reported.
func TestVerifyChecksAwaitingIndex(t *testing.T) {
	for _, c := range []struct {
		name   string
		tamper func(txn *badger.Txn, awaiting, pending engine.TaskID) error
		want   string
	}{
		{"missing", func(txn *badger.Txn, awaiting, _ engine.TaskID) error {
			return txn.Delete(storage.TaskAwaitKey(uint64(awaiting)))
		}, "is missing"},
		{"stray", func(txn *badger.Txn, _, pending engine.TaskID) error {
			return txn.Set(storage.TaskAwaitKey(uint64(pending)), nil)
		}, "implied by no task record"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			awaiting := h.driveTask("j", "a", "q1", "w", engine.TaskApprovalRequired)
			pending := h.driveTask("j", "b", "q2", "w", engine.TaskPending)
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
