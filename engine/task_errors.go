package engine

import (
	"fmt"
	"strings"
)

// Stable codes of the task errors.
const (
	TaskStateCode = "HDL-ENGINE-0020"
	StaleTaskCode = "HDL-ENGINE-0021"
)

// TaskStateError details ErrIllegalTaskCommand: the command, the task's
// current state and the human commands legal in it, so a person (or the
// HTTP API's 409) can say what may be done instead.
type TaskStateError struct {
	Task    TaskID
	Command string
	State   TaskState
	Legal   []TaskOp
}

func (e *TaskStateError) Error() string {
	legal := make([]string, len(e.Legal))
	for i, op := range e.Legal {
		legal[i] = string(op)
	}
	l := strings.Join(legal, ", ")
	if l == "" {
		l = "none"
	}
	return fmt.Sprintf("engine: illegal task command: %s on task %d in state %s (legal: %s) [%s]",
		e.Command, e.Task, e.State, l, TaskStateCode)
}

func (e *TaskStateError) Unwrap() error { return ErrIllegalTaskCommand }

func (e *TaskStateError) Code() string { return TaskStateCode }

// StaleTaskError details ErrStaleTaskAttempt.
type StaleTaskError struct {
	Task    TaskID
	Attempt uint64    // the writer's
	Current uint64    // the task's current attempt
	State   TaskState // the task's state
	Command string
	// WrongToken: the attempt is the current one, but the write did not
	// carry its lease token.
	WrongToken bool
}

func (e *StaleTaskError) Error() string {
	if e.WrongToken {
		return fmt.Sprintf("engine: stale task attempt: %s on task %d by attempt %d without the lease token of that attempt: the writer does not hold the lease (task is %s) [%s]",
			e.Command, e.Task, e.Attempt, e.State, StaleTaskCode)
	}
	return fmt.Sprintf("engine: stale task attempt: %s on task %d by attempt %d, task is %s at attempt %d [%s]",
		e.Command, e.Task, e.Attempt, e.State, e.Current, StaleTaskCode)
}

func (e *StaleTaskError) Unwrap() error { return ErrStaleTaskAttempt }

func (e *StaleTaskError) Code() string { return StaleTaskCode }
