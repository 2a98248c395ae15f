package workflow

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// A live run records a marker only when the value changes; a replay returns
// the same values without calling fn.
func TestMutableSideEffectRecordsChangesOnly(t *testing.T) {
	live := []int{1, 1, 2, 2}
	calls := 0
	source := func(Context) any {
		v := live[calls]
		calls++
		return v
	}
	wf := func(ctx Context) (string, error) {
		var seen []string
		for i := 0; i < 4; i++ {
			var v int
			if err := MutableSideEffect(ctx, "cfg", source, func(a, b any) bool { return a == b }).Get(&v); err != nil {
				return "", err
			}
			seen = append(seen, fmt.Sprint(v))
			if err := Sleep(ctx, time.Second); err != nil {
				return "", err
			}
		}
		return strings.Join(seen, ","), nil
	}
	w := newTestWorker(t)
	res, err := w.drive(wf)
	if err != nil || decodeString(t, res) != "1,1,2,2" {
		t.Fatalf("live run = %q, %v", res, err)
	}
	markers := 0
	for _, ev := range w.history {
		if ev.Type == engine.EventMarkerRecorded {
			markers++
		}
	}
	if markers != 2 || calls != 4 {
		t.Fatalf("%d markers after %d calls, want 2 markers (the value changed twice)", markers, calls)
	}
	calls = 100 // a replay calling fn would index out of range
	res, err = w.replayer().drive(wf)
	if err != nil || decodeString(t, res) != "1,1,2,2" || calls != 100 {
		t.Fatalf("replay = %q, %v, fn called %d times", res, err, calls-100)
	}
}
