package workflow

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/converter"
)

// Activities of the tests. The fake worker runs them by ActivityName.
func Reserve(orderID string) (string, error) { return "reserved-" + orderID, nil }
func Charge(orderID string, n int) (string, error) {
	return fmt.Sprintf("charged-%s-%d", orderID, n), nil
}

// activityFn is an activity as the fake worker runs it: encoded input in,
// encoded result or error out.
type activityFn func(input []byte) ([]byte, error)

func testActivities() map[string]activityFn {
	return map[string]activityFn{
		ActivityName(Reserve): func(in []byte) ([]byte, error) {
			var id string
			if err := converter.Decode(in, &id); err != nil {
				return nil, err
			}
			r, err := Reserve(id)
			if err != nil {
				return nil, err
			}
			return converter.Encode(r)
		},
		ActivityName(Charge): func(in []byte) ([]byte, error) {
			var id string
			var n int
			if err := converter.Decode(in, &id, &n); err != nil {
				return nil, err
			}
			r, _ := Charge(id, n)
			return converter.Encode(r)
		},
		"ChargeV2": func([]byte) ([]byte, error) { return converter.Encode("charged-v2") },
		"Declined": func([]byte) ([]byte, error) {
			return nil, NewApplicationError("card declined", "CardDeclined", true)
		},
		"Plain": func([]byte) ([]byte, error) { return nil, errors.New("boom") },
	}
}

// testWorker plays the worker and the engine for an Execution: it runs
// activities, fires timers, delivers queued signals and a cancellation,
// and appends the events they produce to its history.
type testWorker struct {
	t          *testing.T
	history    []engine.Event
	activities map[string]activityFn
	executed   map[string]int
	nowMS      int64
	// signals are delivered when the workflow waits on nothing else, or,
	// with signalsFirst, as soon as the workflow blocks.
	signals      []engine.Event
	signalsFirst bool
	// cancelFirst appends a cancel_requested event before running commands.
	cancelFirst bool
}

func newTestWorker(t *testing.T) *testWorker {
	return &testWorker{t: t, activities: testActivities(), executed: map[string]int{}, nowMS: 1_000_000}
}

func (w *testWorker) signal(name string, v any) {
	p, err := converter.Encode(v)
	if err != nil {
		w.t.Fatal(err)
	}
	w.signals = append(w.signals, engine.Event{Type: engine.EventSignalReceived, Name: name, Payload: p})
}

func (w *testWorker) append(ev engine.Event) engine.Event {
	w.nowMS += 10
	ev.Seq, ev.AtMS = uint64(len(w.history)+1), w.nowMS
	w.history = append(w.history, ev)
	return ev
}

// replayer returns a worker holding a copy of w's history and nothing else.
func (w *testWorker) replayer() *testWorker {
	r := newTestWorker(w.t)
	r.history = slices.Clone(w.history)
	return r
}

// drive runs the workflow fn to its end: the history w holds first, as a
// replay, then live. It returns the encoded result and the workflow error,
// or the execution's fault.
func (w *testWorker) drive(fn any, input ...any) ([]byte, error) {
	return w.driveEntry(newEntryFor(fn, infoOf(sdkhook.WorkflowInfo{WorkflowID: "wf-1", RunID: "run-1", WorkflowType: "test", TaskQueue: "q"})), input...)
}

func (w *testWorker) driveEntry(entry replay.Entry, input ...any) ([]byte, error) {
	t := w.t
	t.Helper()
	x := replay.NewExecution(1, entry)
	t.Cleanup(x.Close)
	fresh := len(w.history) == 0
	if fresh {
		in, err := converter.Encode(input...)
		if err != nil {
			t.Fatal(err)
		}
		w.append(engine.Event{Type: engine.EventJobCreated, Payload: in})
	}
	// A history this worker just started is live, not a replay.
	if err := x.Advance(w.history, !fresh); err != nil {
		return nil, err
	}
	for range 100 {
		if done, res, err := x.Finished(); done {
			return res, err
		}
		var next []engine.Event
		for _, m := range x.DrainMarkers() {
			next = append(next, w.append(engine.Event{Type: m.Type, Step: m.Step, Name: m.Name, Payload: m.Payload}))
		}
		cmds := x.Unresolved()
		switch {
		case w.cancelFirst:
			w.cancelFirst = false
			next = append(next, w.append(engine.Event{Type: engine.EventCancelRequested}))
		case len(w.signals) > 0 && (w.signalsFirst || len(cmds) == 0):
			for _, s := range w.signals {
				next = append(next, w.append(s))
			}
			w.signals = nil
		default:
			next = append(next, w.runCommands(cmds)...)
		}
		if len(next) == 0 {
			t.Fatal("workflow blocked with nothing to do")
		}
		if err := x.Advance(next, false); err != nil {
			return nil, err
		}
	}
	t.Fatal("workflow did not finish")
	return nil, nil
}

func (w *testWorker) runCommands(cmds []*replay.Command) []engine.Event {
	var next []engine.Event
	for _, c := range cmds {
		switch c.Kind {
		case replay.KindActivity:
			if _, ok := c.Options.(sdkhook.Activity[ActivityOptions]); !ok {
				w.t.Fatalf("activity %s has options %T", c.Name, c.Options)
			}
			w.executed[c.Name]++
			fn := w.activities[c.Name]
			if fn == nil {
				w.t.Fatalf("no activity %q", c.Name)
			}
			res, err := fn(c.Input)
			if err != nil {
				next = append(next, w.append(engine.Event{Type: engine.EventActivityFailed, Step: c.Step, Name: c.Name, Payload: sdkhook.EncodeFailure(err)}))
			} else {
				next = append(next, w.append(engine.Event{Type: engine.EventActivityCompleted, Step: c.Step, Name: c.Name, Payload: res}))
			}
		case replay.KindTimer:
			if !c.Recorded {
				next = append(next, w.append(engine.Event{Type: engine.EventTimerScheduled, Step: c.Step}))
			}
			w.nowMS = max(w.nowMS, c.FireAt)
			next = append(next, w.append(engine.Event{Type: engine.EventTimerFired, Name: c.Step}))
		}
	}
	return next
}

var sideEffectCalls int

func orderWorkflow(ctx Context, orderID string) (string, error) {
	ctx = WithActivityOptions(ctx, ActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &RetryPolicy{MaximumAttempts: 3}})
	var reserved string
	if err := ExecuteActivity(ctx, Reserve, orderID).Get(ctx, &reserved); err != nil {
		return "", err
	}
	start := Now(ctx)
	if err := Sleep(ctx, 5*time.Second); err != nil {
		return "", err
	}
	slept := Now(ctx).Sub(start) >= 5*time.Second
	var approver string
	GetSignalChannel(ctx, "approve").Receive(ctx, &approver)
	var n int
	if err := SideEffect(ctx, func(Context) any { sideEffectCalls++; return 40 + sideEffectCalls }).Get(&n); err != nil {
		return "", err
	}
	var charged string
	if err := ExecuteActivity(ctx, Charge, orderID, n).Get(ctx, &charged); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s %s slept=%v by %s", reserved, charged, slept, approver), nil
}

// orderWorkflowRenamed is orderWorkflow with its first activity renamed.
func orderWorkflowRenamed(ctx Context, orderID string) (string, error) {
	err := ExecuteActivity(ctx, "Hold", orderID).Get(ctx, nil) // the line the error must name
	return "", err
}

func decodeString(t *testing.T, res []byte) string {
	t.Helper()
	var s string
	if err := converter.Decode(res, &s); err != nil {
		t.Fatalf("result %q: %v", res, err)
	}
	return s
}

func TestOrderWorkflowRunsLiveAndReplays(t *testing.T) {
	sideEffectCalls = 0
	w := newTestWorker(t)
	w.signal("approve", "alice")
	res, err := w.drive(orderWorkflow, "o-1")
	if err != nil {
		t.Fatal(err)
	}
	want := "reserved-o-1 charged-o-1-41 slept=true by alice"
	if got := decodeString(t, res); got != want {
		t.Fatalf("live result %q, want %q", got, want)
	}
	if w.executed["Reserve"] != 1 || w.executed["Charge"] != 1 || sideEffectCalls != 1 {
		t.Fatalf("executed %v, side effect calls %d", w.executed, sideEffectCalls)
	}
	var types []engine.EventType
	for _, ev := range w.history {
		types = append(types, ev.Type)
	}
	wantTypes := []engine.EventType{engine.EventJobCreated, engine.EventActivityCompleted, engine.EventTimerScheduled,
		engine.EventTimerFired, engine.EventSignalReceived, engine.EventMarkerRecorded, engine.EventActivityCompleted}
	if !slices.Equal(types, wantTypes) {
		t.Fatalf("history %v, want %v", types, wantTypes)
	}

	r := w.replayer()
	res2, err := r.drive(orderWorkflow, "o-1")
	if err != nil || decodeString(t, res2) != want {
		t.Fatalf("replay = %q, %v", res2, err)
	}
	if len(r.executed) != 0 || len(r.history) != len(w.history) || sideEffectCalls != 1 {
		t.Fatalf("replay executed %v, wrote %d events, side effect calls %d",
			r.executed, len(r.history)-len(w.history), sideEffectCalls)
	}
}

func TestRenamedActivityIsNondeterministic(t *testing.T) {
	w := newTestWorker(t)
	w.signal("approve", "bob")
	if _, err := w.drive(orderWorkflow, "o-2"); err != nil {
		t.Fatal(err)
	}
	_, err := w.replayer().drive(orderWorkflowRenamed, "o-2")
	var nd *replay.NondeterminismError
	if !errors.As(err, &nd) {
		t.Fatalf("error %v, want a NondeterminismError", err)
	}
	if nd.Step != "1" || !strings.Contains(nd.Did, `"Hold"`) || !strings.Contains(nd.Where, "command_test.go") {
		t.Fatalf("error %+v, want step 1, Hold, at command_test.go", nd)
	}
}

func versionedV1(ctx Context) (string, error) {
	err := ExecuteActivity(ctx, "Plain").Get(ctx, nil)
	return "v1", err
}

func versionedV2(ctx Context) (string, error) {
	v := GetVersion(ctx, "charge", DefaultVersion, 2)
	var res string
	if v == DefaultVersion {
		_ = ExecuteActivity(ctx, "Plain").Get(ctx, nil)
		res = "old"
	} else if err := ExecuteActivity(ctx, "ChargeV2").Get(ctx, &res); err != nil {
		return "", err
	}
	// A second call answers the same.
	if again := GetVersion(ctx, "charge", DefaultVersion, 2); again != v {
		return "", fmt.Errorf("second GetVersion %d, first %d", again, v)
	}
	return fmt.Sprintf("%d %s", v, res), nil
}

func TestGetVersion(t *testing.T) {
	old := newTestWorker(t)
	if _, err := old.drive(versionedV1); err == nil {
		t.Fatal("Plain should have failed")
	}
	r := old.replayer()
	res, err := r.drive(versionedV2)
	if err != nil || decodeString(t, res) != "-1 old" || len(r.executed) != 0 {
		t.Fatalf("old history: %q, %v, executed %v", res, err, r.executed)
	}

	live := newTestWorker(t)
	res, err = live.drive(versionedV2)
	if err != nil || decodeString(t, res) != "2 charged-v2" {
		t.Fatalf("live: %q, %v", res, err)
	}
	r = live.replayer()
	if res, err = r.drive(versionedV2); err != nil || decodeString(t, res) != "2 charged-v2" || len(r.executed) != 0 {
		t.Fatalf("replay of the live run: %q, %v, executed %v", res, err, r.executed)
	}

	// Code that dropped support for the old version cannot replay it.
	_, err = old.replayer().drive(func(ctx Context) error {
		GetVersion(ctx, "charge", 1, 2)
		return nil
	})
	var pe *replay.PanicError
	if !errors.As(err, &pe) || !strings.Contains(fmt.Sprint(pe.Value), "outside the supported range") {
		t.Fatalf("error %v, want a panic about the range", err)
	}
}

func TestActivityFailure(t *testing.T) {
	w := newTestWorker(t)
	_, err := w.drive(func(ctx Context) error {
		return ExecuteActivity(ctx, "Declined", 1).Get(ctx, nil)
	})
	var ae *ActivityError
	if !errors.As(err, &ae) {
		t.Fatalf("error %T %v, want an *ActivityError", err, err)
	}
	if ae.ActivityType().GetName() != "Declined" || ae.ActivityID() != "1" {
		t.Fatalf("error %+v", ae)
	}
	var app *ApplicationError
	if !errors.As(err, &app) || app.Type() != "CardDeclined" || app.Message() != "card declined" || !app.NonRetryable() {
		t.Fatalf("cause %v", errors.Unwrap(ae))
	}

	w = newTestWorker(t)
	_, err = w.drive(func(ctx Context) error { return ExecuteActivity(ctx, "Plain").Get(ctx, nil) })
	if !errors.As(err, &app) || app.Type() != "" || app.Message() != "boom" || app.NonRetryable() {
		t.Fatalf("plain error %+v", err)
	}
	if want := "activity error (type: Plain, step: 1): boom"; err.Error() != want {
		t.Fatalf("message %q, want %q", err, want)
	}
}

func TestActivityName(t *testing.T) {
	for _, tt := range []struct {
		fn   any
		want string
	}{
		{Reserve, "Reserve"},
		{Charge, "Charge"},
		{"Named", "Named"},
		{converter.Encode, "Encode"},
		{(*testWorker).signal, "signal"},
		{newTestWorker(t).signal, "signal"},
	} {
		if got := ActivityName(tt.fn); got != tt.want {
			t.Errorf("ActivityName(%T) = %q, want %q", tt.fn, got, tt.want)
		}
	}
	mustPanic(t, func() { ActivityName(42) })
}

func awaitWorkflow(ctx Context) (string, error) {
	approved := false
	Go(ctx, func(ctx Context) {
		GetSignalChannel(ctx, "approve").Receive(ctx, &approved)
	})
	ok, err := AwaitWithTimeout(ctx, time.Hour, func() bool { return approved })
	return fmt.Sprintf("ok=%v", ok), err
}

func TestAwaitWithTimeout(t *testing.T) {
	// The timer fires first.
	w := newTestWorker(t)
	res, err := w.drive(awaitWorkflow)
	if err != nil || decodeString(t, res) != "ok=false" {
		t.Fatalf("timeout: %q, %v", res, err)
	}
	// The condition holds first.
	w = newTestWorker(t)
	w.signal("approve", true)
	w.signalsFirst = true
	res, err = w.drive(awaitWorkflow)
	if err != nil || decodeString(t, res) != "ok=true" {
		t.Fatalf("condition: %q, %v", res, err)
	}
	// Both replay to the same outcome.
	if res, err = w.replayer().drive(awaitWorkflow); err != nil || decodeString(t, res) != "ok=true" {
		t.Fatalf("replay: %q, %v", res, err)
	}
	// Cancellation ends the wait with ErrCanceled.
	w = newTestWorker(t)
	w.cancelFirst = true
	if _, err = w.drive(awaitWorkflow); !errors.Is(err, ErrCanceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestSignalsBeforeChannelAreKeptInOrder(t *testing.T) {
	wf := func(ctx Context) ([]string, error) {
		if err := Sleep(ctx, time.Minute); err != nil {
			return nil, err
		}
		ch := GetSignalChannel(ctx, "items")
		if GetSignalChannel(ctx, "items") != ch {
			return nil, errors.New("two channels for one name")
		}
		var got []string
		for range 3 {
			var s string
			ch.Receive(ctx, &s)
			got = append(got, s)
		}
		if ch.ReceiveAsync(nil) {
			return nil, errors.New("a fourth item")
		}
		var other int
		GetSignalChannel(ctx, "other").Receive(ctx, &other)
		return append(got, fmt.Sprint(other)), nil
	}
	w := newTestWorker(t)
	w.signal("items", "a")
	w.signal("other", 7)
	w.signal("items", "b")
	w.signal("items", "c")
	w.signalsFirst = true
	res, err := w.drive(wf)
	var got []string
	if err == nil {
		err = converter.Decode(res, &got)
	}
	if err != nil || strings.Join(got, ",") != "a,b,c,7" {
		t.Fatalf("got %v, %v", got, err)
	}
	// The signals reached the history before the timer fired.
	if w.history[2].Type != engine.EventSignalReceived || w.history[len(w.history)-1].Type != engine.EventTimerFired {
		t.Fatalf("history %v", w.history)
	}
}

func TestCancelledActivityAndTimer(t *testing.T) {
	w := newTestWorker(t)
	w.cancelFirst = true
	res, err := w.drive(func(ctx Context) (string, error) {
		act := ExecuteActivity(ctx, Reserve, "o")
		timer := NewTimer(ctx, time.Minute)
		e1, e2 := act.Get(ctx, nil), timer.Get(ctx, nil)
		e3 := ExecuteActivity(ctx, Reserve, "late").Get(ctx, nil)
		return fmt.Sprint(IsCanceledError(e1), IsCanceledError(e2), IsCanceledError(e3)), nil
	})
	if err != nil || decodeString(t, res) != "true true true" || len(w.executed) != 0 {
		t.Fatalf("%q, %v, executed %v", res, err, w.executed)
	}
}

func TestTimerZeroAndSleep(t *testing.T) {
	w := newTestWorker(t)
	res, err := w.drive(func(ctx Context) (int64, error) {
		t0 := Now(ctx)
		if !NewTimer(ctx, 0).IsReady() {
			return 0, errors.New("a zero timer is not ready")
		}
		if err := Sleep(ctx, 1500*time.Millisecond); err != nil {
			return 0, err
		}
		return Now(ctx).Sub(t0).Milliseconds(), nil
	})
	var ms int64
	if err == nil {
		err = converter.Decode(res, &ms)
	}
	if err != nil || ms < 1500 || len(w.history) != 3 {
		t.Fatalf("slept %d ms, %v, history %d events", ms, err, len(w.history))
	}
}

func TestEntryRejectsBadFunctions(t *testing.T) {
	for _, fn := range []any{nil, 42, func() error { return nil }, func(Context) {}, func(Context, ...int) error { return nil }} {
		w := newTestWorker(t)
		_, err := w.drive(fn)
		if err == nil || !strings.Contains(err.Error(), "workflow") {
			t.Errorf("%T: error %v", fn, err)
		}
	}
	// An input that does not fit the parameters fails the run.
	w := newTestWorker(t)
	if _, err := w.drive(func(Context, int) error { return nil }, "not a number"); err == nil || !strings.Contains(err.Error(), "input") {
		t.Fatalf("error %v", err)
	}
	// Missing arguments are zero values, as in Temporal.
	w = newTestWorker(t)
	res, err := w.drive(func(_ Context, s string, n int) (string, error) { return fmt.Sprintf("%s/%d", s, n), nil }, "only one")
	if err != nil || string(res) != `["only one/0"]` {
		t.Fatalf("missing argument: %s, %v; want [\"only one/0\"]", res, err)
	}
}

func TestInfoAndLoggerSkipReplay(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	wf := func(ctx Context) (string, error) {
		GetLogger(ctx).Info("before timer")
		if err := Sleep(ctx, time.Second); err != nil {
			return "", err
		}
		GetLogger(ctx).Info("after timer", "k", 1)
		i := GetInfo(ctx)
		return i.WorkflowID + "/" + i.RunID + "/" + i.TaskQueue, nil
	}
	entry := newEntry(wf, Info{WorkflowID: "wf-9", RunID: "r", TaskQueue: "q"}, logger)
	w := newTestWorker(t)
	res, err := w.driveEntry(entry)
	if err != nil || decodeString(t, res) != "wf-9/r/q" {
		t.Fatalf("%q, %v", res, err)
	}
	if n := strings.Count(buf.String(), "msg="); n != 2 || !strings.Contains(buf.String(), "workflowID=wf-9") {
		t.Fatalf("live log:\n%s", buf.String())
	}
	buf.Reset()
	// As the real worker does, record the end: a replay of the history then
	// re-executes every decision and logs nothing.
	w.append(engine.Event{Type: engine.EventJobCompleted, Payload: res})
	if _, err := w.replayer().driveEntry(entry); err != nil || buf.Len() != 0 {
		t.Fatalf("replay logged %q, %v", buf.String(), err)
	}
}

func TestActivityOptionsTravelWithContext(t *testing.T) {
	ctx := testCtx(t)
	if GetActivityOptions(ctx).TaskQueue != "" {
		t.Fatal("options on a bare context")
	}
	rp := &RetryPolicy{MaximumAttempts: 2}
	ctx = WithActivityOptions(ctx, ActivityOptions{TaskQueue: "gpu", RetryPolicy: rp})
	rp.MaximumAttempts = 9
	if o := GetActivityOptions(ctx); o.TaskQueue != "gpu" || o.RetryPolicy.MaximumAttempts != 2 {
		t.Fatalf("options %+v", o)
	}
}
