package worker

import (
	"bytes"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

func deepJSON(depth int) []byte {
	return append(bytes.Repeat([]byte("["), depth), bytes.Repeat([]byte("]"), depth)...)
}

// An exported history embeds a payload as JSON only when it is nested at
// most 32 levels: the document is indented, and before this bound a payload
// of 20 KB nested 9,990 levels deep made a document of 200 MB, while one
// nested 10,000 levels made ExportHistoryJSON fail ("exceeded max depth").
// Deeper payloads go in payloadBase64, and the history reads back exactly.
func TestExportHistoryJSONDeepPayloads(t *testing.T) {
	hist := []engine.Event{
		{Seq: 1, Type: engine.EventJobCreated, Name: "Deep", Payload: deepJSON(9_990)},
		{Seq: 2, Type: engine.EventSignalReceived, Name: "s", Payload: deepJSON(10_000)},
		{Seq: 3, Type: engine.EventSignalReceived, Name: "s", Payload: deepJSON(32)},
	}
	var buf bytes.Buffer
	if err := ExportHistoryJSON(&buf, hist); err != nil {
		t.Fatal(err)
	}
	if buf.Len() > 256<<10 {
		t.Fatalf("the export is %d bytes", buf.Len())
	}
	if n := strings.Count(buf.String(), `"payloadBase64"`); n != 2 {
		t.Errorf("%d payloads in base64, want the 2 nested deeper than 32 levels", n)
	}
	back, err := ReadHistoryJSON(&buf)
	if err != nil || !reflect.DeepEqual(back, hist) {
		t.Fatalf("the export does not read back: %v", err)
	}
}

// The readers of history documents stop at MaxHistoryJSONBytes, however
// much a reader would give.
func TestHistoryReadersStopAtTheLimit(t *testing.T) {
	maxHistoryJSONBytes = 1 << 10
	t.Cleanup(func() { maxHistoryJSONBytes = MaxHistoryJSONBytes })
	endless := func() io.Reader { return io.MultiReader(strings.NewReader("["), endlessSpaces{}) }
	if _, err := ReadHistoryJSON(endless()); err == nil || !strings.Contains(err.Error(), "over MaxHistoryJSONBytes") {
		t.Errorf("ReadHistoryJSON of an endless input: %v", err)
	}
	if _, err := HistoryFromJSON(endless(), HistoryJSONOptions{}); err == nil || !strings.Contains(err.Error(), "over MaxHistoryJSONBytes") {
		t.Errorf("HistoryFromJSON of an endless input: %v", err)
	}
	r := NewWorkflowReplayer()
	if err := r.ReplayWorkflowHistoryFromJSON(nil, endless()); err == nil || !strings.Contains(err.Error(), "over MaxHistoryJSONBytes") {
		t.Errorf("ReplayWorkflowHistoryFromJSON of an endless input: %v", err)
	}
	if _, err := ReadHistoryJSON(strings.NewReader(`[{"seq":1,"type":"job_created"}]`)); err != nil {
		t.Errorf("a history under the limit: %v", err)
	}
}

type endlessSpaces struct{}

func (endlessSpaces) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}
