package temporalhistory

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// jsonPayloads writes Temporal's Payloads for values, as protojson does.
func jsonPayloads(values ...any) string {
	var ps []string
	for _, v := range values {
		data, _ := json.Marshal(v)
		ps = append(ps, fmt.Sprintf(`{"metadata":{"encoding":%q},"data":%q}`,
			base64.StdEncoding.EncodeToString([]byte("json/plain")), base64.StdEncoding.EncodeToString(data)))
	}
	return `{"payloads":[` + strings.Join(ps, ",") + `]}`
}

const started = `{"eventId":"1","eventType":"EVENT_TYPE_WORKFLOW_EXECUTION_STARTED","workflowExecutionStartedEventAttributes":{"workflowType":{"name":"W"}}}`

func history(events ...string) []byte {
	return []byte(`{"events":[` + strings.Join(append([]string{started}, events...), ",") + `]}`)
}

func event(id int, typ, attrs string) string {
	field := strings.ToLower(typ[:1]) + typ[1:] + "EventAttributes"
	return fmt.Sprintf(`{"eventId":%d,"eventType":%q,%q:%s}`, id, typ, field, attrs)
}

// Each Temporal event maps onto the heddle event the same command records.
func TestDecodeMapsEvents(t *testing.T) {
	h, err := Decode(history(
		event(2, "WorkflowTaskScheduled", `{}`),
		event(3, "ActivityTaskScheduled", `{"activityId":"3","activityType":{"name":"A"},"input":`+jsonPayloads(1, "x")+`}`),
		event(4, "ActivityTaskStarted", `{"scheduledEventId":"3"}`),
		event(5, "ActivityTaskTimedOut", `{"scheduledEventId":"3","failure":{"message":"activity timeout","timeoutFailureInfo":{"timeoutType":"TIMEOUT_TYPE_START_TO_CLOSE"}}}`),
		event(6, "TimerStarted", `{"timerId":"t1","startToFireTimeout":"5s"}`),
		event(7, "TimerCanceled", `{"timerId":"t1"}`),
		event(8, "MarkerRecorded", `{"markerName":"MutableSideEffect","details":{"side-effect-id":`+jsonPayloads("cfg_8")+`,"data":`+jsonPayloads(map[string]int{"n": 2})+`,"mutable-side-effect-call-counter":`+jsonPayloads(3)+`}}`),
		event(9, "WorkflowExecutionCancelRequested", `{}`),
		event(10, "RequestCancelExternalWorkflowExecutionInitiated", `{"workflowExecution":{"workflowId":"x"}}`),
		event(11, "RequestCancelExternalWorkflowExecutionFailed", `{"initiatedEventId":10}`),
		event(12, "StartChildWorkflowExecutionInitiated", `{"workflowId":"c","workflowType":{"name":"C"}}`),
		event(13, "StartChildWorkflowExecutionFailed", `{"initiatedEventId":"12","workflowId":"c"}`),
		event(14, "WorkflowExecutionContinuedAsNew", `{}`),
	), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		typ        engine.EventType
		step, name string
		temporalID int64
	}{
		{engine.EventJobCreated, "", "W", 1},
		{engine.EventActivityScheduled, "1", "A", 3},
		{engine.EventActivityFailed, "1", "A", 5},
		{engine.EventTimerScheduled, "2", "", 6},
		{engine.EventTimerCanceled, "2", "", 7},
		{engine.EventMarkerRecorded, "k:mutable:cfg:3", "mutable_side_effect", 8},
		{engine.EventCancelRequested, "", "", 9},
		{engine.EventCancelExternalFailed, "3", "cancel", 11},
		{engine.EventChildFailed, "4", "C", 13},
		{engine.EventJobCompleted, "", "", 14},
	}
	if len(h.Events) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(h.Events), len(want), h.Events)
	}
	for i, w := range want {
		ev := h.Events[i]
		if ev.Seq != uint64(i)+1 || ev.Type != w.typ || ev.Step != w.step || ev.Name != w.name || h.Origins[i].EventID != w.temporalID {
			t.Errorf("event %d: %+v from %+v, want %+v", i, ev, h.Origins[i], w)
		}
	}
	var te *temporal.TimeoutError
	if err := sdkhook.DecodeFailure(h.Events[2].Payload); !errors.As(err, &te) || te.TimeoutType() != temporal.TimeoutTypeStartToClose {
		t.Errorf("activity timeout reads back as %v", err)
	}
	if string(h.Events[5].Payload) != `[{"n":2}]` {
		t.Errorf("mutable side effect payload %s", h.Events[5].Payload)
	}
	var ue *temporal.UnknownExternalWorkflowExecutionError
	if err := sdkhook.DecodeFailure(h.Events[7].Payload); !errors.As(err, &ue) {
		t.Errorf("cancel external failure reads back as %v", err)
	}
	if h.Events[9].Reason != engine.ReasonContinuedAsNew {
		t.Errorf("continue as new has reason %q", h.Events[9].Reason)
	}
}

// An accepted update is heddle's update signal and decision marker; its
// completion the outcome marker, with the result or the failure.
func TestDecodeUpdates(t *testing.T) {
	h, err := Decode(history(
		event(2, "WorkflowExecutionUpdateAdmitted", `{}`),
		event(3, "WorkflowExecutionUpdateAccepted", `{"acceptedRequest":{"meta":{"updateId":"u1"},"input":{"name":"add","args":`+jsonPayloads("apple", 2)+`}}}`),
		event(4, "WorkflowExecutionUpdateCompleted", `{"meta":{"updateId":"u1"},"outcome":{"success":`+jsonPayloads(3)+`}}`),
		event(5, "WorkflowExecutionUpdateCompleted", `{"meta":{"updateId":"u2"},"outcome":{"failure":{"message":"sold out","applicationFailureInfo":{"type":"Stock"}}}}`),
	), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Events) != 5 {
		t.Fatalf("%d events: %+v", len(h.Events), h.Events)
	}
	var req workflow.UpdateRequest
	if ev := h.Events[1]; ev.Type != engine.EventSignalReceived || ev.Name != workflow.UpdateSignalName ||
		json.Unmarshal(ev.Payload, &req) != nil || req.ID != "u1" || req.Name != "add" || string(req.Args) != `["apple",2]` {
		t.Fatalf("update request %+v: %+v", h.Events[1], req)
	}
	if ev := h.Events[2]; ev.Step != "k:update:u1:decision" || string(ev.Payload) != `{}` {
		t.Fatalf("decision %+v", ev)
	}
	var done, failed workflow.UpdateOutcome
	if json.Unmarshal(h.Events[3].Payload, &done) != nil || string(done.Result) != "[3]" || h.Events[3].Step != "k:update:u1:completed" {
		t.Fatalf("completion %+v", h.Events[3])
	}
	var app *temporal.ApplicationError
	if json.Unmarshal(h.Events[4].Payload, &failed) != nil || !errors.As(sdkhook.DecodeFailure(failed.Failure), &app) || app.Type() != "Stock" {
		t.Fatalf("failed completion %+v", h.Events[4])
	}
}

// Payloads become heddle's JSON array, or with a protobuf payload among
// them an envelope of the payloads that heddle's default converter reads;
// encodings heddle has no equivalent for are refused, naming the event.
func TestDecodePayloads(t *testing.T) {
	null := fmt.Sprintf(`{"payloads":[{"metadata":{"encoding":%q}},{"metadata":{"encoding":"binary/plain"},"data":"AQI="}]}`,
		base64.StdEncoding.EncodeToString([]byte("binary/null")))
	h, err := Decode(history(event(2, "WorkflowExecutionSignaled", `{"signalName":"s","input":`+null+`}`)), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(h.Events[1].Payload); got != `[null,"AQI="]` {
		t.Fatalf("payload %s", got)
	}
	proto := fmt.Sprintf(`{"payloads":[{"metadata":{"encoding":%q,"messageType":%q},"data":%q},{"metadata":{"encoding":"binary/plain"},"data":"AQI="}]}`,
		base64.StdEncoding.EncodeToString([]byte("json/protobuf")), base64.StdEncoding.EncodeToString([]byte("google.protobuf.StringValue")),
		base64.StdEncoding.EncodeToString([]byte(`"hi"`)))
	h, err = Decode(history(event(2, "WorkflowExecutionSignaled", `{"signalName":"s","input":`+proto+`}`)), 0)
	if err != nil {
		t.Fatal(err)
	}
	var (
		sv  *wrapperspb.StringValue
		bin []byte
	)
	if err := converter.Decode(h.Events[1].Payload, &sv, &bin); err != nil || sv.GetValue() != "hi" || string(bin) != "\x01\x02" {
		t.Fatalf("protobuf payload %s decoded to %v %v (%v)", h.Events[1].Payload, sv, bin, err)
	}
	sealed := fmt.Sprintf(`{"payloads":[{"metadata":{"encoding":%q},"data":"AQI="}]}`,
		base64.StdEncoding.EncodeToString([]byte("binary/encrypted")))
	_, err = Decode(history(event(2, "WorkflowExecutionSignaled", `{"signalName":"s","input":`+sealed+`}`)), 0)
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "event 2 (WorkflowExecutionSignaled)") ||
		!strings.Contains(err.Error(), "binary/encrypted") {
		t.Fatalf("an encrypted payload: %v", err)
	}
}

// Malformed input is refused with an error saying what is wrong.
func TestDecodeRejectsMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, input, want string
		is                error
	}{
		{"empty", ``, "JSON object", ErrMalformed},
		{"array", `[]`, "JSON object", ErrMalformed},
		{"no events", `{"events":[]}`, "missing or empty", ErrMalformed},
		{"gap", string(history(event(3, "TimerStarted", `{"timerId":"1"}`))), "eventId 3 where 2 was due", ErrMalformed},
		{"bad type", string(history(event(2, "timer_started", `{}`))), "not an event type", ErrMalformed},
		{"first not started", `{"events":[{"eventId":1,"eventType":"TimerStarted"}]}`, "must be WorkflowExecutionStarted", ErrMalformed},
		{"unknown timer", string(history(event(2, "TimerFired", `{"timerId":"9"}`))), `timerId "9"`, ErrMalformed},
		{"unknown activity", string(history(event(2, "ActivityTaskCompleted", `{"scheduledEventId":"7"}`))), "scheduledEventId 7", ErrMalformed},
		{"unknown marker", string(history(event(2, "MarkerRecorded", `{"markerName":"Custom"}`))), `marker "Custom"`, ErrUnmappable},
		{"version without id", string(history(event(2, "MarkerRecorded", `{"markerName":"Version","details":{}}`))), `"change-id"`, ErrMalformed},
		{"update without id", string(history(event(2, "WorkflowExecutionUpdateAccepted", `{}`))), "meta.updateId", ErrMalformed},
		{"search attributes", string(history(event(2, "UpsertWorkflowSearchAttributes", `{}`))), "event 2 (UpsertWorkflowSearchAttributes)", ErrUnmappable},
		{"nexus", string(history(event(2, "NexusOperationScheduled", `{}`))), "event 2 (NexusOperationScheduled)", ErrUnmappable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.input), 0)
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %v containing %q", err, tc.is, tc.want)
			}
		})
	}
}

// lastEventID cuts the history after that event.
func TestDecodeLastEventID(t *testing.T) {
	data := history(
		event(2, "TimerStarted", `{"timerId":"1"}`),
		event(3, "TimerFired", `{"timerId":"1"}`),
	)
	h, err := Decode(data, 2)
	if err != nil || len(h.Events) != 2 {
		t.Fatalf("%d events, %v", len(h.Events), err)
	}
}

// FuzzDecode: the decoder never panics, and what it accepts is a history
// replay can take: seqs from 1 without gaps, job_created first, every
// event's origin a Temporal event of the input, in order (an update's
// acceptance makes two).
func FuzzDecode(f *testing.F) {
	for _, path := range []string{"../../sdk/worker/testdata/temporal_greeting.json", "../../sdk/worker/testdata/temporal_order.json"} {
		if data, err := os.ReadFile(path); err == nil {
			f.Add(data)
		}
	}
	f.Add(history(event(2, "MarkerRecorded", `{"markerName":"Version","details":{"change-id":`+jsonPayloads("c")+`,"version":`+jsonPayloads(2)+`}}`)))
	f.Add([]byte(`{"events":[{"eventId":"1","eventType":"WorkflowExecutionStarted"}]}`))
	f.Add([]byte(`{"events":null}`))
	f.Add(history(event(2, "WorkflowExecutionSignaled", `{"signalName":"s","input":{"payloads":[{"metadata":{"encoding":"anNvbi9wcm90b2J1Zg==","messageType":"x.Y"},"data":"Imhpig=="},{"metadata":{"encoding":"binary/plain"},"data":"AQI="}]}}`)))
	f.Add([]byte(`{"events":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}`))
	f.Add(history(event(2, "MarkerRecorded", `{"markerName":"Version","details":{"change-id":`+strings.Repeat("[", 200)+strings.Repeat("]", 200)+`}}`)))
	f.Add(history(event(2, "WorkflowExecutionSignaled", `{"signalName":"s","input":{"payloads":[{"metadata":{"encoding":"anNvbi9wbGFpbg=="},"data":"`+strings.Repeat("W1tb", 3000)+`"}]}}`)))
	f.Add(history(event(2, "WorkflowExecutionUpdateAccepted", `{"acceptedRequest":{"meta":{"updateId":"u"},"input":{"name":"n","args":`+jsonPayloads(1)+`}}}`),
		event(3, "WorkflowExecutionUpdateCompleted", `{"meta":{"updateId":"u"},"outcome":{"failure":{"message":"no"}}}`)))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := Decode(data, 0)
		if err != nil {
			var ee *EventError
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnmappable) && !errors.As(err, &ee) {
				t.Fatalf("an error of no sentinel: %v", err)
			}
			return
		}
		if len(h.Events) == 0 || h.Events[0].Type != engine.EventJobCreated || len(h.Origins) != len(h.Events) {
			t.Fatalf("accepted history is not one: %+v", h)
		}
		for i, ev := range h.Events {
			if ev.Seq != uint64(i)+1 {
				t.Fatalf("event %d has seq %d", i, ev.Seq)
			}
			if i > 0 && h.Origins[i].EventID < h.Origins[i-1].EventID {
				t.Fatalf("origins out of order: %+v", h.Origins)
			}
		}
	})
}

// Decode refuses input over MaxBytes before reading any of it.
func TestDecodeRefusesOversizedInput(t *testing.T) {
	in := history(event(2, "WorkflowExecutionSignaled", `{"signalName":"s"}`))
	if _, err := Decode(in, 0); err != nil {
		t.Fatalf("a history under the limit: %v", err)
	}
	maxBytes = len(in) - 1
	t.Cleanup(func() { maxBytes = MaxBytes })
	if _, err := Decode(in, 0); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "over MaxBytes") {
		t.Fatalf("a history over the limit: %v", err)
	}
}
