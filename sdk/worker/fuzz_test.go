package worker

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/converter"
)

// FuzzReadHistoryJSON: the history reader never panics, and a history it
// accepts exports and reads back to the same events.
func FuzzReadHistoryJSON(f *testing.F) {
	var seed bytes.Buffer
	_ = ExportHistoryJSON(&seed, []engine.Event{
		{Seq: 1, Type: engine.EventJobCreated, Name: "Order", Payload: []byte(`["x"]`), AtMS: 5},
		{Seq: 2, Type: "activity_completed", Step: "1", Name: "A", Payload: []byte{0xff, 0x00}, Commit: true},
	})
	f.Add(seed.Bytes())
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"seq":1,"type":"job_created","payloadBase64":"!!"}]`))
	f.Add([]byte(`{"seq":1}`))
	f.Add([]byte(`[{"seq":1,"type":"job_created","payload":` + string(deepJSON(200)) + `}]`))
	f.Add([]byte(`[{"seq":1,"type":"job_created","payloadBase64":"` + strings.Repeat("QUFB", 2000) + `"}]`))
	f.Add(deepJSON(300))
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, err := ReadHistoryJSON(bytes.NewReader(data))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := ExportHistoryJSON(&out, evs); err != nil {
			t.Fatalf("an accepted history does not export: %v", err)
		}
		again, err := ReadHistoryJSON(&out)
		if err != nil || !reflect.DeepEqual(again, evs) {
			t.Fatalf("round trip changed the history: %v", err)
		}
	})
}

// FuzzHistoryFromJSON: the reader of every history form (ExportHistoryJSON's
// array, the CLI's document, the HTTP API's page, Temporal's export) never
// panics, and what it accepts runs seq 1, 2, 3, … as replay needs.
func FuzzHistoryFromJSON(f *testing.F) {
	f.Add([]byte(`{"workflow_id":"w","job_id":1,"events":[{"seq":1,"type":"job_created","at":"2026-01-02T03:04:05Z","name":"W","payload":["x"]}]}`))
	f.Add([]byte(`{"events":[{"seq":1,"type":"job_created","at_ms":5,"payload":"WyJ4Il0="}],"next":0}`))
	f.Add([]byte(`{"events":[{"eventId":"1","eventType":"EVENT_TYPE_WORKFLOW_EXECUTION_STARTED","workflowExecutionStartedEventAttributes":{"workflowType":{"name":"W"}}}]}`))
	f.Add([]byte(`[{"seq":1,"type":"job_created"}]`))
	f.Add([]byte(`{"job_id":1,"events":[{"seq":1,"type":"x","payload":[1],"payload_base64":"AA=="}]}`))
	f.Add([]byte(`{"job_id":1,"events":[{"seq":1,"type":"job_created","payload":` + string(deepJSON(200)) + `}]}`))
	f.Add([]byte(`{"events":[{"eventId":"1","eventType":"EVENT_TYPE_WORKFLOW_EXECUTION_STARTED","workflowExecutionStartedEventAttributes":{"input":` + string(deepJSON(200)) + `}}]}`))
	f.Add([]byte(`{"events":` + string(deepJSON(300)) + `}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, err := HistoryFromJSON(bytes.NewReader(data), HistoryJSONOptions{})
		if err != nil {
			return
		}
		for i, ev := range evs {
			if ev.Seq != uint64(i)+1 {
				t.Fatalf("accepted event %d has seq %d", i, ev.Seq)
			}
		}
	})
}

// FuzzQueryArgs (from engine/httpapi, where queryArgs was before queries
// travelled as bytes): the worker splits query arguments into values that encode
// back into the same list: the same JSON array, or for an envelope of
// payloads (a []byte argument) the same payloads.
func FuzzQueryArgs(f *testing.F) {
	f.Add([]byte(`[1, "two", {"three": 3}]`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"a": 1}`))
	f.Add([]byte(`{"heddle_payloads":[{"metadata":{"encoding":"YmluYXJ5L3BsYWlu"},"data":"AAEC"},{"metadata":{"encoding":"anNvbi9wbGFpbg=="},"data":"Mg=="}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		args, err := queryArgs(b)
		if err != nil || len(args) == 0 {
			return
		}
		again, err := converter.Encode(args...)
		if converter.IsEnvelope(b) {
			// An envelope's json/plain payloads may hold bytes that are
			// not JSON, which Encode refuses; what it writes holds the
			// same payloads.
			if err == nil {
				back, err := queryArgs(again)
				if err != nil || len(back) != len(args) {
					t.Fatalf("arguments of %q came back as %q: %v", b, again, err)
				}
			}
			return
		}
		if err != nil {
			t.Fatalf("arguments of %q do not encode again: %v", b, err)
		}
		var x, y any
		if json.Unmarshal(b, &x) != nil || json.Unmarshal(again, &y) != nil || !reflect.DeepEqual(x, y) {
			t.Fatalf("%q came back as %q", b, again)
		}
	})
}
