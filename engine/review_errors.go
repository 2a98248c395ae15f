package engine

import (
	"fmt"
	"strings"
)

// Stable codes of the task errors.
const (
	ReviewStateCode = "HDL-ENGINE-0020"
	StaleReviewCode = "HDL-ENGINE-0021"
)

// ReviewStateError details ErrIllegalReviewCommand: the command, the task's
// current state and the human commands legal in it, so a person (or the
// HTTP API's 409) can say what may be done instead.
type ReviewStateError struct {
	Review  ReviewID
	Command string
	State   ReviewState
	Legal   []ReviewOp
}

func (e *ReviewStateError) Error() string {
	legal := make([]string, len(e.Legal))
	for i, op := range e.Legal {
		legal[i] = string(op)
	}
	l := strings.Join(legal, ", ")
	if l == "" {
		l = "none"
	}
	return fmt.Sprintf("engine: illegal task command: %s on task %d in state %s (legal: %s) [%s]",
		e.Command, e.Review, e.State, l, ReviewStateCode)
}

func (e *ReviewStateError) Unwrap() error { return ErrIllegalReviewCommand }

func (e *ReviewStateError) Code() string { return ReviewStateCode }

// StaleReviewError details ErrStaleReviewAttempt.
type StaleReviewError struct {
	Review  ReviewID
	Attempt uint64      // the writer's
	Current uint64      // the task's current attempt
	State   ReviewState // the task's state
	Command string
	// WrongToken: the attempt is the current one, but the write did not
	// carry its lease token.
	WrongToken bool
}

func (e *StaleReviewError) Error() string {
	if e.WrongToken {
		return fmt.Sprintf("engine: stale task attempt: %s on task %d by attempt %d without the lease token of that attempt: the writer does not hold the lease (task is %s) [%s]",
			e.Command, e.Review, e.Attempt, e.State, StaleReviewCode)
	}
	return fmt.Sprintf("engine: stale task attempt: %s on task %d by attempt %d, task is %s at attempt %d [%s]",
		e.Command, e.Review, e.Attempt, e.State, e.Current, StaleReviewCode)
}

func (e *StaleReviewError) Unwrap() error { return ErrStaleReviewAttempt }

func (e *StaleReviewError) Code() string { return StaleReviewCode }
