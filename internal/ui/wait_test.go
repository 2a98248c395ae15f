package ui

import (
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// TestDescribeWait: what a waiting run waits for, in words. "any signal"
// only when the wait names nothing else (the SDK names the signals its
// code reads); the SDK's retry timers read as the retry they are.
func TestDescribeWait(t *testing.T) {
	names := map[string]string{"1": "Charge"}
	for _, c := range []struct {
		w      engine.WaitSpec
		timers []engine.Timer
		want   string
	}{
		{engine.WaitSpec{AnySignal: true}, nil, "any signal"},
		{engine.WaitSpec{AnySignal: true, Signals: []string{"approve"}}, nil, "signal approve"},
		{engine.WaitSpec{AnySignal: true, Signals: []string{"approve", "reject", engine.UpdateSignalName}}, nil, "signals approve, reject; an update"},
		{engine.WaitSpec{AnySignal: true, Signals: []string{engine.AsyncCompletionSignal}}, nil, "its completion by a client (an asynchronous activity)"},
		{engine.WaitSpec{AnySignal: true}, []engine.Timer{{ID: "retry:1:4", FireMS: t0.UnixMilli()}},
			"retry of activity Charge, try 5, at 2026-11-02 12:00:00.000Z"},
		{engine.WaitSpec{AnySignal: true}, []engine.Timer{{ID: "retry:7:1", FireMS: t0.UnixMilli()}},
			"retry of step 7, try 2, at 2026-11-02 12:00:00.000Z"},
		{engine.WaitSpec{AnySignal: true, Steps: []string{"2"}}, []engine.Timer{{ID: "3", FireMS: t0.UnixMilli()}},
			"timer of step 3 at 2026-11-02 12:00:00.000Z; the result of step 2"},
		{engine.WaitSpec{AnySignal: true, Steps: []string{"1", "2"}}, nil, "the result of step 1 (Charge), 2"},
	} {
		if got := strings.Join(describeWait(&c.w, c.timers, names), "; "); got != c.want {
			t.Errorf("%+v %v:\n got %q\nwant %q", c.w, c.timers, got, c.want)
		}
	}
}
