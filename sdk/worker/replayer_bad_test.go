package worker_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Must-fail histories. Beside the good recording of the order workflow
// (testdata/order_v1.json) sit recordings of other code registered under
// the same type, testdata/bad-*.json, as Temporal keeps bad-*.json beside
// its good histories: each must fail to replay against today's code
// (ReplayOrderV1) with the error its entry in badHistories names. They are
// recorded by running the code below end to end:
//
//	go test ./sdk/worker -run TestRecordBadHistories -update

// ReplayRefund, ReplayAudit and ReplayPause are the activities only the
// other code versions call.
func ReplayRefund(_ context.Context, amount int) (string, error) {
	return "F-" + strconv.Itoa(amount), nil
}
func ReplayAudit(_ context.Context, s string) (string, error) { return "A-" + s, nil }
func ReplayPause(_ context.Context, ms int) error             { return nil }

// badOrder is one other version of the order workflow and what its
// recorded history must do when today's code replays it.
type badOrder struct {
	file   string // under testdata/
	code   any    // the code that recorded it
	signal string // the signal its run was sent ("approve" unless the code waits for another)
	// Either a nondeterminism error (the step, the recorded event's type
	// and name, and words of what today's code did instead) …
	step     string
	recorded engine.EventType
	name     string
	did      string
	// … or another sentinel the replay must match.
	sentinel error
}

var badHistories = []badOrder{
	{file: "bad-activity-renamed.json", code: orderRefunding, step: "3",
		recorded: engine.EventActivityCompleted, name: "ReplayRefund", did: `activity "ReplayCharge"`},
	{file: "bad-activity-missing.json", code: orderWithoutReserve, step: "1",
		recorded: engine.EventTimerScheduled, did: `activity "ReplayReserve"`},
	{file: "bad-activity-extra.json", code: orderAudited, step: "5",
		recorded: engine.EventActivityCompleted, name: "ReplayAudit", did: "never issued this step"},
	{file: "bad-timer-for-activity.json", code: ReplayOrderNoSleep, step: "2",
		recorded: engine.EventActivityCompleted, name: "ReplayPause", did: "timer"},
	{file: "bad-timer-moved.json", code: orderSleepingLate, step: "2",
		recorded: engine.EventActivityCompleted, name: "ReplayCharge", did: "timer"},
	{file: "bad-signal-renamed.json", code: orderConfirmed, signal: "confirm", step: "3",
		recorded: engine.EventActivityCompleted, name: "ReplayCharge", did: "never issued this step"},
	{file: "bad-run-shorter.json", code: ReplayOrderNoShip, sentinel: worker.ErrReplayResultDiffers},
}

// orderRefunding refunds where today's code charges (step 3).
func orderRefunding(ctx workflow.Context, item string, amount int) (string, error) {
	ctx = orderCtx(ctx)
	var r, c, s, approver string
	if err := workflow.ExecuteActivity(ctx, ReplayReserve, item).Get(ctx, &r); err != nil {
		return "", err
	}
	if err := workflow.Sleep(ctx, 10*time.Millisecond); err != nil {
		return "", err
	}
	workflow.GetSignalChannel(ctx, "approve").Receive(ctx, &approver)
	if err := workflow.ExecuteActivity(ctx, ReplayRefund, amount).Get(ctx, &c); err != nil {
		return "", err
	}
	if err := workflow.ExecuteActivity(ctx, ReplayShip, r).Get(ctx, &s); err != nil {
		return "", err
	}
	return strings.Join([]string{r, approver, c, s}, " "), nil
}

// orderWithoutReserve never reserves: its first step is the timer.
func orderWithoutReserve(ctx workflow.Context, item string, amount int) (string, error) {
	ctx = orderCtx(ctx)
	var c, s, approver string
	if err := workflow.Sleep(ctx, 10*time.Millisecond); err != nil {
		return "", err
	}
	workflow.GetSignalChannel(ctx, "approve").Receive(ctx, &approver)
	if err := workflow.ExecuteActivity(ctx, ReplayCharge, amount).Get(ctx, &c); err != nil {
		return "", err
	}
	if err := workflow.ExecuteActivity(ctx, ReplayShip, item).Get(ctx, &s); err != nil {
		return "", err
	}
	return strings.Join([]string{approver, c, s}, " "), nil
}

// orderAudited audits the shipment after today's last step (step 5).
func orderAudited(ctx workflow.Context, item string, amount int) (string, error) {
	out, err := ReplayOrderV1(ctx, item, amount)
	if err != nil {
		return "", err
	}
	var a string
	if err := workflow.ExecuteActivity(orderCtx(ctx), ReplayAudit, out).Get(ctx, &a); err != nil {
		return "", err
	}
	return a, nil
}

// orderSleepingLate waits on its timer after charging, not before.
func orderSleepingLate(ctx workflow.Context, item string, amount int) (string, error) {
	ctx = orderCtx(ctx)
	var r, c, s, approver string
	if err := workflow.ExecuteActivity(ctx, ReplayReserve, item).Get(ctx, &r); err != nil {
		return "", err
	}
	workflow.GetSignalChannel(ctx, "approve").Receive(ctx, &approver)
	if err := workflow.ExecuteActivity(ctx, ReplayCharge, amount).Get(ctx, &c); err != nil {
		return "", err
	}
	if err := workflow.Sleep(ctx, 10*time.Millisecond); err != nil {
		return "", err
	}
	if err := workflow.ExecuteActivity(ctx, ReplayShip, r).Get(ctx, &s); err != nil {
		return "", err
	}
	return strings.Join([]string{r, approver, c, s}, " "), nil
}

// orderConfirmed waits for the signal "confirm" where today's code waits
// for "approve": replayed, today's code never gets past its wait.
func orderConfirmed(ctx workflow.Context, item string, amount int) (string, error) {
	ctx = orderCtx(ctx)
	var r, c, s, approver string
	if err := workflow.ExecuteActivity(ctx, ReplayReserve, item).Get(ctx, &r); err != nil {
		return "", err
	}
	if err := workflow.Sleep(ctx, 10*time.Millisecond); err != nil {
		return "", err
	}
	workflow.GetSignalChannel(ctx, "confirm").Receive(ctx, &approver)
	if err := workflow.ExecuteActivity(ctx, ReplayCharge, amount).Get(ctx, &c); err != nil {
		return "", err
	}
	if err := workflow.ExecuteActivity(ctx, ReplayShip, r).Get(ctx, &s); err != nil {
		return "", err
	}
	return strings.Join([]string{r, approver, c, s}, " "), nil
}

// recordBadOrder runs b's code as the order workflow end to end on an
// in-memory engine and returns its history.
func recordBadOrder(t *testing.T, b badOrder) []engine.Event {
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
	w.RegisterWorkflowWithName(b.code, replayOrderType)
	for _, a := range []any{ReplayReserve, ReplayCharge, ReplayShip, ReplayRefund, ReplayAudit, ReplayPause} {
		w.RegisterActivity(a)
	}
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
	signal := b.signal
	if signal == "" {
		signal = "approve"
	}
	if err := c.SignalWorkflow(ctx, "order-1", "", signal, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, nil); err != nil {
		t.Fatalf("%s: the recorded run failed: %v", b.file, err)
	}
	hist, err := c.GetWorkflowHistory(ctx, "order-1", "")
	if err != nil {
		t.Fatal(err)
	}
	return hist
}

// TestRecordBadHistories rewrites testdata/bad-*.json when run with
// -update, by running each other version of the code.
func TestRecordBadHistories(t *testing.T) {
	if !*updateHistories {
		t.Skip("run with -update to record testdata/bad-*.json")
	}
	for _, b := range badHistories {
		writeHistory(t, filepath.Join("testdata", b.file), recordBadOrder(t, b))
	}
}

// Every must-fail history fails to replay against today's code, with the
// error its entry names: a *replay.NondeterminismError (code
// HDL-REPLAY-1100) at the step, the recorded event and what the code did
// instead, or the sentinel of a run that ends otherwise.
func TestReplayBadHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "bad-*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, b := range badHistories {
		listed = append(listed, filepath.Join("testdata", b.file))
	}
	for _, f := range files {
		if !slices.Contains(listed, f) {
			t.Errorf("%s has no entry in badHistories: say what its replay must fail with", f)
		}
	}
	for _, b := range badHistories {
		t.Run(strings.TrimSuffix(b.file, ".json"), func(t *testing.T) {
			path := filepath.Join("testdata", b.file)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (record it with -update)", err)
			}
			// The file is what ExportHistoryJSON writes, so a bad history
			// fails for what it records, not for how it is written.
			hist, err := worker.ReadHistoryJSON(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := worker.ExportHistoryJSON(&buf, hist); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), data) {
				t.Errorf("%s does not export to the same bytes", path)
			}
			err = replayer(ReplayOrderV1).ReplayWorkflowHistoryFromJSONFile(nil, path)
			if err == nil {
				t.Fatal("today's code replayed a history it must refuse")
			}
			t.Log(err)
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
			var nd *replay.NondeterminismError
			isND := errors.As(err, &nd)
			if b.sentinel != nil {
				if !errors.Is(err, b.sentinel) {
					t.Fatalf("replay = %v, want %v", err, b.sentinel)
				}
				if isND {
					t.Fatalf("replay = %v, a nondeterminism error where the code ends the run otherwise", err)
				}
				return
			}
			if !isND {
				t.Fatalf("replay = %v, want a *replay.NondeterminismError", err)
			}
			if !errors.Is(err, replay.ErrNondeterminism) || nd.Code() != replay.NondeterminismCode || nd.Code() != "HDL-REPLAY-1100" {
				t.Errorf("code %s, errors.Is(ErrNondeterminism) %v: want HDL-REPLAY-1100 and true", nd.Code(), errors.Is(err, replay.ErrNondeterminism))
			}
			if !strings.Contains(err.Error(), "[HDL-REPLAY-1100]") {
				t.Errorf("error %q does not carry its code", err)
			}
			if nd.Step != b.step {
				t.Errorf("step %q, want %q", nd.Step, b.step)
			}
			if nd.Event == nil {
				t.Fatalf("no recorded event in %v", err)
			}
			if nd.Event.Type != b.recorded || nd.Event.Name != b.name {
				t.Errorf("recorded event %s %q, want %s %q", nd.Event.Type, nd.Event.Name, b.recorded, b.name)
			}
			if !strings.Contains(nd.Did, b.did) {
				t.Errorf("did %q, want it to mention %s", nd.Did, b.did)
			}
		})
	}
}
