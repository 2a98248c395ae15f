package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// codecService applies the client's data converter (its codecs) and its
// failure converter at the worker's boundary with the engine: every value list the worker writes
// (a run's or a child's input, activity and workflow results, signals,
// markers of side effects and versions) is stored as dc's envelope, and
// every one it reads back is decoded before workflow code or replay sees
// it. Three of heddle's records hold a value list inside them, which is
// encoded in place: an activity try's heartbeat details (in its
// activity_attempt_failed record), an update's arguments (in its signal)
// and an update's result (in its completion marker). Workflow and activity code, and replay's comparisons, work on plain
// JSON value lists as they do without a converter. Payloads that are not
// value lists (failures, which the engine reads, and heddle's own records
// such as update markers and attempt records) pass unchanged.
//
// The failure converter works the same way on failures: every failure the
// worker writes (a run's, an activity's or a child's, an update's
// rejection or error in its markers, a retried run's) is stored as fc
// makes it, and every one it reads back (the failed steps of a history,
// a failed effect, update markers) is turned back into heddle's own form,
// through the errors fc returns, before workflow code sees it. A failed
// try's attempt record keeps the message fc stores.
type codecService struct {
	engine.Service
	dc converter.DataConverter
	fc converter.FailureConverter // nil: failures are stored in heddle's own form
}

// dataConverterSource is implemented by sdk/client's client: the data
// and failure converters its workers store payloads with.
type dataConverterSource interface {
	DataConverter() converter.DataConverter
	FailureConverter() converter.FailureConverter
}

// withDataConverter wraps e with dc's codecs and fc; the default
// converters store what heddle always stored, so e is returned as it is.
func withDataConverter(e engine.Service, dc converter.DataConverter, fc converter.FailureConverter) engine.Service {
	if dc == converter.GetDefaultDataConverter() {
		dc = nil
	}
	if fc == temporal.GetDefaultFailureConverter() {
		fc = nil
	}
	if dc == nil && fc == nil {
		return e
	}
	return &codecService{Service: e, dc: dc, fc: fc}
}

// failureEvents are the step events whose payload is a failure.
var failureEvents = map[engine.EventType]bool{
	engine.EventActivityFailed: true, engine.EventChildFailed: true,
	engine.EventSignalExternalFailed: true, engine.EventCancelExternalFailed: true,
}

// isUpdateMarker reports the markers whose payload is a
// workflow.UpdateOutcome, whose Failure is a failure.
func isUpdateMarker(typ engine.EventType, name string) bool {
	return typ == engine.EventMarkerRecorded && (name == "update_decision" || name == "update_completed")
}

// toStored turns a failure of heddle's own form into fc's.
func (c *codecService) toStored(b []byte) []byte { return sdkhook.FailureToStored(c.fc, b) }

// fromStored turns a failure fc stored into heddle's own form.
func (c *codecService) fromStored(b []byte) []byte { return sdkhook.FailureFromStored(c.fc, b) }

// failures applies g (toStored or fromStored) to the failures a payload
// of an event of type typ named name holds; writing says the payload is
// being written, when an attempt record's message is stored as fc stores
// messages.
func (c *codecService) failures(typ engine.EventType, name string, b []byte, writing bool, g func([]byte) []byte) []byte {
	if c.fc == nil || len(b) == 0 {
		return b
	}
	switch {
	case failureEvents[typ]:
		return g(b)
	case isUpdateMarker(typ, name):
		out, _ := inside(b, func(r *workflow.UpdateOutcome) *[]byte { return &r.Failure }, func(f []byte) ([]byte, error) {
			if len(f) == 0 {
				return f, nil
			}
			return g(f), nil
		})
		return out
	case typ == engine.EventActivityAttemptFailed && writing:
		var rec attemptRecord
		if json.Unmarshal(b, &rec) != nil {
			return b
		}
		if f := c.fc.ErrorToFailure(errors.New(rec.Message)); f != nil && f.Message != rec.Message {
			rec.Message = f.Message
			if out, err := json.Marshal(&rec); err == nil {
				return out
			}
		}
	}
	return b
}

// rawService returns the service a codecService wraps, for the optional
// interfaces (engine.ReviewService, engine.QueryServer,
// engine.CancelSafeClaimer) asked of it.
func rawService(e engine.Service) engine.Service {
	if c, ok := e.(*codecService); ok {
		return c.Service
	}
	return e
}

func (c *codecService) enc(what string, b []byte) ([]byte, error) {
	return c.encEvent(what, "", "", b)
}

// encEvent encodes the payload of an event of type typ named name.
func (c *codecService) encEvent(what string, typ engine.EventType, name string, b []byte) ([]byte, error) {
	out, err := c.transform(typ, name, b, func(v []byte) ([]byte, error) { return converter.EncodeData(c.dc, v) })
	if err != nil {
		return nil, fmt.Errorf("worker: data converter: encode %s: %w", what, err)
	}
	return c.failures(typ, name, out, true, c.toStored), nil
}

// transform applies f to the value list of a payload: the payload itself,
// or the one inside the records that hold one.
func (c *codecService) transform(typ engine.EventType, name string, b []byte, f func([]byte) ([]byte, error)) ([]byte, error) {
	switch {
	case typ == engine.EventActivityAttemptFailed:
		return inside(b, func(r *attemptRecord) *[]byte { return &r.Details }, f)
	case (typ == engine.EventSignalReceived || typ == "") && name == workflow.UpdateSignalName:
		return inside(b, func(r *workflow.UpdateRequest) *[]byte { return &r.Args }, f)
	case typ == engine.EventMarkerRecorded && name == "update_completed":
		return inside(b, func(r *workflow.UpdateOutcome) *[]byte { return &r.Result }, f)
	}
	return f(b)
}

// inside applies f to the value list field gives of the record b holds,
// and writes the record again; a payload that is not such a record, or
// whose field f leaves as it is, is returned unchanged.
func inside[T any](b []byte, field func(*T) *[]byte, f func([]byte) ([]byte, error)) ([]byte, error) {
	var rec T
	if len(b) == 0 || json.Unmarshal(b, &rec) != nil {
		return b, nil
	}
	p := field(&rec)
	out, err := f(*p)
	if err != nil || bytes.Equal(out, *p) {
		return b, err
	}
	*p = out
	return json.Marshal(&rec)
}

func (c *codecService) events(evs []engine.Event) ([]engine.Event, error) {
	if len(evs) == 0 {
		return evs, nil
	}
	out := make([]engine.Event, len(evs))
	for i, ev := range evs {
		var err error
		ev.Payload = c.failures(ev.Type, ev.Name, ev.Payload, false, c.fromStored)
		if ev.Payload, err = c.transform(ev.Type, ev.Name, ev.Payload, c.decode); err != nil {
			return nil, fmt.Errorf("worker: data converter: decode event %d (%s) of step %q: %w", ev.Seq, ev.Type, ev.Step, err)
		}
		if ev.LastResult, err = converter.DecodeData(c.dc, ev.LastResult); err != nil {
			return nil, fmt.Errorf("worker: data converter: decode the last result of event %d: %w", ev.Seq, err)
		}
		out[i] = ev
	}
	return out, nil
}

func (c *codecService) decode(b []byte) ([]byte, error) { return converter.DecodeData(c.dc, b) }

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
	if ef.Failed {
		out.Payload = c.fromStored(ef.Payload)
		return &out, nil
	}
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

// newEvents encodes the payloads of events a command appends, in a copy.
func (c *codecService) newEvents(in []engine.NewEvent) ([]engine.NewEvent, error) {
	if len(in) == 0 {
		return in, nil
	}
	evs := make([]engine.NewEvent, len(in))
	for i, ev := range in {
		var err error
		if ev.Payload, err = c.encEvent(string(ev.Type), ev.Type, ev.Name, ev.Payload); err != nil {
			return nil, err
		}
		evs[i] = ev
	}
	return evs, nil
}

func (c *codecService) Append(ctx context.Context, cmd engine.AppendEvents) (*engine.AppendResult, error) {
	var err error
	if cmd.Events, err = c.newEvents(cmd.Events); err != nil {
		return nil, err
	}
	return c.Service.Append(ctx, cmd)
}

func (c *codecService) Wait(ctx context.Context, cmd engine.Wait) (*engine.WaitResult, error) {
	var err error
	if cmd.Events, err = c.newEvents(cmd.Events); err != nil {
		return nil, err
	}
	return c.Service.Wait(ctx, cmd)
}

func (c *codecService) CommitStep(ctx context.Context, cmd engine.CommitStep) (*engine.AppendResult, error) {
	var err error
	if cmd.Payload, err = c.encEvent("step "+cmd.Step, cmd.Type, cmd.Name, cmd.Payload); err != nil {
		return nil, err
	}
	return c.Service.CommitStep(ctx, cmd)
}

func (c *codecService) Fail(ctx context.Context, cmd engine.Fail) (*engine.StatusResult, error) {
	cmd.Error = c.toStored(cmd.Error)
	return c.Service.Fail(ctx, cmd)
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
	if cmd.Payload, err = c.encEvent("signal "+cmd.Name, "", cmd.Name, cmd.Payload); err != nil {
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
	cmd.Failure = c.toStored(cmd.Failure)
	return c.Service.ContinueAsNew(ctx, cmd)
}
