package worker

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/heddlewf/heddle/engine"
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
