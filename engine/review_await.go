package engine

import "fmt"

// AwaitingQuery selects tasks awaiting a person (ReviewState.AwaitsPerson)
// across every job. The zero value lists the first 100 of them.
type AwaitingQuery struct {
	// State keeps the tasks in that state only; ReviewNone keeps every state
	// that awaits a person. Any other state is refused.
	State ReviewState
	// Queue keeps the tasks whose work queue or review queue is Queue; ""
	// keeps all.
	Queue string
	// Type keeps the tasks whose work type or reviewer type is Type; ""
	// keeps all.
	Type string
	// After is the cursor: only tasks with a larger id are listed.
	After ReviewID
	// Limit bounds the page (0 means 100; at most MaxPage).
	Limit int
}

// Validate reports what is wrong with q, naming the field.
func (q AwaitingQuery) Validate() error {
	if q.State != ReviewNone && !q.State.AwaitsPerson() {
		return fmt.Errorf("%w: state %s does not await a person (REVIEW_REQUIRED, APPROVAL_REQUIRED or INTERVENTION_REQUIRED)", ErrInvalidCommand, q.State)
	}
	if q.Limit < 0 || q.Limit > MaxPage {
		return fmt.Errorf("%w: task list limit %d is not in [0, %d]", ErrInvalidCommand, q.Limit, MaxPage)
	}
	return nil
}

// AwaitingPage is one page of ListAwaitingReviews, in task-id (creation)
// order.
type AwaitingPage struct {
	Reviews []Review `json:"tasks" msgpack:"tasks"`
	// Next is the cursor of the following page; 0 at the end.
	Next ReviewID `json:"next" msgpack:"next"`
}
