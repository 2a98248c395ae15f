package engine

import "context"

// EventJobConfigured records a Draft job's new input (ConfigureJob). It is
// not a status event: the job stays Draft. The SDK's replay runs the
// workflow with the input of the last one written before the activation.
const EventJobConfigured EventType = "job_configured"

// ConfigureJob changes the input of a Draft job before it is activated
// (docs/state-machines.md §4); it is refused once the job left Draft.
type ConfigureJob struct {
	Header
	Target
	Input []byte `json:"input,omitempty" msgpack:"in,omitempty"`
}

func (*ConfigureJob) Kind() CommandKind { return KindConfigureJob }

func (c *ConfigureJob) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.target(c.Target)
	ch.payload("Input", c.Input)
	return ch.err
}

func (a *applier) configureJob(c *ConfigureJob) (Result, error) {
	l, err := a.resolve(c.Target)
	if err != nil {
		return nil, err
	}
	if l.job.Status != StatusDraft {
		// Only a Draft job may be configured: once activated its code may
		// have run with the input it had.
		return nil, &TransitionError{Job: l.job.ID, From: l.job.Status, Event: EventJobConfigured}
	}
	seq, err := a.appendEvent(l, Event{Type: EventJobConfigured, Payload: c.Input})
	if err != nil {
		return nil, err
	}
	a.save(l)
	return &StatusResult{Job: l.job.ID, Status: l.job.Status, Seq: seq}, nil
}

// ConfigureJob changes a Draft job's input.
func (e *Engine) ConfigureJob(ctx context.Context, c ConfigureJob) (*StatusResult, error) {
	return propose[*StatusResult](ctx, e, &c)
}
