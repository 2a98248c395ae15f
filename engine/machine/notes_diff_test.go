package machine

import (
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// The metrics' scan of a job record reads what a full decode reads, and
// refuses what is not a job record.
func TestScanQueueStatus(t *testing.T) {
	for _, j := range []*engine.Job{
		{ID: 1, WorkflowID: "w", Type: "t", Queue: "orders", Status: engine.StatusQueued},
		{ID: 1 << 40, WorkflowID: strings.Repeat("x", 300), Type: "", Queue: "", Status: engine.StatusSuspended, Attempt: 7,
			Timers: []engine.Timer{{ID: "a", FireMS: 9}}, Wait: &engine.WaitSpec{Signals: []string{"s"}}},
	} {
		b := EncodeJob(j)
		q, st, ok := scanQueueStatus(b)
		if !ok || q != j.Queue || st != j.Status {
			t.Errorf("scan of %+v: %q %v %v", j, q, st, ok)
		}
	}
	for _, b := range [][]byte{nil, {1}, {2, 1, 0x80}, {1, 1, 0xc1}, {1, 1, 0x81, 0xa2, 'q', 'u', 0x01}} {
		if _, _, ok := scanQueueStatus(b); ok {
			t.Errorf("scan of %x succeeded", b)
		}
	}
}

// FuzzScanQueueStatus: the metrics' scan of a job record never panics on
// any bytes, and reads what the decode reads from every record the engine
// writes (the decoded record, encoded again). A record no engine writes,
// say one with a key twice, may read otherwise; the open-job gauge would
// then be off for it, nothing else.
func FuzzScanQueueStatus(f *testing.F) {
	f.Add(EncodeJob(&engine.Job{ID: 1, WorkflowID: "w", Type: "t", Queue: "q", Status: engine.StatusRunning}))
	f.Add(EncodeJob(&engine.Job{ID: 9, Queue: "", Status: engine.StatusParked, Wait: &engine.WaitSpec{Park: true}}))
	f.Add([]byte{1, 1, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		scanQueueStatus(b)
		var j engine.Job
		if _, err := storage.Decode(b, storage.KindJob, jobVersion, &j); err != nil {
			return
		}
		if q, st, ok := scanQueueStatus(EncodeJob(&j)); !ok || q != j.Queue || st != j.Status {
			t.Fatalf("scan of the record of %+v read %q %v %v", j, q, st, ok)
		}
	})
}
