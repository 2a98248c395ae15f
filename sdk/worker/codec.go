package worker

import (
	"context"
	"fmt"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/converter"
)

// codecService applies the client's data converter (its codecs) at the
// worker's boundary with the engine: every value list the worker writes
// (a run's or a child's input, activity and workflow results, signals,
// markers of side effects and versions) is stored as dc's envelope, and
// every one it reads back is decoded before workflow code or replay sees
// it. Workflow and activity code, and replay's comparisons, work on plain
// JSON value lists as they do without a converter. Payloads that are not
// value lists (failures, which the engine reads, and heddle's own records
// such as update markers and attempt records) pass unchanged.
type codecService struct {
	engine.Service
	dc converter.DataConverter
}

// withDataConverter wraps e with dc's codecs; the default converter
// stores what heddle always stored, so e is returned as it is.
func withDataConverter(e engine.Service, dc converter.DataConverter) engine.Service {
	if dc == nil || dc == converter.GetDefaultDataConverter() {
		return e
	}
	return &codecService{Service: e, dc: dc}
}

// rawService returns the service a codecService wraps, for the optional
// interfaces (engine.TaskService, the HTTP client) asked of it.
func rawService(e engine.Service) engine.Service {
	if c, ok := e.(*codecService); ok {
		return c.Service
	}
	return e
}

func (c *codecService) enc(what string, b []byte) ([]byte, error) {
	out, err := converter.EncodeData(c.dc, b)
	if err != nil {
		return nil, fmt.Errorf("worker: data converter: encode %s: %w", what, err)
	}
	return out, nil
}

func (c *codecService) events(evs []engine.Event) ([]engine.Event, error) {
	if len(evs) == 0 {
		return evs, nil
	}
	out := make([]engine.Event, len(evs))
	for i, ev := range evs {
		var err error
		if ev.Payload, err = converter.DecodeData(c.dc, ev.Payload); err != nil {
			return nil, fmt.Errorf("worker: data converter: decode event %d (%s) of step %q: %w", ev.Seq, ev.Type, ev.Step, err)
		}
		if ev.LastResult, err = converter.DecodeData(c.dc, ev.LastResult); err != nil {
			return nil, fmt.Errorf("worker: data converter: decode the last result of event %d: %w", ev.Seq, err)
		}
		out[i] = ev
	}
	return out, nil
}

func (c *codecService) claimed(jobs []engine.ClaimedJob, err error) ([]engine.ClaimedJob, error) {
	if err != nil {
		return jobs, err
	}
	for i := range jobs {
		if jobs[i].Events, err = c.events(jobs[i].Events); err != nil {
			return nil, err
		}
	}
	return jobs, nil
}

func (c *codecService) page(p *engine.HistoryPage, err error) (*engine.HistoryPage, error) {
	if err != nil || p == nil {
		return p, err
	}
	out := *p
	if out.Events, err = c.events(p.Events); err != nil {
		return nil, err
	}
	return &out, nil
}

func (c *codecService) Claim(ctx context.Context, cl engine.Claim) ([]engine.ClaimedJob, error) {
	return c.claimed(c.Service.Claim(ctx, cl))
}

func (c *codecService) ClaimWait(ctx context.Context, cl engine.Claim) ([]engine.ClaimedJob, error) {
	return c.claimed(c.Service.ClaimWait(ctx, cl))
}

func (c *codecService) History(ctx context.Context, id engine.JobID, after uint64, limit int) (*engine.HistoryPage, error) {
	return c.page(c.Service.History(ctx, id, after, limit))
}

func (c *codecService) WatchHistory(ctx context.Context, id engine.JobID, after uint64, limit int) (*engine.HistoryPage, error) {
	return c.page(c.Service.WatchHistory(ctx, id, after, limit))
}

func (c *codecService) Effect(ctx context.Context, id engine.JobID, step string) (*engine.Effect, error) {
	ef, err := c.Service.Effect(ctx, id, step)
	if err != nil || ef == nil {
		return ef, err
	}
	out := *ef
	if out.Payload, err = converter.DecodeData(c.dc, ef.Payload); err != nil {
		return nil, fmt.Errorf("worker: data converter: decode the effect of step %q: %w", step, err)
	}
	return &out, nil
}

func (c *codecService) Create(ctx context.Context, cmd engine.CreateJob) (*engine.CreateResult, error) {
	var err error
	if cmd.Input, err = c.enc("a run's input", cmd.Input); err != nil {
		return nil, err
	}
	return c.Service.Create(ctx, cmd)
}

func (c *codecService) Append(ctx context.Context, cmd engine.AppendEvents) (*engine.AppendResult, error) {
	evs := make([]engine.NewEvent, len(cmd.Events))
	for i, ev := range cmd.Events {
		var err error
		if ev.Payload, err = c.enc(string(ev.Type), ev.Payload); err != nil {
			return nil, err
		}
		evs[i] = ev
	}
	cmd.Events = evs
	return c.Service.Append(ctx, cmd)
}

func (c *codecService) CommitStep(ctx context.Context, cmd engine.CommitStep) (*engine.AppendResult, error) {
	var err error
	if cmd.Payload, err = c.enc("step "+cmd.Step, cmd.Payload); err != nil {
		return nil, err
	}
	return c.Service.CommitStep(ctx, cmd)
}

func (c *codecService) EndStepAttempt(ctx context.Context, cmd engine.EndStepAttempt) (*engine.StepResult, error) {
	var err error
	if cmd.Payload, err = c.enc("step "+cmd.Step, cmd.Payload); err != nil {
		return nil, err
	}
	return c.Service.EndStepAttempt(ctx, cmd)
}

func (c *codecService) Signal(ctx context.Context, cmd engine.Signal) (*engine.SignalResult, error) {
	var err error
	if cmd.Payload, err = c.enc("signal "+cmd.Name, cmd.Payload); err != nil {
		return nil, err
	}
	return c.Service.Signal(ctx, cmd)
}

func (c *codecService) Complete(ctx context.Context, cmd engine.Complete) (*engine.StatusResult, error) {
	var err error
	if cmd.Result, err = c.enc("a result", cmd.Result); err != nil {
		return nil, err
	}
	return c.Service.Complete(ctx, cmd)
}

func (c *codecService) ContinueAsNew(ctx context.Context, cmd engine.ContinueAsNew) (*engine.CreateResult, error) {
	var err error
	if cmd.Input, err = c.enc("a continued run's input", cmd.Input); err != nil {
		return nil, err
	}
	return c.Service.ContinueAsNew(ctx, cmd)
}
