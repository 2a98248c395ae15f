package engine

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/heddlewf/heddle/storage"
)

// driveTask creates a task alone in its queue and moves it to want, one of
// REVIEW_REQUIRED, APPROVAL_REQUIRED, INTERVENTION_REQUIRED, PENDING or
// RUNNING, through the commands a worker, a reviewer and a person give.
func (h *harness) driveTask(job, phase, queue, typ string, want TaskState) TaskID {
	h.t.Helper()
	id := h.must(&CreateTask{Job: job, Phase: phase, Queue: queue, Type: typ}).(*TaskResult).Task
	if want == TaskPending {
		return id
	}
	w := h.claimTask(TaskRoleWork, queue, 60_000)
	if len(w) != 1 || w[0].Task != id {
		h.t.Fatalf("work claim on %s = %+v, want task %d", queue, w, id)
	}
	if want == TaskRunning {
		return id
	}
	h.must(&TaskReport{TaskLeaseRef: w[0].Lease(), Op: TaskReportOutput, Output: []byte("out"), Summary: "did it"})
	if want == TaskReviewRequired {
		return id
	}
	h.decide(id, TaskOpStep, "")
	rv := h.claimTask(TaskRoleReview, queue, 60_000)
	if len(rv) != 1 || rv[0].Task != id {
		h.t.Fatalf("review claim on %s = %+v, want task %d", queue, rv, id)
	}
	verdict := VerdictApprove
	if want == TaskInterventionRequired {
		verdict = VerdictIntervene
	}
	h.must(&TaskReport{TaskLeaseRef: TaskLeaseRef{Task: id, Attempt: rv[0].Attempt}, Op: TaskReportVerdict, Review: &Review{Verdict: verdict, Summary: "reviewed"}})
	if s := h.task(id).State; s != want {
		h.t.Fatalf("task %d is %s, want %s", id, s, want)
	}
	return id
}

func (h *harness) awaiting(q AwaitingQuery) *AwaitingPage {
	h.t.Helper()
	if q.Limit == 0 {
		q.Limit = 100
	}
	var p *AwaitingPage
	viewOK(h.t, h.db, func(r *storage.Reader) error {
		var err error
		p, err = ReadAwaitingTasks(r, q)
		return err
	})
	return p
}

func pageIDs(p *AwaitingPage) []TaskID {
	out := []TaskID{}
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
	approve := h.driveTask("order-1", "draft", "q1", "write", TaskApprovalRequired)
	pending := h.driveTask("order-1", "later", "q4", "write", TaskPending)
	intervene := h.driveTask("order-2", "draft", "q2", "translate", TaskInterventionRequired)
	running := h.driveTask("order-2", "busy", "q3", "write", TaskRunning)
	review := h.driveTask("order-3", "draft", "q1", "write", TaskReviewRequired)
	h.verify()

	all := []TaskID{approve, intervene, review}
	for _, c := range []struct {
		name string
		q    AwaitingQuery
		want []TaskID
		next TaskID
	}{
		{"all", AwaitingQuery{}, all, 0},
		{"approval", AwaitingQuery{State: TaskApprovalRequired}, []TaskID{approve}, 0},
		{"intervention", AwaitingQuery{State: TaskInterventionRequired}, []TaskID{intervene}, 0},
		{"review", AwaitingQuery{State: TaskReviewRequired}, []TaskID{review}, 0},
		{"queue q1", AwaitingQuery{Queue: "q1"}, []TaskID{approve, review}, 0},
		{"queue of a running task", AwaitingQuery{Queue: "q3"}, []TaskID{}, 0},
		{"type", AwaitingQuery{Type: "translate"}, []TaskID{intervene}, 0},
		{"state and queue", AwaitingQuery{State: TaskReviewRequired, Queue: "q1"}, []TaskID{review}, 0},
		{"first page", AwaitingQuery{Limit: 2}, []TaskID{approve, intervene}, intervene},
		{"second page", AwaitingQuery{Limit: 2, After: intervene}, []TaskID{review}, 0},
		{"filtered page", AwaitingQuery{Limit: 1, Queue: "q1"}, []TaskID{approve}, approve},
		{"past the end", AwaitingQuery{After: review}, []TaskID{}, 0},
		{"largest cursor", AwaitingQuery{After: math.MaxUint64}, []TaskID{}, 0},
	} {
		p := h.awaiting(c.q)
		if got := pageIDs(p); !slices.Equal(got, c.want) || p.Next != c.next {
			t.Errorf("%s: tasks %v next %d, want %v next %d", c.name, got, p.Next, c.want, c.next)
		}
	}
	if p := h.awaiting(AwaitingQuery{}); p.Tasks[0].Job != "order-1" || p.Tasks[1].State != TaskInterventionRequired {
		t.Errorf("records of the list: %+v", p.Tasks)
	}

	h.decide(approve, TaskOpApprove, "")
	h.decide(intervene, TaskOpResubmit, "try again")
	h.decide(review, TaskOpStep, "")
	if got := pageIDs(h.awaiting(AwaitingQuery{})); len(got) != 0 {
		t.Fatalf("after the decisions, awaiting %v, want none", got)
	}
	h.verify()
	if h.task(pending).State != TaskPending || h.task(running).State != TaskRunning {
		t.Fatalf("the tasks awaiting nobody moved: %s, %s", h.task(pending).State, h.task(running).State)
	}
}

// The engine refuses a filter on a state that awaits nobody, and a limit
// out of range, naming them.
func TestAwaitingQueryRefused(t *testing.T) {
	e := glMemEngine(t)
	for _, c := range []struct {
		q    AwaitingQuery
		want string
	}{
		{AwaitingQuery{State: TaskRunning}, "RUNNING does not await a person"},
		{AwaitingQuery{State: TaskReviewing}, "REVIEWING does not await a person"},
		{AwaitingQuery{Limit: -1}, "limit -1"},
		{AwaitingQuery{Limit: MaxPage + 1}, "limit"},
	} {
		_, err := e.ListAwaitingTasks(context.Background(), c.q)
		if !errors.Is(err, ErrInvalidCommand) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want ErrInvalidCommand naming %q", c.q, err, c.want)
		}
	}
	p, err := e.ListAwaitingTasks(context.Background(), AwaitingQuery{})
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
		tamper func(txn *badger.Txn, awaiting, pending TaskID) error
		want   string
	}{
		{"missing", func(txn *badger.Txn, awaiting, _ TaskID) error {
			return txn.Delete(storage.TaskAwaitKey(uint64(awaiting)))
		}, "is missing"},
		{"stray", func(txn *badger.Txn, _, pending TaskID) error {
			return txn.Set(storage.TaskAwaitKey(uint64(pending)), nil)
		}, "implied by no task record"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			awaiting := h.driveTask("j", "a", "q1", "w", TaskApprovalRequired)
			pending := h.driveTask("j", "b", "q2", "w", TaskPending)
			h.verify()
			if err := h.db.Badger().Update(func(txn *badger.Txn) error { return c.tamper(txn, awaiting, pending) }); err != nil {
				t.Fatal(err)
			}
			var errs []error
			viewOK(t, h.db, func(r *storage.Reader) error { errs = Verify(r, 10); return nil })
			if len(errs) == 0 || !strings.Contains(errors.Join(errs...).Error(), c.want) {
				t.Fatalf("Verify after the %s entry: %v, want an error saying %q", c.name, errs, c.want)
			}
		})
	}
}
