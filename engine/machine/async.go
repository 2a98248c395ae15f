package machine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/heddlewf/heddle/engine"
)

func (a *applier) completeAsync(c *engine.CompleteAsync) (engine.Result, error) {
	l, err := a.load(c.Job)
	if err != nil {
		return nil, err
	}
	j := l.job
	if !strings.HasPrefix(j.Type, engine.ActivityTypePrefix) {
		return nil, engine.InvalidField("CompleteAsync", "Job", fmt.Sprintf("job %d is not an activity task (type %q)", j.ID, j.Type))
	}
	parked := (j.Status == engine.StatusParked || j.Status == engine.StatusWaiting) && j.Wait != nil && slices.Contains(j.Wait.Signals, engine.AsyncCompletionSignal)
	if (!parked && j.Status != engine.StatusRunning) || j.Attempt != c.Attempt {
		return nil, &engine.StaleAttemptError{Job: j.ID, Attempt: c.Attempt, Current: j.Attempt, Status: j.Status, Command: "CompleteAsync"}
	}
	switch {
	case c.ByID && !parked:
		// By id, only a task whose code handed its completion over (it
		// returned ErrResultPending and is parked): a running attempt is
		// its worker's, and only its task token may end it.
		return nil, &engine.StaleAttemptError{Job: j.ID, Attempt: c.Attempt, Current: j.Attempt, Status: j.Status, Command: "CompleteAsync", NotParked: true}
	case !c.ByID && !tokenMatches(j.LeaseDigest, c.Token):
		return nil, &engine.StaleAttemptError{Job: j.ID, Attempt: c.Attempt, Current: j.Attempt, Status: j.Status, Command: "CompleteAsync", WrongToken: true}
	}
	// A token may arrive before its activity has returned ErrResultPending
	// (the code handed it over first): the attempt is still Running, and
	// ends here; its worker's own writes are then refused as stale.
	if parked {
		if _, err := a.appendEvent(l, engine.Event{Type: engine.EventWaitCompleted, Reason: engine.ReasonAsyncCompletion}); err != nil {
			return nil, err
		}
		j.Attempt++
		if _, err := a.appendEvent(l, engine.Event{Type: engine.EventJobLeased, Attempt: j.Attempt, Name: engine.ReasonAsyncCompletion, LeaseExpiryMS: a.now}); err != nil {
			return nil, err
		}
	}
	end := engine.Event{Type: engine.EventJobCompleted, Attempt: j.Attempt, Payload: c.Result}
	if c.Error != nil {
		end = engine.Event{Type: engine.EventJobFailed, Attempt: j.Attempt, Payload: c.Error}
	}
	seq, err := a.appendEvent(l, end)
	if err != nil {
		return nil, err
	}
	if err := a.closed(l, &end); err != nil {
		return nil, err
	}
	a.save(l)
	return &engine.StatusResult{Job: j.ID, Status: j.Status, Seq: seq}, nil
}
