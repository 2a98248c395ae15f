package machine

import "github.com/heddlewf/heddle/engine"

func (a *applier) configureJob(c *engine.ConfigureJob) (engine.Result, error) {
	l, err := a.resolve(c.Target)
	if err != nil {
		return nil, err
	}
	if l.job.Status != engine.StatusDraft {
		// Only a Draft job may be configured: once activated its code may
		// have run with the input it had.
		return nil, &engine.TransitionError{Job: l.job.ID, From: l.job.Status, Event: engine.EventJobConfigured}
	}
	seq, err := a.appendEvent(l, engine.Event{Type: engine.EventJobConfigured, Payload: c.Input})
	if err != nil {
		return nil, err
	}
	a.save(l)
	return &engine.StatusResult{Job: l.job.ID, Status: l.job.Status, Seq: seq}, nil
}
