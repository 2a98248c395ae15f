package engine

import (
	"encoding/json"
	"fmt"
	"slices"
)

// TaskState is the state of a review task (docs/state-machines.md §4): a
// unit of work whose output must pass a review gate and an approval before
// its dependants may start.
type TaskState uint8

// Task states. The numbers are stored in task records and events and must
// never be reused.
const (
	TaskNone                 TaskState = 0 // no history yet
	TaskDraft                TaskState = 1
	TaskPending              TaskState = 2
	TaskSuspended            TaskState = 3
	TaskRunning              TaskState = 4
	TaskPaused               TaskState = 5
	TaskReviewRequired       TaskState = 6
	TaskReviewing            TaskState = 7
	TaskApprovalRequired     TaskState = 8
	TaskInterventionRequired TaskState = 9
	TaskSuccess              TaskState = 10
	TaskCanceled             TaskState = 11
	// TaskFailed is kept for compatibility with the origin model: no
	// command leads to it, and it is terminal.
	TaskFailed TaskState = 12
)

// numTaskStates is one more than the largest task state.
const numTaskStates = 13

var taskStateNames = [numTaskStates]string{
	"NONE", "DRAFT", "PENDING", "SUSPENDED", "RUNNING", "PAUSED", "REVIEW_REQUIRED",
	"REVIEWING", "APPROVAL_REQUIRED", "INTERVENTION_REQUIRED", "SUCCESS", "CANCELED", "FAILED",
}

func (s TaskState) String() string {
	if int(s) < len(taskStateNames) {
		return taskStateNames[s]
	}
	return fmt.Sprintf("TaskState(%d)", uint8(s))
}

// ParseTaskState returns the state with the given name (as String prints it).
func ParseTaskState(name string) (TaskState, error) {
	for i, n := range taskStateNames {
		if i != 0 && n == name {
			return TaskState(i), nil
		}
	}
	return TaskNone, fmt.Errorf("%w: unknown task state %q", ErrInvalidCommand, name)
}

// MarshalJSON writes the state by name, as the manifest shows it.
func (s TaskState) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// UnmarshalJSON reads a state by name, or by number as the job statuses
// are read.
func (s *TaskState) UnmarshalJSON(b []byte) error {
	var n uint8
	if err := json.Unmarshal(b, &n); err == nil {
		if n >= numTaskStates {
			return fmt.Errorf("%w: task state %d is not in [0, %d]", ErrInvalidCommand, n, numTaskStates-1)
		}
		*s = TaskState(n)
		return nil
	}
	var name string
	if err := json.Unmarshal(b, &name); err != nil {
		return fmt.Errorf("task state: %w", err)
	}
	if name == "NONE" || name == "" {
		*s = TaskNone
		return nil
	}
	v, err := ParseTaskState(name)
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Terminal reports whether s ends the task: SUCCESS, CANCELED or FAILED.
func (s TaskState) Terminal() bool {
	return s == TaskSuccess || s == TaskCanceled || s == TaskFailed
}

// AwaitsPerson reports whether a task in s waits for a person's command:
// REVIEW_REQUIRED (a review to start), APPROVAL_REQUIRED (approve or
// reject) or INTERVENTION_REQUIRED (resubmit, fix or terminate). Such
// tasks are indexed across jobs (ListAwaitingTasks). REVIEWING is not
// among them: it waits for a reviewer's claim, which is a worker's.
func (s TaskState) AwaitsPerson() bool {
	return s == TaskReviewRequired || s == TaskApprovalRequired || s == TaskInterventionRequired
}

// TaskStates lists every real state, in numeric order.
func TaskStates() []TaskState {
	out := make([]TaskState, 0, numTaskStates-1)
	for s := TaskState(1); s < numTaskStates; s++ {
		out = append(out, s)
	}
	return out
}

// TaskOp is a command a person (or an operator's tool) gives a task. The
// names are those of the CLI and the HTTP API.
type TaskOp string

// The human commands.
const (
	TaskOpActivate  TaskOp = "activate"
	TaskOpConfig    TaskOp = "config"
	TaskOpSuspend   TaskOp = "suspend"
	TaskOpResume    TaskOp = "resume"
	TaskOpCancel    TaskOp = "cancel"
	TaskOpStep      TaskOp = "step"
	TaskOpApprove   TaskOp = "approve"
	TaskOpReject    TaskOp = "reject"
	TaskOpResubmit  TaskOp = "resubmit"
	TaskOpFix       TaskOp = "fix"
	TaskOpTerminate TaskOp = "terminate"
)

// TaskOps lists the human commands in the order the docs give them.
func TaskOps() []TaskOp {
	return []TaskOp{TaskOpActivate, TaskOpConfig, TaskOpSuspend, TaskOpResume, TaskOpCancel, TaskOpStep,
		TaskOpApprove, TaskOpReject, TaskOpResubmit, TaskOpFix, TaskOpTerminate}
}

// taskOpEvents maps each human command to the event it writes.
var taskOpEvents = map[TaskOp]TaskEventType{
	TaskOpActivate: TaskEventActivated, TaskOpConfig: TaskEventConfigured, TaskOpSuspend: TaskEventSuspended,
	TaskOpResume: TaskEventResumed, TaskOpCancel: TaskEventCanceled, TaskOpStep: TaskEventReviewStarted,
	TaskOpApprove: TaskEventApproved, TaskOpReject: TaskEventRejected, TaskOpResubmit: TaskEventResubmitted,
	TaskOpFix: TaskEventFixed, TaskOpTerminate: TaskEventTerminated,
}

// Event returns the event op writes, or "" for an op this version does not
// know.
func (op TaskOp) Event() TaskEventType { return taskOpEvents[op] }

// taskEdge is one legal move: event Event takes a task in From to To.
type taskEdge struct {
	Event    TaskEventType
	From, To TaskState
}

// taskEdges is the task state machine as data. The set of (From, To) pairs
// it holds is the origin model's transition matrix plus the moves its text
// gives and its table leaves out (PAUSED, the stuck recoveries), as listed
// in docs/state-machines.md §4; transitions of the table are tested cell by
// cell against the docs' table (task_table_test.go). Anything not here is
// illegal.
var taskEdges = func() []taskEdge {
	var es []taskEdge
	add := func(ev TaskEventType, to TaskState, from ...TaskState) {
		for _, f := range from {
			es = append(es, taskEdge{ev, f, to})
		}
	}
	add(TaskEventCreated, TaskPending, TaskNone)
	add(TaskEventDrafted, TaskDraft, TaskNone)
	add(TaskEventConfigured, TaskDraft, TaskDraft)
	add(TaskEventActivated, TaskPending, TaskDraft)
	// Suspend from every active state, as the origin model's text says
	// ("any active state"): PAUSED too, which its matrix leaves out. The
	// lease of a RUNNING, PAUSED or REVIEWING task ends with it.
	add(TaskEventSuspended, TaskSuspended, TaskDraft, TaskPending, TaskRunning, TaskPaused, TaskReviewRequired,
		TaskReviewing, TaskApprovalRequired, TaskInterventionRequired)
	add(TaskEventResumed, TaskPending, TaskSuspended)
	add(TaskEventResumed, TaskRunning, TaskPaused)
	add(TaskEventCanceled, TaskCanceled, TaskDraft, TaskPending, TaskSuspended, TaskRunning, TaskPaused,
		TaskReviewRequired, TaskReviewing, TaskApprovalRequired, TaskInterventionRequired)
	add(TaskEventStarted, TaskRunning, TaskPending)
	add(TaskEventPaused, TaskPaused, TaskRunning)
	add(TaskEventOutput, TaskReviewRequired, TaskRunning)
	add(TaskEventReviewStarted, TaskReviewing, TaskReviewRequired)
	add(TaskEventReviewerLeased, TaskReviewing, TaskReviewing)
	add(TaskEventReviewed, TaskApprovalRequired, TaskReviewing)
	add(TaskEventReviewed, TaskInterventionRequired, TaskReviewing)
	add(TaskEventApproved, TaskSuccess, TaskApprovalRequired)
	add(TaskEventRejected, TaskPending, TaskApprovalRequired)
	add(TaskEventResubmitted, TaskPending, TaskInterventionRequired)
	add(TaskEventFixed, TaskReviewRequired, TaskInterventionRequired)
	add(TaskEventTerminated, TaskCanceled, TaskInterventionRequired)
	add(TaskEventLeaseExpired, TaskPending, TaskRunning, TaskPaused)
	add(TaskEventLeaseExpired, TaskReviewRequired, TaskReviewing)
	return es
}()

// TaskNext returns the state event ev leads to from state from, and whether
// that move is legal. For task_reviewed, whose target depends on the
// verdict, want names the target (TaskNone takes the first legal one).
func TaskNext(from TaskState, ev TaskEventType, want TaskState) (TaskState, bool) {
	for _, e := range taskEdges {
		if e.Event == ev && e.From == from && (want == TaskNone || e.To == want) {
			return e.To, true
		}
	}
	return from, false
}

// TaskTransitions returns the task transition matrix the engine enforces:
// for each state, the states it may move to, in numeric order. A move to
// the same state (config, a reviewer's lease) is not listed.
func TaskTransitions() map[TaskState][]TaskState {
	m := map[TaskState][]TaskState{}
	for _, e := range taskEdges {
		if e.From == TaskNone || e.From == e.To || slices.Contains(m[e.From], e.To) {
			continue
		}
		m[e.From] = append(m[e.From], e.To)
	}
	for s := range m {
		slices.Sort(m[s])
	}
	return m
}

// LegalTaskOps returns the human commands legal in state s, in the order of
// TaskOps.
func LegalTaskOps(s TaskState) []TaskOp {
	var out []TaskOp
	for _, op := range TaskOps() {
		if _, ok := TaskNext(s, taskOpEvents[op], TaskNone); ok {
			out = append(out, op)
		}
	}
	return out
}

// TaskOpTarget returns the state op leads to from s, and whether op is
// legal in s.
func TaskOpTarget(s TaskState, op TaskOp) (TaskState, bool) {
	ev, ok := taskOpEvents[op]
	if !ok {
		return s, false
	}
	return TaskNext(s, ev, TaskNone)
}

// HoldsLease reports whether t is held by a worker or a
// reviewer under a lease (RUNNING, PAUSED, or REVIEWING once a reviewer
// took it).
func (t *Task) HoldsLease() bool {
	switch t.State {
	case TaskRunning, TaskPaused:
		return true
	case TaskReviewing:
		return t.LeaseOwner != ""
	}
	return false
}
