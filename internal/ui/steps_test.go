package ui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// ev builds a history event; seqs are given by history.
func ev(typ engine.EventType, step, name string, payload ...string) engine.Event {
	e := engine.Event{Type: typ, Step: step, Name: name}
	if len(payload) > 0 {
		e.Payload = []byte(payload[0])
	}
	return e
}

func history(evs ...engine.Event) []engine.Event {
	for i := range evs {
		evs[i].Seq = uint64(i + 1)
		evs[i].AtMS = int64(1000 * (i + 1))
	}
	return evs
}

// stepsLine writes steps as "step kind name state pending remote attempts", one per line.
func stepsLine(steps []*stepView) string {
	var lines []string
	for _, s := range steps {
		lines = append(lines, fmt.Sprintf("%s %s %q %s pending=%v remote=%v attempts=%d fire=%d retry=%d %s",
			s.Step, s.Kind, s.Name, s.State, s.Pending, s.Remote, s.Attempts, s.FireMS, s.RetryAtMS, s.Detail))
	}
	return strings.Join(lines, "\n")
}

func TestDeriveSteps(t *testing.T) {
	job := &engine.Job{Timers: []engine.Timer{{ID: "4", FireMS: 99000}, {ID: "retry:2", FireMS: 5000}}}
	created := ev(engine.EventJobCreated, "", "Order")
	leased := ev(engine.EventJobLeased, "", "worker-1")
	for _, tc := range []struct {
		name string
		h    []engine.Event
		want string
	}{
		{"no steps", history(created, leased), ""},
		{"an inline activity that completed",
			history(created, leased, ev(engine.EventActivityCompleted, "1", "Reserve", `["ok"]`)),
			`1 activity "Reserve" completed pending=false remote=false attempts=0 fire=0 retry=0 `},
		{"an inline activity retrying after two failed tries",
			history(created, leased,
				ev(engine.EventActivityAttemptFailed, "2", "Charge", `{"attempt":1,"message":"card declined"}`),
				ev(engine.EventActivityAttemptFailed, "2", "Charge", `{"attempt":2,"message":"card declined again","retryAtMS":5000}`)),
			`2 activity "Charge" retrying pending=true remote=false attempts=2 fire=0 retry=5000 try 2 failed: card declined again`},
		{"a failed try whose record is not JSON",
			history(created, ev(engine.EventActivityAttemptFailed, "2", "Charge", `not json`)),
			`2 activity "Charge" retrying pending=true remote=false attempts=1 fire=0 retry=0 a try failed`},
		{"a remote activity, scheduled then failed",
			history(created, ev(engine.EventActivityScheduled, "3", "Pack"), ev(engine.EventActivityFailed, "3", "Pack", `{"message":"x"}`)),
			`3 activity "Pack" failed pending=false remote=true attempts=0 fire=0 retry=0 `},
		{"a pending timer fires at its job timer's time",
			history(created, ev(engine.EventTimerScheduled, "4", "")),
			`4 timer "" waiting pending=true remote=false attempts=0 fire=99000 retry=0 `},
		{"a fired timer is named by the engine in Name; retry timers belong to no step",
			history(created, ev(engine.EventTimerScheduled, "4", ""), ev(engine.EventTimerFired, "", "4"), ev(engine.EventTimerFired, "", "retry:2")),
			`4 timer "" fired pending=false remote=false attempts=0 fire=0 retry=0 `},
		{"a canceled timer",
			history(created, ev(engine.EventTimerScheduled, "5", ""), ev(engine.EventTimerCanceled, "5", "")),
			`5 timer "" canceled pending=false remote=false attempts=0 fire=0 retry=0 `},
		{"children, one open and one done, in the order first recorded",
			history(created, ev(engine.EventChildScheduled, "7", "Ship"), ev(engine.EventChildScheduled, "6", "Bill"),
				ev(engine.EventChildCompleted, "6", "Bill", `["paid"]`)),
			"7 child workflow \"Ship\" scheduled pending=true remote=true attempts=0 fire=0 retry=0 \n" +
				`6 child workflow "Bill" completed pending=false remote=true attempts=0 fire=0 retry=0 `},
		{"markers, signals and status events are not steps",
			history(created, ev(engine.EventMarkerRecorded, "8", "SideEffect"), ev(engine.EventSignalReceived, "", "go"),
				ev(engine.EventJobCompleted, "", "")),
			""},
		{"a step event without a step is skipped",
			history(created, ev(engine.EventActivityCompleted, "", "Lost")), ""},
	} {
		if got := stepsLine(deriveSteps(tc.h, job)); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

func TestPendingAndRemoteSteps(t *testing.T) {
	steps := deriveSteps(history(
		ev(engine.EventJobCreated, "", "Order"),
		ev(engine.EventActivityCompleted, "1", "Reserve"),
		ev(engine.EventChildScheduled, "2", "Ship"),
		ev(engine.EventTimerScheduled, "3", ""),
		ev(engine.EventActivityScheduled, "4", "Pack"),
		ev(engine.EventActivityCompleted, "4", "Pack"),
	), &engine.Job{})
	var pending, remote []string
	for _, s := range pendingSteps(steps) {
		pending = append(pending, s.Step)
	}
	for _, s := range remoteSteps(steps) {
		remote = append(remote, s.Step)
	}
	if strings.Join(pending, ",") != "2,3" || strings.Join(remote, ",") != "2,4" {
		t.Errorf("pending %v, remote %v; want 2,3 and 2,4", pending, remote)
	}
}
