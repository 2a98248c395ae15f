package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/temporalhistory"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// The Temporal histories in testdata/ are written by hand in the format
// `temporal workflow show --output json` writes (temporal_greeting.json in
// today's EVENT_TYPE_… spelling with string ids, temporal_order.json in the
// older CamelCase spelling with numeric ids). The workflows below are the
// code that made them, as a Temporal program would have it after swapping
// its imports.

const (
	greetingHistory = "testdata/temporal_greeting.json"
	orderHistory    = "testdata/temporal_order.json"
	searchAttrs     = "testdata/temporal_search_attributes.json"
	updateHistory   = "testdata/temporal_update.json"
)

// TemporalGreeting: an activity (event 5), a one-minute timer (event 11),
// the "approve" signal (event 12), a side effect (event 20), a GetVersion
// (event 21) and the activity it guards (event 22).
func TemporalGreeting(ctx workflow.Context, name string) (string, error) {
	return greeting(ctx, name, "ComposeGreeting", true, false)
}

// TemporalGreetingChanged calls another activity first: the history's
// event 5 scheduled ComposeGreeting.
func TemporalGreetingChanged(ctx workflow.Context, name string) (string, error) {
	return greeting(ctx, name, "ComposeFarewell", true, false)
}

// TemporalGreetingNoTimer does not sleep: the history's timer (event 11)
// meets the code's side effect.
func TemporalGreetingNoTimer(ctx workflow.Context, name string) (string, error) {
	return greeting(ctx, name, "ComposeGreeting", false, false)
}

// TemporalGreetingBlocked does all the history did but then waits for a
// signal that never comes, where the history completed.
func TemporalGreetingBlocked(ctx workflow.Context, name string) (string, error) {
	return greeting(ctx, name, "ComposeGreeting", true, true)
}

func greeting(ctx workflow.Context, name, activity string, sleep, block bool) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var text string
	if err := workflow.ExecuteActivity(ctx, activity, "Hello", name).Get(ctx, &text); err != nil {
		return "", err
	}
	if sleep {
		if err := workflow.Sleep(ctx, time.Minute); err != nil {
			return "", err
		}
	}
	var approver string
	workflow.GetSignalChannel(ctx, "approve").Receive(ctx, &approver)
	var nonce int
	if err := workflow.SideEffect(ctx, func(workflow.Context) any { return 99 }).Get(&nonce); err != nil {
		return "", err
	}
	if workflow.GetVersion(ctx, "audit", workflow.DefaultVersion, 1) == 1 {
		if err := workflow.ExecuteActivity(ctx, "Audit", text).Get(ctx, nil); err != nil {
			return "", err
		}
	}
	if block {
		workflow.GetSignalChannel(ctx, "never").Receive(ctx, nil)
	}
	return fmt.Sprintf("%s (approved by %s, nonce %d)", text, approver, nonce), nil
}

// TemporalRefund is the local activity of TemporalOrder.
func TemporalRefund(_ context.Context, order string) (string, error) {
	return "refund-of-" + order, nil
}

// TemporalOrder: an activity that fails with a non-retryable
// ApplicationError (event 7), a local activity (marker, event 11), a child
// workflow (events 12, 13, 17) and a signal to another workflow (events 21,
// 22).
func TemporalOrder(ctx workflow.Context, order string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	err := workflow.ExecuteActivity(ctx, "Charge", order).Get(ctx, nil)
	var app *temporal.ApplicationError
	if !errors.As(err, &app) {
		return "", fmt.Errorf("want an application error, have %v", err)
	}
	var card string
	if err := app.Details(&card); err != nil || card != "visa" {
		return "", fmt.Errorf("details %q: %v", card, err)
	}
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: time.Second})
	var refund string
	if err := workflow.ExecuteLocalActivity(lctx, TemporalRefund, order).Get(ctx, &refund); err != nil {
		return "", err
	}
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: order + "-ship"})
	child := workflow.ExecuteChildWorkflow(cctx, "TemporalShipping", order)
	var exec workflow.Execution
	if err := child.GetChildWorkflowExecution().Get(ctx, &exec); err != nil {
		return "", err
	}
	var parcel string
	if err := child.Get(ctx, &parcel); err != nil {
		return "", err
	}
	if err := workflow.SignalExternalWorkflow(ctx, "audit-log", "", "order-done", order).Get(ctx, nil); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s: %s, %s, %s (%s)", order, app.Type(), refund, parcel, exec.RunID), nil
}

func temporalReplayer(name string, fn any) worker.WorkflowReplayer {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(fn, workflow.RegisterOptions{Name: name})
	return r
}

// testLogger counts the lines a replayer writes, per level.
type testLogger struct{ lines map[string]int }

func (l *testLogger) Debug(string, ...any) { l.lines["debug"]++ }
func (l *testLogger) Info(string, ...any)  { l.lines["info"]++ }
func (l *testLogger) Warn(string, ...any)  { l.lines["warn"]++ }
func (l *testLogger) Error(string, ...any) { l.lines["error"]++ }

// The code that made a Temporal history replays it clean, with the recorded
// results fed back: the result the replayed code computes is the one the
// history's completion event holds.
func TestReplayTemporalHistories(t *testing.T) {
	for _, tc := range []struct {
		path, name string
		fn         any
		want       string
	}{
		{greetingHistory, "TemporalGreeting", TemporalGreeting, "Hello, Temporal! (approved by alice, nonce 7)"},
		{orderHistory, "TemporalOrder", TemporalOrder, "order-9: CardDeclined, refund-1, parcel-3 (run-ship-1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := temporalReplayer(tc.name, tc.fn)
			log := &testLogger{lines: map[string]int{}}
			if err := r.ReplayWorkflowHistoryFromJSONFile(log, tc.path); err != nil {
				t.Fatal(err)
			}
			var got string
			if err := r.GetWorkflowResult("", &got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("replayed result %q, want %q", got, tc.want)
			}
			if log.lines["debug"] != 1 || log.lines["warn"] != 0 {
				t.Fatalf("logged %v, want one debug line", log.lines)
			}
		})
	}
}

// Changed code fails the replay of a Temporal history with a
// NondeterminismError that names heddle's step, the recorded event, what
// the code did, and the Temporal event the step came from.
func TestReplayTemporalHistoryDetectsChanges(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fn       any
		step     string
		did      string
		temporal string
	}{
		{"another activity", TemporalGreetingChanged, "1", `issued activity "ComposeFarewell"`, "(Temporal event 5, ActivityTaskScheduled)"},
		// The timer's record comes while the code waits for the signal,
		// having issued no step 2.
		{"no timer", TemporalGreetingNoTimer, "2", "never issued this step", "(Temporal event 11, TimerStarted)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := temporalReplayer("TemporalGreeting", tc.fn)
			log := &testLogger{lines: map[string]int{}}
			err := r.ReplayWorkflowHistoryFromJSONFile(log, greetingHistory)
			var nd *workflow.NondeterminismError
			if !errors.As(err, &nd) {
				t.Fatalf("want a NondeterminismError, have %v", err)
			}
			if nd.Step != tc.step || !strings.Contains(nd.Did, tc.did) {
				t.Fatalf("step %s, did %q; want step %s, %q", nd.Step, nd.Did, tc.step, tc.did)
			}
			for _, part := range []string{greetingHistory, tc.temporal} {
				if !strings.Contains(err.Error(), part) {
					t.Fatalf("error %q does not name %q", err, part)
				}
			}
			if log.lines["warn"] != 1 {
				t.Fatalf("logged %v, want one warning", log.lines)
			}
			if err := r.GetWorkflowResult("", new(string)); !errors.Is(err, worker.ErrNoReplayResult) {
				t.Fatalf("a failed replay left a result: %v", err)
			}
		})
	}
}

// A history cut short (partial replay) replays clean, since the code may go
// on past its end; a history that ends completed demands that the code
// return.
func TestReplayTemporalPartialHistory(t *testing.T) {
	r := temporalReplayer("TemporalGreeting", TemporalGreeting)
	for _, last := range []int64{1, 7, 12, 16, 21, 27} {
		if err := r.ReplayPartialWorkflowHistoryFromJSONFile(nil, greetingHistory, last); err != nil {
			t.Fatalf("up to event %d: %v", last, err)
		}
	}
	blocked := temporalReplayer("TemporalGreeting", TemporalGreetingBlocked)
	err := blocked.ReplayPartialWorkflowHistoryFromJSONFile(nil, greetingHistory, 0)
	if !errors.Is(err, worker.ErrReplayResultDiffers) {
		t.Fatalf("want ErrReplayResultDiffers, have %v", err)
	}
}

// An event heddle cannot express is an error naming its id and type.
func TestReplayTemporalUnmappableEvent(t *testing.T) {
	err := temporalReplayer("TemporalGreeting", TemporalGreeting).ReplayWorkflowHistoryFromJSONFile(nil, searchAttrs)
	var ee *temporalhistory.EventError
	if !errors.As(err, &ee) || !errors.Is(err, temporalhistory.ErrUnmappable) {
		t.Fatalf("want an unmappable EventError, have %v", err)
	}
	if ee.EventID != 5 || ee.EventType != "UpsertWorkflowSearchAttributes" || ee.Code() != temporalhistory.UnmappableCode ||
		!strings.Contains(err.Error(), "event 5 (UpsertWorkflowSearchAttributes)") {
		t.Fatalf("error names event %d %s: %v", ee.EventID, ee.EventType, err)
	}
}

// HistoryFromJSON reads both formats; ReplayWorkflowHistoryFromJSON
// replays from a reader.
func TestHistoryFromJSONBothFormats(t *testing.T) {
	for _, path := range []string{greetingHistory, v1History} {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		hist, err := worker.HistoryFromJSON(f, worker.HistoryJSONOptions{})
		_ = f.Close()
		if err != nil || len(hist) == 0 || hist[0].Seq != 1 {
			t.Fatalf("%s: %d events, %v", path, len(hist), err)
		}
		for i, ev := range hist {
			if ev.Seq != uint64(i)+1 {
				t.Fatalf("%s: event %d has seq %d", path, i, ev.Seq)
			}
		}
	}
	f, err := os.Open(greetingHistory)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if err := temporalReplayer("TemporalGreeting", TemporalGreeting).ReplayWorkflowHistoryFromJSON(nil, f); err != nil {
		t.Fatal(err)
	}
}

// TemporalCart counts the items "add" updates put in it until "checkout"
// (temporal_update.json: one update, events 8 and 9, and the signal, event
// 10).
func TemporalCart(ctx workflow.Context) (int, error) { return cart(ctx, "") }

// TemporalCartChecked checks each item with an activity first, so the
// update does not complete where the history says it did.
func TemporalCartChecked(ctx workflow.Context) (int, error) { return cart(ctx, "check") }

// TemporalCartNotify starts an activity it does not wait for after the
// checkout: a command the completed history does not have.
func TemporalCartNotify(ctx workflow.Context) (int, error) { return cart(ctx, "notify") }

func cart(ctx workflow.Context, change string) (int, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Second})
	items := 0
	err := workflow.SetUpdateHandler(ctx, "add", func(ctx workflow.Context, item string) (int, error) {
		if change == "check" {
			if err := workflow.ExecuteActivity(actx, "CheckStock", item).Get(ctx, nil); err != nil {
				return 0, err
			}
		}
		items++
		return items, nil
	})
	if err != nil {
		return 0, err
	}
	workflow.GetSignalChannel(ctx, "checkout").Receive(ctx, nil)
	if change == "notify" {
		workflow.ExecuteActivity(actx, "Notify", items)
	}
	return items, nil
}

// A Temporal history with an update replays clean against its code; code
// whose handler no longer completes the update where the history did, and
// code that issues a command the completed history lacks, are refused.
func TestReplayTemporalUpdate(t *testing.T) {
	r := temporalReplayer("TemporalCart", TemporalCart)
	if err := r.ReplayWorkflowHistoryFromJSONFile(nil, updateHistory); err != nil {
		t.Fatal(err)
	}
	var items int
	if err := r.GetWorkflowResult("", &items); err != nil || items != 1 {
		t.Fatalf("replayed result %d, %v; want 1", items, err)
	}
	for _, tc := range []struct {
		fn        any
		step, did string
	}{
		{TemporalCartChecked, "k:update:u-1:completed", "never issued this step"},
		{TemporalCartNotify, "1", `issued activity "Notify", which the history does not record`},
	} {
		err := temporalReplayer("TemporalCart", tc.fn).ReplayWorkflowHistoryFromJSONFile(nil, updateHistory)
		var nd *workflow.NondeterminismError
		if !errors.As(err, &nd) || nd.Step != tc.step || !strings.Contains(nd.Did, tc.did) {
			t.Fatalf("want a NondeterminismError at step %s saying %q, have %v", tc.step, tc.did, err)
		}
	}
}

// The HTTP API's history page (an engine.HistoryPage in JSON) replays as
// it is and reads back to the very events; a page that does not start at
// seq 1 is refused.
func TestReplayHTTPHistoryPage(t *testing.T) {
	hist := recordOrder(t, ReplayOrderV1)
	data, err := json.Marshal(engine.HistoryPage{Events: hist})
	if err != nil {
		t.Fatal(err)
	}
	if err := replayer(ReplayOrderV1).ReplayWorkflowHistoryFromJSON(nil, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	back, err := worker.HistoryFromJSON(bytes.NewReader(data), worker.HistoryJSONOptions{})
	if err != nil || !reflect.DeepEqual(back, hist) {
		t.Fatalf("the page reads back changed: %v", err)
	}
	if err := replayer(ReplayOrderRenamed).ReplayWorkflowHistoryFromJSON(nil, bytes.NewReader(data)); !errors.Is(err, workflow.ErrNondeterminism) {
		t.Fatalf("changed code replays the page: %v", err)
	}
	later, err := json.Marshal(engine.HistoryPage{Events: hist[2:]})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := worker.HistoryFromJSON(bytes.NewReader(later), worker.HistoryJSONOptions{}); err == nil || !strings.Contains(err.Error(), "seq 3 where 1 was due") {
		t.Fatalf("a later page: %v", err)
	}
}
