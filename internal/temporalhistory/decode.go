package temporalhistory

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/sdk/temporal"
)

// typeName is Temporal's WorkflowType and ActivityType messages.
type typeName struct {
	Name string `json:"name"`
}

type execution struct {
	WorkflowID string `json:"workflowId"`
	RunID      string `json:"runId"`
}

// The attributes read, per event type; fields heddle has no use for are
// ignored.
type (
	startedAttrs struct {
		WorkflowType         typeName  `json:"workflowType"`
		Input                *payloads `json:"input"`
		LastCompletionResult *payloads `json:"lastCompletionResult"`
	}
	resultAttrs struct {
		Result *payloads `json:"result"`
	}
	failedAttrs struct {
		Failure json.RawMessage `json:"failure"`
	}
	activityScheduledAttrs struct {
		ActivityType typeName `json:"activityType"`
	}
	activityEndAttrs struct {
		ScheduledEventID int64Field      `json:"scheduledEventId"`
		Result           *payloads       `json:"result"`
		Failure          json.RawMessage `json:"failure"`
		Details          *payloads       `json:"details"`
	}
	timerAttrs struct {
		TimerID string `json:"timerId"`
	}
	signaledAttrs struct {
		SignalName string    `json:"signalName"`
		Input      *payloads `json:"input"`
	}
	markerAttrs struct {
		MarkerName string               `json:"markerName"`
		Details    map[string]*payloads `json:"details"`
		Failure    json.RawMessage      `json:"failure"`
	}
	childInitiatedAttrs struct {
		WorkflowID   string   `json:"workflowId"`
		WorkflowType typeName `json:"workflowType"`
	}
	childEventAttrs struct {
		InitiatedEventID  int64Field      `json:"initiatedEventId"`
		WorkflowExecution execution       `json:"workflowExecution"`
		Result            *payloads       `json:"result"`
		Failure           json.RawMessage `json:"failure"`
		Details           *payloads       `json:"details"`
		WorkflowID        string          `json:"workflowId"`
	}
	signalExternalAttrs struct {
		SignalName string `json:"signalName"`
	}
	terminatedAttrs struct {
		Reason string `json:"reason"`
	}
)

// command is a workflow command of the history: the step heddle numbers it
// with, and the name replay matches against the code.
type command struct {
	step string
	name string
}

// Origin names the Temporal event a heddle event was mapped from.
type Origin struct {
	EventID   int64
	EventType string
}

// History is a Temporal history mapped onto heddle's events.
type History struct {
	Events []engine.Event
	// Origins[i] is the Temporal event Events[i] was mapped from.
	Origins []Origin
	// Issued holds the step of every command the history records, even
	// those heddle records no event for yet (a child initiated but not
	// started, an external signal not yet sent).
	Issued map[string]bool
}

// decoder maps the events of one history, in order.
type decoder struct {
	out     []engine.Event
	origins []Origin
	// nextStep numbers the commands in the order the code issued them,
	// as heddle's replay does: activities, timers, children, side effects,
	// local activities and external signals and cancels (GetVersion and
	// MutableSideEffect markers are keyed, not numbered).
	nextStep uint64
	byEvent  map[int64]command  // scheduled or initiated event id → its command
	timers   map[string]command // timer id → its command
}

// MaxBytes bounds the input of Decode. encoding/json, which reads it,
// bounds nesting at 10,000 levels and allocates in proportion to the
// input; this bounds the input, so that no history makes the decoder take
// more than a few times as much memory.
const MaxBytes = 256 << 20

// maxBytes is MaxBytes, lowered by tests.
var maxBytes = MaxBytes

// Decode reads a Temporal JSON history and returns the heddle history the
// same run would have recorded, as far as replay reads it: job_created,
// the commands' step events (numbered in the order the code issued them),
// signals, cancel requests and the run's end. Events of workflow tasks and
// of activity or child progress that heddle does not record are skipped.
// lastEventID > 0 stops after that event (Temporal's partial replay).
//
// An event heddle's model cannot express is an *EventError wrapping
// ErrUnmappable that names its id and type; malformed input wraps
// ErrMalformed, and so does input over MaxBytes.
func Decode(data []byte, lastEventID int64) (*History, error) {
	if len(data) > maxBytes {
		return nil, fmt.Errorf("%w: the input is %d bytes, over MaxBytes (%d)", ErrMalformed, len(data), maxBytes)
	}
	raws, err := readEvents(data)
	if err != nil {
		return nil, err
	}
	if raws[0].Type != "WorkflowExecutionStarted" {
		return nil, &EventError{EventID: raws[0].ID, EventType: raws[0].Type, Err: ErrMalformed,
			Detail: "the first event of a history must be WorkflowExecutionStarted"}
	}
	d := &decoder{byEvent: map[int64]command{}, timers: map[string]command{}}
	for i := range raws {
		ev := &raws[i]
		if lastEventID > 0 && ev.ID > lastEventID {
			break
		}
		if err := d.event(ev); err != nil {
			var ee *EventError
			if errors.As(err, &ee) {
				return nil, err
			}
			return nil, &EventError{EventID: ev.ID, EventType: ev.Type, Err: ErrMalformed, Detail: err.Error()}
		}
	}
	issued := make(map[string]bool, len(d.byEvent))
	for _, c := range d.byEvent {
		issued[c.step] = true
	}
	return &History{Events: d.out, Origins: d.origins, Issued: issued}, nil
}

func (d *decoder) emit(ev *rawEvent, e engine.Event) {
	e.Seq = uint64(len(d.out)) + 1
	e.AtMS = ev.AtMS
	d.out = append(d.out, e)
	d.origins = append(d.origins, Origin{EventID: ev.ID, EventType: ev.Type})
}

func (d *decoder) newCommand(id int64, name string) command {
	d.nextStep++
	c := command{step: strconv.FormatUint(d.nextStep, 10), name: name}
	d.byEvent[id] = c
	return c
}

func (d *decoder) commandOf(id int64Field, field string) (command, error) {
	c, ok := d.byEvent[int64(id)]
	if !ok {
		return command{}, fmt.Errorf("%s %d names no earlier scheduling event", field, id)
	}
	return c, nil
}

func unmappable(ev *rawEvent, why string) error {
	return &EventError{EventID: ev.ID, EventType: ev.Type, Err: ErrUnmappable, Detail: why}
}

// skipped are the event types that record no decision of the workflow code
// heddle's replay checks or feeds back.
var skipped = map[string]bool{
	"WorkflowTaskScheduled": true, "WorkflowTaskStarted": true, "WorkflowTaskCompleted": true,
	"WorkflowTaskTimedOut": true, "WorkflowTaskFailed": true,
	// An admitted update's request is read from its acceptance.
	"WorkflowExecutionUpdateAdmitted": true,
	"ActivityTaskStarted":             true, "ActivityTaskCancelRequested": true,
}

func (d *decoder) event(ev *rawEvent) error {
	if skipped[ev.Type] {
		return nil
	}
	if ev.Type != "WorkflowExecutionStarted" && ev.ID == 1 {
		return errors.New("not a start event")
	}
	attrs := ev.Attrs
	if len(attrs) == 0 || string(attrs) == "null" {
		attrs = json.RawMessage("{}")
	}
	read := func(v any) error {
		if err := json.Unmarshal(attrs, v); err != nil {
			return fmt.Errorf("%s: %w", attrsField(ev.Type), err)
		}
		return nil
	}
	switch ev.Type {
	case "WorkflowExecutionStarted":
		if ev.ID != 1 {
			return errors.New("a second WorkflowExecutionStarted")
		}
		var a startedAttrs
		if err := read(&a); err != nil {
			return err
		}
		if a.WorkflowType.Name == "" {
			return errors.New("workflowType.name is missing")
		}
		in, err := toJSONArray(a.Input)
		if err != nil {
			return fmt.Errorf("input: %w", err)
		}
		last, err := toJSONArray(a.LastCompletionResult)
		if err != nil {
			return fmt.Errorf("lastCompletionResult: %w", err)
		}
		d.emit(ev, engine.Event{Type: engine.EventJobCreated, Name: a.WorkflowType.Name, Payload: in, LastResult: last})
	case "ActivityTaskScheduled":
		var a activityScheduledAttrs
		if err := read(&a); err != nil {
			return err
		}
		c := d.newCommand(ev.ID, a.ActivityType.Name)
		d.emit(ev, engine.Event{Type: engine.EventActivityScheduled, Step: c.step, Name: c.name})
	case "ActivityTaskCompleted", "ActivityTaskFailed", "ActivityTaskTimedOut", "ActivityTaskCanceled":
		var a activityEndAttrs
		if err := read(&a); err != nil {
			return err
		}
		c, err := d.commandOf(a.ScheduledEventID, "scheduledEventId")
		if err != nil {
			return err
		}
		return d.ended(ev, c, engine.EventActivityCompleted, engine.EventActivityFailed, a.Result, a.Failure, a.Details)
	case "TimerStarted":
		var a timerAttrs
		if err := read(&a); err != nil {
			return err
		}
		c := d.newCommand(ev.ID, "")
		d.timers[a.TimerID] = c
		d.emit(ev, engine.Event{Type: engine.EventTimerScheduled, Step: c.step})
	case "TimerFired", "TimerCanceled":
		var a timerAttrs
		if err := read(&a); err != nil {
			return err
		}
		c, ok := d.timers[a.TimerID]
		if !ok {
			return fmt.Errorf("timerId %q names no earlier TimerStarted", truncate(a.TimerID))
		}
		if ev.Type == "TimerFired" {
			d.emit(ev, engine.Event{Type: engine.EventTimerFired, Name: c.step})
		} else {
			d.emit(ev, engine.Event{Type: engine.EventTimerCanceled, Step: c.step,
				Payload: sdkhook.EncodeFailure(temporal.NewCanceledError())})
		}
	case "WorkflowExecutionSignaled":
		var a signaledAttrs
		if err := read(&a); err != nil {
			return err
		}
		in, err := toJSONArray(a.Input)
		if err != nil {
			return fmt.Errorf("input: %w", err)
		}
		d.emit(ev, engine.Event{Type: engine.EventSignalReceived, Name: a.SignalName, Payload: in})
	case "WorkflowExecutionCancelRequested":
		d.emit(ev, engine.Event{Type: engine.EventCancelRequested})
	case "MarkerRecorded":
		var a markerAttrs
		if err := read(&a); err != nil {
			return err
		}
		return d.marker(ev, &a)
	case "StartChildWorkflowExecutionInitiated":
		var a childInitiatedAttrs
		if err := read(&a); err != nil {
			return err
		}
		d.newCommand(ev.ID, a.WorkflowType.Name)
	case "ChildWorkflowExecutionStarted":
		var a childEventAttrs
		if err := read(&a); err != nil {
			return err
		}
		c, err := d.commandOf(a.InitiatedEventID, "initiatedEventId")
		if err != nil {
			return err
		}
		rec, _ := json.Marshal(sdkhook.ChildStarted{WorkflowID: a.WorkflowExecution.WorkflowID, RunID: a.WorkflowExecution.RunID})
		d.emit(ev, engine.Event{Type: engine.EventChildScheduled, Step: c.step, Name: c.name, Payload: rec})
	case "StartChildWorkflowExecutionFailed":
		var a childEventAttrs
		if err := read(&a); err != nil {
			return err
		}
		c, err := d.commandOf(a.InitiatedEventID, "initiatedEventId")
		if err != nil {
			return err
		}
		d.emit(ev, engine.Event{Type: engine.EventChildFailed, Step: c.step, Name: c.name,
			Payload: sdkhook.EncodeFailure(&temporal.ChildWorkflowExecutionAlreadyStartedError{})})
	case "ChildWorkflowExecutionCompleted", "ChildWorkflowExecutionFailed", "ChildWorkflowExecutionCanceled",
		"ChildWorkflowExecutionTimedOut", "ChildWorkflowExecutionTerminated":
		var a childEventAttrs
		if err := read(&a); err != nil {
			return err
		}
		c, err := d.commandOf(a.InitiatedEventID, "initiatedEventId")
		if err != nil {
			return err
		}
		return d.ended(ev, c, engine.EventChildCompleted, engine.EventChildFailed, a.Result, a.Failure, a.Details)
	case "SignalExternalWorkflowExecutionInitiated":
		var a signalExternalAttrs
		if err := read(&a); err != nil {
			return err
		}
		d.newCommand(ev.ID, a.SignalName)
	case "RequestCancelExternalWorkflowExecutionInitiated":
		d.newCommand(ev.ID, "cancel")
	case "ExternalWorkflowExecutionSignaled", "SignalExternalWorkflowExecutionFailed",
		"ExternalWorkflowExecutionCancelRequested", "RequestCancelExternalWorkflowExecutionFailed":
		var a childEventAttrs
		if err := read(&a); err != nil {
			return err
		}
		c, err := d.commandOf(a.InitiatedEventID, "initiatedEventId")
		if err != nil {
			return err
		}
		e := engine.Event{Step: c.step, Name: c.name}
		switch ev.Type {
		case "ExternalWorkflowExecutionSignaled":
			e.Type = engine.EventSignalExternalSent
		case "ExternalWorkflowExecutionCancelRequested":
			e.Type = engine.EventCancelExternalRequested
		case "SignalExternalWorkflowExecutionFailed":
			e.Type = engine.EventSignalExternalFailed
		default:
			e.Type = engine.EventCancelExternalFailed
		}
		if strings.HasSuffix(ev.Type, "Failed") {
			e.Payload = sdkhook.EncodeFailure(&temporal.UnknownExternalWorkflowExecutionError{})
		}
		d.emit(ev, e)
	case "WorkflowExecutionUpdateAccepted":
		var a updateAcceptedAttrs
		if err := read(&a); err != nil {
			return err
		}
		return d.updateAccepted(ev, &a)
	case "WorkflowExecutionUpdateCompleted":
		var a updateCompletedAttrs
		if err := read(&a); err != nil {
			return err
		}
		return d.updateCompleted(ev, &a)
	case "WorkflowExecutionCompleted":
		var a resultAttrs
		if err := read(&a); err != nil {
			return err
		}
		res, err := toJSONArray(a.Result)
		if err != nil {
			return fmt.Errorf("result: %w", err)
		}
		d.emit(ev, engine.Event{Type: engine.EventJobCompleted, Payload: res})
	case "WorkflowExecutionFailed":
		var a failedAttrs
		if err := read(&a); err != nil {
			return err
		}
		p, err := failurePayload(a.Failure, errors.New("workflow failed"))
		if err != nil {
			return err
		}
		d.emit(ev, engine.Event{Type: engine.EventJobFailed, Payload: p})
	case "WorkflowExecutionContinuedAsNew":
		d.emit(ev, engine.Event{Type: engine.EventJobCompleted, Reason: engine.ReasonContinuedAsNew})
	case "WorkflowExecutionCanceled":
		d.emit(ev, engine.Event{Type: engine.EventJobCancelled})
	case "WorkflowExecutionTimedOut":
		d.emit(ev, engine.Event{Type: engine.EventJobTimedOut,
			Payload: sdkhook.EncodeFailure(temporal.NewTimeoutError(temporal.TimeoutTypeWorkflowRun, nil))})
	case "WorkflowExecutionTerminated":
		var a terminatedAttrs
		if err := read(&a); err != nil {
			return err
		}
		d.emit(ev, engine.Event{Type: engine.EventJobTerminated, Payload: sdkhook.EncodeFailure(sdkhook.NewTerminatedError(a.Reason))})
	default:
		return unmappable(ev, "heddle's history has no equivalent of this event type")
	}
	return nil
}

// ended maps the end of an activity or child: its result, or its failure
// (a timeout, a cancellation or the error it returned).
func (d *decoder) ended(ev *rawEvent, c command, done, failed engine.EventType, result *payloads, failure json.RawMessage, details *payloads) error {
	if strings.HasSuffix(ev.Type, "Completed") {
		res, err := toJSONArray(result)
		if err != nil {
			return fmt.Errorf("result: %w", err)
		}
		d.emit(ev, engine.Event{Type: done, Step: c.step, Name: c.name, Payload: res, Commit: true})
		return nil
	}
	var fallback error
	switch {
	case strings.HasSuffix(ev.Type, "Canceled"):
		vals, err := detailValues(details)
		if err != nil {
			return fmt.Errorf("details: %w", err)
		}
		fallback = temporal.NewCanceledError(vals...)
	case strings.HasSuffix(ev.Type, "TimedOut"):
		fallback = temporal.NewTimeoutError(temporal.TimeoutTypeStartToClose, nil)
	case strings.HasSuffix(ev.Type, "Terminated"):
		fallback = sdkhook.NewTerminatedError("terminated")
	default:
		fallback = errors.New("failed")
	}
	p, err := failurePayload(failure, fallback)
	if err != nil {
		return err
	}
	d.emit(ev, engine.Event{Type: failed, Step: c.step, Name: c.name, Payload: p, Commit: true})
	return nil
}
