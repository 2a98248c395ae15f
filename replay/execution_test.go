package replay

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// A tiny workflow API over Execution, standing in for sdk/workflow.
func activity(x *Execution, name string) string {
	var res *Resolution
	x.Issue(KindActivity, name, nil, nil, 0, func(r Resolution) { res = &r })
	x.Dispatcher().Block(func() bool { return res != nil })
	return string(res.Payload)
}

func sleep(x *Execution, ms int64) {
	fired := false
	x.Issue(KindTimer, "", nil, nil, x.Now().UnixMilli()+ms, func(Resolution) { fired = true })
	x.Dispatcher().Block(func() bool { return fired })
}

// fakeWorker plays the worker and the engine: it executes inline activities,
// fires timers, and appends the events they produce, counting executions.
type fakeWorker struct {
	history  []engine.Event
	executed map[string]int // activity name -> times run
	nowMS    int64
}

func newFakeWorker() *fakeWorker {
	return &fakeWorker{executed: map[string]int{}, nowMS: 1000}
}

func (w *fakeWorker) append(ev engine.Event) engine.Event {
	w.nowMS += 10
	ev.Seq, ev.AtMS = uint64(len(w.history)+1), w.nowMS
	w.history = append(w.history, ev)
	return ev
}

// drive runs x to its end: replay what w holds, then act live.
func (w *fakeWorker) drive(t *testing.T, x *Execution) (string, error) {
	t.Helper()
	if len(w.history) == 0 {
		w.append(engine.Event{Type: engine.EventJobCreated, Payload: []byte("in")})
	}
	if err := x.Advance(w.history, true); err != nil {
		return "", err
	}
	for step := 0; step < 100; step++ {
		if done, res, err := x.Finished(); done {
			return string(res), err
		}
		var next []engine.Event
		for _, m := range x.DrainMarkers() {
			next = append(next, w.append(engine.Event{Type: m.Type, Step: m.Step, Name: m.Name, Payload: m.Payload}))
		}
		for _, c := range x.Unresolved() {
			switch c.Kind {
			case KindActivity:
				w.executed[c.Name]++
				next = append(next, w.append(engine.Event{Type: engine.EventActivityCompleted, Step: c.Step, Name: c.Name,
					Payload: []byte(c.Name + "-result"), Commit: true}))
			case KindTimer:
				if !c.Recorded {
					next = append(next, w.append(engine.Event{Type: engine.EventTimerScheduled, Step: c.Step}))
				}
				next = append(next, w.append(engine.Event{Type: engine.EventTimerFired, Name: c.Step}))
			}
		}
		if len(next) == 0 {
			t.Fatal("workflow blocked with nothing to do")
		}
		if err := x.Advance(next, false); err != nil {
			return "", err
		}
	}
	t.Fatal("workflow did not finish")
	return "", nil
}

func orderV1(x *Execution, input []byte) {
	a := activity(x, "Reserve")
	sleep(x, 5000)
	b := activity(x, "Charge")
	x.Finish([]byte(a+"+"+b), nil)
}

func TestLiveRunThenReplayExecutesNothing(t *testing.T) {
	w := newFakeWorker()
	res, err := w.drive(t, NewExecution(1, orderV1))
	if err != nil || res != "Reserve-result+Charge-result" {
		t.Fatalf("live run = %q, %v", res, err)
	}
	var types []engine.EventType
	for _, ev := range w.history {
		types = append(types, ev.Type)
	}
	want := []engine.EventType{engine.EventJobCreated, engine.EventActivityCompleted, engine.EventTimerScheduled,
		engine.EventTimerFired, engine.EventActivityCompleted}
	if !reflect.DeepEqual(types, want) {
		t.Fatalf("history %v, want %v", types, want)
	}
	// A new worker replays the whole history: same result, nothing run again.
	replayer := &fakeWorker{history: w.history, executed: map[string]int{}}
	res2, err := replayer.drive(t, NewExecution(1, orderV1))
	if err != nil || res2 != res {
		t.Fatalf("replay = %q, %v; want %q", res2, err, res)
	}
	if len(replayer.executed) != 0 || len(replayer.history) != len(w.history) {
		t.Fatalf("replay executed %v and wrote %d events", replayer.executed, len(replayer.history)-len(w.history))
	}
}

// A crash after the first activity: a new worker catches up from history
// and runs only what is left.
func TestResumeAfterCrashRunsOnlyTheRest(t *testing.T) {
	w := newFakeWorker()
	w.append(engine.Event{Type: engine.EventJobCreated})
	w.append(engine.Event{Type: engine.EventActivityCompleted, Step: "1", Name: "Reserve", Payload: []byte("R"), Commit: true})
	res, err := w.drive(t, NewExecution(1, orderV1))
	if err != nil || res != "R+Charge-result" {
		t.Fatalf("resumed run = %q, %v", res, err)
	}
	if w.executed["Reserve"] != 0 || w.executed["Charge"] != 1 {
		t.Fatalf("executions %v, want only Charge once", w.executed)
	}
}

func TestChangedCodeIsNondeterministic(t *testing.T) {
	w := newFakeWorker()
	if _, err := w.drive(t, NewExecution(1, orderV1)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		code     Entry
		step     string
		did      string
		recorded engine.EventType
	}{
		{"activity renamed", func(x *Execution, _ []byte) {
			activity(x, "Hold") // line that must be named in the error
			x.Finish(nil, nil)
		}, "1", `issued activity "Hold"`, engine.EventActivityCompleted},
		{"timer replaced by activity", func(x *Execution, _ []byte) {
			activity(x, "Reserve")
			activity(x, "Charge")
			x.Finish(nil, nil)
		}, "2", `issued activity "Charge"`, engine.EventTimerScheduled},
		{"step dropped", func(x *Execution, _ []byte) {
			x.Finish(nil, nil)
		}, "1", "never issued this step", engine.EventActivityCompleted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := NewExecution(1, tt.code)
			defer x.Close()
			err := x.Advance(w.history, true)
			var nd *NondeterminismError
			if !errors.As(err, &nd) || !errors.Is(err, ErrNondeterminism) {
				t.Fatalf("error %v, want a NondeterminismError", err)
			}
			if nd.Step != tt.step || !strings.Contains(nd.Did, tt.did) || nd.Event.Type != tt.recorded || nd.Code() != NondeterminismCode {
				t.Fatalf("error %+v, want step %s, %q against %s", nd, tt.step, tt.did, tt.recorded)
			}
			if tt.did != "never issued this step" && !strings.Contains(nd.Where, "execution_test.go") {
				t.Fatalf("error names %q, want the workflow code's line", nd.Where)
			}
			// The stop is sticky.
			if err2 := x.Advance(nil, true); err2 != err {
				t.Fatalf("second Advance: %v", err2)
			}
		})
	}
}

// An execution kept in memory resumes with only the new events and ends
// where a replay from the start ends.
func TestCachedResumeTakesOnlyNewEvents(t *testing.T) {
	w := newFakeWorker()
	if _, err := w.drive(t, NewExecution(1, orderV1)); err != nil {
		t.Fatal(err)
	}
	cut := 3 // up to the timer being scheduled
	cached := NewExecution(1, orderV1)
	if err := cached.Advance(w.history[:cut], true); err != nil {
		t.Fatal(err)
	}
	if err := cached.Advance(w.history, false); err != nil { // overlapping events are skipped
		t.Fatal(err)
	}
	done, res, err := cached.Finished()
	if !done || err != nil || string(res) != "Reserve-result+Charge-result" || cached.LastSeq() != uint64(len(w.history)) {
		t.Fatalf("cached resume: done=%v res=%q err=%v last=%d", done, res, err, cached.LastSeq())
	}
	if err := cached.Advance([]engine.Event{{Seq: 99}}, false); err == nil {
		t.Fatal("a gap in the history was accepted")
	}
}

func TestSignalsAndMarkersReplay(t *testing.T) {
	code := func(x *Execution, _ []byte) {
		var got []string
		x.OnSignal(func(name string, p []byte) { got = append(got, name+"="+string(p)) })
		calls := 0
		v, _ := x.Marker("rand", func() ([]byte, error) { calls++; return []byte(fmt.Sprint(41 + calls)), nil })
		ver, ok, _ := x.KeyedMarker("change-1", "version", func() ([]byte, error) { return []byte("2"), nil })
		x.Dispatcher().Block(func() bool { return len(got) == 2 })
		x.Finish([]byte(fmt.Sprintf("%s %s %v %v", v, ver, ok, got)), nil)
	}
	w := newFakeWorker()
	w.append(engine.Event{Type: engine.EventJobCreated})
	x := NewExecution(1, code)
	if err := x.Advance(w.history, false); err != nil {
		t.Fatal(err)
	}
	for _, m := range x.DrainMarkers() {
		w.append(engine.Event{Type: m.Type, Step: m.Step, Name: m.Name, Payload: m.Payload})
	}
	w.append(engine.Event{Type: engine.EventSignalReceived, Name: "a", Payload: []byte("1")})
	w.append(engine.Event{Type: engine.EventSignalReceived, Name: "b", Payload: []byte("2")})
	if err := x.Advance(w.history, false); err != nil {
		t.Fatal(err)
	}
	_, live, _ := x.Finished()
	want := "42 2 true [a=1 b=2]"
	if string(live) != want {
		t.Fatalf("live result %q, want %q", live, want)
	}
	// Replay returns the recorded marker values without computing them.
	r := NewExecution(1, code)
	if err := r.Advance(w.history, true); err != nil {
		t.Fatal(err)
	}
	if _, res, _ := r.Finished(); string(res) != want {
		t.Fatalf("replayed result %q, want %q", res, want)
	}
	// A history from before the version marker existed replays without it.
	old := []engine.Event{w.history[0], w.history[1], w.history[3], w.history[4]}
	old[1].Seq, old[2].Seq, old[3].Seq = 2, 3, 4
	o := NewExecution(1, code)
	if err := o.Advance(old, true); err != nil {
		t.Fatal(err)
	}
	if _, res, _ := o.Finished(); string(res) != "42  false [a=1 b=2]" {
		t.Fatalf("old history result %q", res)
	}
}

// A command issued live is marked Recorded once its record event is applied,
// so a cached execution never asks the worker to issue it again.
func TestLiveCommandBecomesRecorded(t *testing.T) {
	x := NewExecution(1, func(x *Execution, _ []byte) {
		x.Issue(KindChild, "Child", nil, nil, 0, nil)
		x.Dispatcher().Block(func() bool { return false })
	})
	defer x.Close()
	if err := x.Advance([]engine.Event{{Seq: 1, Type: engine.EventJobCreated}}, false); err != nil {
		t.Fatal(err)
	}
	if c := x.Unresolved(); len(c) != 1 || c[0].Recorded {
		t.Fatalf("unresolved %+v, want one unrecorded child", c)
	}
	if err := x.Advance([]engine.Event{{Seq: 2, Type: engine.EventChildScheduled, Step: "1", Name: "Child"}}, false); err != nil {
		t.Fatal(err)
	}
	if c := x.Unresolved(); len(c) != 1 || !c[0].Recorded {
		t.Fatalf("after its record: %+v, want Recorded", c)
	}
}
