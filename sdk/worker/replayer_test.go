package worker_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

var updateHistories = flag.Bool("update", false, "record the testdata/*.json histories by running the workflows end to end")

// The recorded workflow type: every version of the order workflow below is
// registered under it, as a deployment would register its new code.
const replayOrderType = "ReplayOrder"

var v1History = filepath.Join("testdata", "order_v1.json")

func ReplayReserve(_ context.Context, item string) (string, error) { return "R-" + item, nil }
func ReplayCharge(_ context.Context, amount int) (string, error) {
	return fmt.Sprintf("C-%d", amount), nil
}
func ReplayShip(_ context.Context, reservation string) (string, error) {
	return "S-" + reservation, nil
}
func ReplayValidate(_ context.Context, item string) error {
	if item == "" {
		return errors.New("no item")
	}
	return nil
}

func orderCtx(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 5 * time.Second})
}

// ReplayOrderV1 is the recorded code: Reserve (step 1), a 10 ms timer (step
// 2), the "approve" signal, Charge (step 3), Ship (step 4).
func ReplayOrderV1(ctx workflow.Context, item string, amount int) (string, error) {
	ctx = orderCtx(ctx)
	var r, c, s, approver string
	if err := workflow.ExecuteActivity(ctx, ReplayReserve, item).Get(ctx, &r); err != nil {
		return "", err
	}
	if err := workflow.Sleep(ctx, 10*time.Millisecond); err != nil {
		return "", err
	}
	workflow.GetSignalChannel(ctx, "approve").Receive(ctx, &approver)
	if err := workflow.ExecuteActivity(ctx, ReplayCharge, amount).Get(ctx, &c); err != nil {
		return "", err
	}
	if err := workflow.ExecuteActivity(ctx, ReplayShip, r).Get(ctx, &s); err != nil {
		return "", err
	}
	return strings.Join([]string{r, approver, c, s}, " "), nil
}

// ReplayOrderRenamed calls Charge by another name.
func ReplayOrderRenamed(ctx workflow.Context, item string, amount int) (string, error) {
	ctx = orderCtx(ctx)
	var r, c, s, approver string
	if err := workflow.ExecuteActivity(ctx, ReplayReserve, item).Get(ctx, &r); err != nil {
		return "", err
	}
	if err := workflow.Sleep(ctx, 10*time.Millisecond); err != nil {
		return "", err
	}
	workflow.GetSignalChannel(ctx, "approve").Receive(ctx, &approver)
	if err := workflow.ExecuteActivity(ctx, "ReplayChargeCard", amount).Get(ctx, &c); err != nil { // renamedLine
		return "", err
	}
	if err := workflow.ExecuteActivity(ctx, ReplayShip, r).Get(ctx, &s); err != nil {
		return "", err
	}
	return strings.Join([]string{r, approver, c, s}, " "), nil
}

// ReplayOrderInserted validates the item before reserving it.
func ReplayOrderInserted(ctx workflow.Context, item string, amount int) (string, error) {
	ctx = orderCtx(ctx)
	var r, c, s, approver string
	if err := workflow.ExecuteActivity(ctx, ReplayValidate, item).Get(ctx, nil); err != nil {
		return "", err
	}
	if err := workflow.ExecuteActivity(ctx, ReplayReserve, item).Get(ctx, &r); err != nil {
		return "", err
	}
	if err := workflow.Sleep(ctx, 10*time.Millisecond); err != nil {
		return "", err
	}
	workflow.GetSignalChannel(ctx, "approve").Receive(ctx, &approver)
	if err := workflow.ExecuteActivity(ctx, ReplayCharge, amount).Get(ctx, &c); err != nil {
		return "", err
	}
	if err := workflow.ExecuteActivity(ctx, ReplayShip, r).Get(ctx, &s); err != nil {
		return "", err
	}
	return strings.Join([]string{r, approver, c, s}, " "), nil
}

// ReplayOrderNoCharge drops the Charge step in the middle.
func ReplayOrderNoCharge(ctx workflow.Context, item string, amount int) (string, error) {
	ctx = orderCtx(ctx)
	var r, s, approver string
	if err := workflow.ExecuteActivity(ctx, ReplayReserve, item).Get(ctx, &r); err != nil {
		return "", err
	}
	if err := workflow.Sleep(ctx, 10*time.Millisecond); err != nil {
		return "", err
	}
	workflow.GetSignalChannel(ctx, "approve").Receive(ctx, &approver)
	if err := workflow.ExecuteActivity(ctx, ReplayShip, r).Get(ctx, &s); err != nil {
		return "", err
	}
	return strings.Join([]string{r, approver, s}, " "), nil
}

// ReplayOrderNoShip drops the last step, Ship: the history holds a step the
// code never issues.
func ReplayOrderNoShip(ctx workflow.Context, item string, amount int) (string, error) {
	ctx = orderCtx(ctx)
	var r, c, approver string
	if err := workflow.ExecuteActivity(ctx, ReplayReserve, item).Get(ctx, &r); err != nil {
		return "", err
	}
	if err := workflow.Sleep(ctx, 10*time.Millisecond); err != nil {
		return "", err
	}
	workflow.GetSignalChannel(ctx, "approve").Receive(ctx, &approver)
	if err := workflow.ExecuteActivity(ctx, ReplayCharge, amount).Get(ctx, &c); err != nil {
		return "", err
	}
	return strings.Join([]string{r, approver, c}, " "), nil
}

// ReplayOrderNoSleep waits in an activity where it slept on a timer.
func ReplayOrderNoSleep(ctx workflow.Context, item string, amount int) (string, error) {
	ctx = orderCtx(ctx)
	var r, c, s, approver string
	if err := workflow.ExecuteActivity(ctx, ReplayReserve, item).Get(ctx, &r); err != nil {
		return "", err
	}
	if err := workflow.ExecuteActivity(ctx, "ReplayPause", 10).Get(ctx, nil); err != nil {
		return "", err
	}
	workflow.GetSignalChannel(ctx, "approve").Receive(ctx, &approver)
	if err := workflow.ExecuteActivity(ctx, ReplayCharge, amount).Get(ctx, &c); err != nil {
		return "", err
	}
	if err := workflow.ExecuteActivity(ctx, ReplayShip, r).Get(ctx, &s); err != nil {
		return "", err
	}
	return strings.Join([]string{r, approver, c, s}, " "), nil
}

// versionSeen is the last version ReplayOrderVersioned's GetVersion returned.
var versionSeen atomic.Int64

// ReplayOrderVersioned is the insertion of ReplayOrderInserted done right:
// guarded by GetVersion, so runs recorded before the change replay without
// it.
func ReplayOrderVersioned(ctx workflow.Context, item string, amount int) (string, error) {
	ctx = orderCtx(ctx)
	var r, c, s, approver string
	v := workflow.GetVersion(ctx, "validate-first", workflow.DefaultVersion, 1)
	versionSeen.Store(int64(v))
	if v == 1 {
		if err := workflow.ExecuteActivity(ctx, ReplayValidate, item).Get(ctx, nil); err != nil {
			return "", err
		}
	}
	if err := workflow.ExecuteActivity(ctx, ReplayReserve, item).Get(ctx, &r); err != nil {
		return "", err
	}
	if err := workflow.Sleep(ctx, 10*time.Millisecond); err != nil {
		return "", err
	}
	workflow.GetSignalChannel(ctx, "approve").Receive(ctx, &approver)
	if err := workflow.ExecuteActivity(ctx, ReplayCharge, amount).Get(ctx, &c); err != nil {
		return "", err
	}
	if err := workflow.ExecuteActivity(ctx, ReplayShip, r).Get(ctx, &s); err != nil {
		return "", err
	}
	return strings.Join([]string{r, approver, c, s}, " "), nil
}

// recordOrder runs fn as the order workflow end to end on an in-memory
// engine, with the "approve" signal, and returns its history.
func recordOrder(t *testing.T, fn any) []engine.Event {
	t.Helper()
	e, err := embedded.Open(embedded.Config{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, e) })
	var errMu sync.Mutex
	w := worker.New(client.New(service(t, e)), "replay-orders", worker.Options{OnError: func(job engine.JobID, err error) {
		errMu.Lock()
		defer errMu.Unlock()
		t.Errorf("worker error on job %d: %v", job, err)
	}})
	w.RegisterWorkflowWithName(fn, replayOrderType)
	w.RegisterActivity(ReplayReserve)
	w.RegisterActivity(ReplayCharge)
	w.RegisterActivity(ReplayShip)
	w.RegisterActivity(ReplayValidate)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopOK(t, w) })

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := client.New(service(t, e))
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "order-1", TaskQueue: "replay-orders"}, replayOrderType, "loom", 42)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SignalWorkflow(ctx, "order-1", "", "approve", "alice"); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if want := "R-loom alice C-42 S-R-loom"; got != want {
		t.Fatalf("result %q, want %q", got, want)
	}
	hist, err := c.GetWorkflowHistory(ctx, "order-1", "")
	if err != nil {
		t.Fatal(err)
	}
	return hist
}

func writeHistory(t *testing.T, path string, hist []engine.Event) {
	t.Helper()
	var buf bytes.Buffer
	if err := worker.ExportHistoryJSON(&buf, hist); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRecordHistories rewrites the committed histories when run with
// -update (go test ./sdk/worker -run TestRecordHistories -update). It runs
// first so that the tests below read what it wrote.
func TestRecordHistories(t *testing.T) {
	if !*updateHistories {
		t.Skip("run with -update to record testdata/*.json")
	}
	writeHistory(t, v1History, recordOrder(t, ReplayOrderV1))
}

func replayer(fn any) worker.WorkflowReplayer {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithName(fn, replayOrderType)
	return r
}

// The recorded code replays its committed history cleanly.
func TestReplayOrderV1History(t *testing.T) {
	if err := replayer(ReplayOrderV1).ReplayWorkflowHistoryFromJSONFile(nil, v1History); err != nil {
		t.Fatal(err)
	}
}

// A history just recorded replays from memory, and survives the JSON
// format exactly.
func TestReplayFreshHistory(t *testing.T) {
	hist := recordOrder(t, ReplayOrderV1)
	if err := replayer(ReplayOrderV1).ReplayWorkflowHistory(nil, hist); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := worker.ExportHistoryJSON(&buf, hist); err != nil {
		t.Fatal(err)
	}
	back, err := worker.ReadHistoryJSON(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, hist) {
		t.Fatalf("history changed through JSON:\n got %+v\nwant %+v", back, hist)
	}
	if err := replayer(ReplayOrderV1).ReplayWorkflowHistory(nil, back); err != nil {
		t.Fatal(err)
	}
}

// The committed files read back and export to the same bytes.
func TestHistoryFilesRoundTrip(t *testing.T) {
	for _, path := range []string{v1History, updateV1History} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		hist, err := worker.ReadHistoryJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var buf bytes.Buffer
		if err := worker.ExportHistoryJSON(&buf, hist); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), data) {
			t.Errorf("%s does not export to the same bytes", path)
		}
	}
}

// Changed code that needs GetVersion fails the replay of the old history
// with a NondeterminismError naming the step, the recorded event and what
// the code did instead.
func TestReplayDetectsIncompatibleChanges(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fn         any
		history    string
		step       string
		recorded   engine.EventType
		recordedAs string // the recorded event's name
		did        string
	}{
		// Inline activities record only their result: activity_completed.
		{"activity renamed", ReplayOrderRenamed, v1History, "3", engine.EventActivityCompleted, "ReplayCharge", `"ReplayChargeCard"`},
		{"activity inserted", ReplayOrderInserted, v1History, "1", engine.EventActivityCompleted, "ReplayReserve", `"ReplayValidate"`},
		{"step removed in the middle", ReplayOrderNoCharge, v1History, "3", engine.EventActivityCompleted, "ReplayCharge", `"ReplayShip"`},
		{"last step removed", ReplayOrderNoShip, v1History, "4", engine.EventActivityCompleted, "ReplayShip", "never issued"},
		{"timer replaced by activity", ReplayOrderNoSleep, v1History, "2", engine.EventTimerScheduled, "", `activity "ReplayPause"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := replayer(tc.fn).ReplayWorkflowHistoryFromJSONFile(nil, tc.history)
			var nd *replay.NondeterminismError
			if !errors.As(err, &nd) {
				t.Fatalf("replay = %v, want a *replay.NondeterminismError", err)
			}
			if !errors.Is(err, replay.ErrNondeterminism) {
				t.Errorf("errors.Is(err, ErrNondeterminism) is false")
			}
			if !strings.Contains(err.Error(), tc.history) {
				t.Errorf("error %q does not name the history file %s", err, tc.history)
			}
			if nd.Step != tc.step {
				t.Errorf("step %q, want %q (%v)", nd.Step, tc.step, err)
			}
			if nd.Event == nil {
				t.Fatalf("no recorded event in %v", err)
			}
			if tc.recorded != "" && nd.Event.Type != tc.recorded {
				t.Errorf("recorded event %s, want %s (%v)", nd.Event.Type, tc.recorded, err)
			}
			if nd.Event.Name != tc.recordedAs {
				t.Errorf("recorded name %q, want %q (%v)", nd.Event.Name, tc.recordedAs, err)
			}
			if !strings.Contains(nd.Did, tc.did) {
				t.Errorf("did %q, want it to mention %s", nd.Did, tc.did)
			}
			t.Log(err)
		})
	}
}

// The error of a renamed activity points at the line of the call.
func TestReplayNondeterminismNamesTheLine(t *testing.T) {
	err := replayer(ReplayOrderRenamed).ReplayWorkflowHistoryFromJSONFile(nil, v1History)
	var nd *replay.NondeterminismError
	if !errors.As(err, &nd) {
		t.Fatalf("replay = %v, want a *replay.NondeterminismError", err)
	}
	src, rerr := os.ReadFile("replayer_test.go")
	if rerr != nil {
		t.Fatal(rerr)
	}
	line := 0
	for i, l := range strings.Split(string(src), "\n") {
		if strings.HasSuffix(l, "{ // renamedLine") {
			line = i + 1
		}
	}
	if want := fmt.Sprintf("replayer_test.go:%d", line); !strings.HasSuffix(nd.Where, string(filepath.Separator)+want) {
		t.Fatalf("Where = %q, want it to end in %s", nd.Where, want)
	}
	if !strings.Contains(err.Error(), nd.Where) {
		t.Fatalf("error %q does not name the code position", err)
	}
}

// The insertion guarded with GetVersion replays the old history: there
// GetVersion returns DefaultVersion and the new activity is skipped.
func TestReplayGetVersionFix(t *testing.T) {
	versionSeen.Store(99)
	if err := replayer(ReplayOrderVersioned).ReplayWorkflowHistoryFromJSONFile(nil, v1History); err != nil {
		t.Fatal(err)
	}
	if v := workflow.Version(versionSeen.Load()); v != workflow.DefaultVersion {
		t.Fatalf("GetVersion on the old history = %d, want DefaultVersion", v)
	}
}

// A run of the versioned code records its version, replays with it, and
// the old code cannot replay that history.
func TestReplayVersionedRun(t *testing.T) {
	hist := recordOrder(t, ReplayOrderVersioned)
	marker := false
	for _, ev := range hist {
		marker = marker || (ev.Type == engine.EventMarkerRecorded && ev.Step == "k:version:validate-first")
	}
	if !marker {
		// A new run is live from its first event (replay's frontier rule),
		// so GetVersion must have recorded the new version.
		t.Fatal("a live run of the versioned code recorded no version marker")
	}
	versionSeen.Store(99)
	if err := replayer(ReplayOrderVersioned).ReplayWorkflowHistory(nil, hist); err != nil {
		t.Fatal(err)
	}
	if v := versionSeen.Load(); v != 1 {
		t.Fatalf("GetVersion on the versioned history = %d, want 1", v)
	}
	var nd *replay.NondeterminismError
	if err := replayer(ReplayOrderV1).ReplayWorkflowHistory(nil, hist); !errors.As(err, &nd) {
		t.Fatalf("old code on the versioned history: %v, want a *replay.NondeterminismError", err)
	}
}

// A history that stops mid-run (exported while in flight) replays: the
// commands the code issues past its end are not an error.
func TestReplayTruncatedHistory(t *testing.T) {
	f, err := os.Open(v1History)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, f)
	hist, err := worker.ReadHistoryJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= len(hist); n++ {
		if err := replayer(ReplayOrderV1).ReplayWorkflowHistory(nil, hist[:n]); err != nil {
			t.Fatalf("first %d events: %v", n, err)
		}
	}
}

func TestReplayUnregisteredType(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflow(ReplayOrderV1) // registered as "ReplayOrderV1", not "ReplayOrder"
	err := r.ReplayWorkflowHistoryFromJSONFile(nil, v1History)
	if err == nil || !strings.Contains(err.Error(), `"ReplayOrder"`) || !strings.Contains(err.Error(), "not registered") {
		t.Fatalf("replay = %v, want an error naming the unregistered type", err)
	}
	if err := r.ReplayWorkflowHistory(nil, nil); err == nil {
		t.Fatal("an empty history replayed")
	}
	if err := r.ReplayWorkflowHistory(nil, []engine.Event{{Seq: 1, Type: engine.EventSignalReceived}}); err == nil ||
		!strings.Contains(err.Error(), "job_created") {
		t.Fatalf("a history without job_created: %v", err)
	}
}

// Payloads of every shape survive export and import byte for byte.
func TestHistoryJSONRoundTrip(t *testing.T) {
	payloads := [][]byte{
		nil, {}, []byte(`"text"`), []byte(`{"a":[1,2,{"b":null}]}`), []byte(`{ "spaced": true }`),
		[]byte(`null`), []byte(`42`), []byte("not json"), {0xff, 0x00, 0x80}, []byte(`"<tag>&amp;"`),
		[]byte("\"\u2028\""), []byte(`"\u2028"`), []byte("\"\xff\""), []byte("{\"a\":1}\n"), []byte("[]"),
	}
	var hist []engine.Event
	for i, p := range payloads {
		hist = append(hist, engine.Event{Seq: uint64(i + 1), Type: engine.EventMarkerRecorded, AtMS: 1700000000000 + int64(i),
			Attempt: 2, Step: fmt.Sprint(i), Name: "n<&>", Payload: p, Reason: "r", DelayMS: 5, LeaseExpiryMS: 7, Commit: i%2 == 0})
	}
	hist = append(hist, engine.Event{Seq: uint64(len(hist) + 1), Type: engine.EventJobWaiting, Wait: &engine.WaitSpec{
		TimerID: "t", TimerAtMS: 9, Signals: []string{"a"}, Steps: []string{"1"}, Park: true,
		Timers: []engine.Timer{{ID: "2", FireMS: 10}}, AnySignal: true}})
	var buf bytes.Buffer
	if err := worker.ExportHistoryJSON(&buf, hist); err != nil {
		t.Fatal(err)
	}
	back, err := worker.ReadHistoryJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, hist) {
		for i := range hist {
			if !reflect.DeepEqual(back[i], hist[i]) {
				t.Errorf("event %d:\n got %+v\nwant %+v", i, back[i], hist[i])
			}
		}
	}
}

// Malformed history files are rejected with an error saying what is wrong.
func TestReadHistoryJSONRejectsMalformed(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "  ", "empty"},
		{"not an array", `{"seq":1}`, "not a JSON array"},
		{"broken JSON", `[{"seq":1,"type":"job_created"`, "unexpected EOF"},
		{"trailing data", `[{"seq":1,"type":"job_created"}] []`, "after the array"},
		{"no events", `[]`, "no events"},
		{"unknown field", `[{"seq":1,"type":"job_created","colour":"red"}]`, `unknown field "colour"`},
		{"missing seq", `[{"type":"job_created"}]`, `"seq" is missing`},
		{"missing type", `[{"seq":1}]`, `"type" is missing`},
		{"seq gap", `[{"seq":1,"type":"job_created"},{"seq":3,"type":"job_queued"}]`, "seq 3 where 2 was due"},
		{"wrong field type", `[{"seq":"one","type":"job_created"}]`, "cannot unmarshal"},
		{"bad base64", `[{"seq":1,"type":"job_created","payloadBase64":"!!"}]`, "not standard base64"},
		{"both payloads", `[{"seq":1,"type":"job_created","payload":1,"payloadBase64":"MQ=="}]`, "both"},
		{"null payload", `[{"seq":1,"type":"job_created","payload":null}]`, "null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := worker.ReadHistoryJSON(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ReadHistoryJSON(%s) = %v, want an error containing %q", tc.in, err, tc.want)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(path, []byte(`[{"seq":2,"type":"job_created"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	err := replayer(ReplayOrderV1).ReplayWorkflowHistoryFromJSONFile(nil, path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "seq 2 where 1 was due") {
		t.Fatalf("replay of a malformed file = %v, want an error naming it and the problem", err)
	}
}
