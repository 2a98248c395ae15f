package machine_test

import (
	"bytes"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

func fuzzSampleSchedules() []*engine.Schedule {
	return []*engine.Schedule{
		{ID: "s", Spec: everySpec(60_000), Action: testAction, CreatedMS: 1, UpdatedMS: 2},
		{ID: "c", Spec: engine.ScheduleSpec{CronExpressions: []string{"*/5 * * * *"}, JitterMS: 100, StartAtMS: 5, EndAtMS: 9},
			Action:        engine.ScheduleAction{WorkflowID: "b", Type: "t", Queue: "q", Retry: &engine.RetryPolicy{InitialIntervalMS: 5}},
			Policy:        engine.SchedulePolicy{Overlap: engine.OverlapBufferAll, CatchupWindowMS: 60_000, PauseOnFailure: true},
			State:         engine.ScheduleState{Paused: true, Note: "n", LimitedActions: true, RemainingActions: 2},
			NextNominalMS: 7, DueMS: 8, Buffered: []engine.BufferedStart{{NominalMS: 3, Overlap: engine.OverlapBufferAll}},
			Running: []engine.ScheduleRun{{WorkflowID: "b-x", Job: 4, NominalMS: 3, ActualMS: 4}}, NumActions: 1, NumMissedCatchup: 2, NumSkippedOverlap: 3},
	}
}

// FuzzDecodeSchedule: decoding a schedule record never panics, fails only
// with ErrCorrupt, and what decodes round-trips; the spec of whatever
// decodes compiles or is refused without panicking.
func FuzzDecodeSchedule(f *testing.F) {
	for _, s := range fuzzSampleSchedules() {
		f.Add(machine.EncodeSchedule(s))
	}
	for _, b := range fuzzGarbage(storage.KindSchedule) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := machine.DecodeSchedule(data)
		if err != nil {
			fuzzDecodeErr(t, "DecodeSchedule", err)
			return
		}
		b := machine.EncodeSchedule(s)
		s2, err := machine.DecodeSchedule(b)
		if err != nil {
			t.Fatalf("decoding the re-encoding of %+v: %v", *s, err)
		}
		fuzzSameValue(t, "the schedule", s, s2)
		if b2 := machine.EncodeSchedule(s2); !bytes.Equal(b, b2) {
			t.Fatalf("encoding is not stable: % x, then % x", b, b2)
		}
		if c, _, err := engine.CompileSpec(&s.Spec); err == nil {
			for at, n := c.Next(s.NextNominalMS), 0; at != 0 && n < 3; at, n = c.Next(at), n+1 {
				if next := c.Next(at); next != 0 && next <= at {
					t.Fatalf("spec times go backwards: %d then %d", at, next)
				}
			}
		}
	})
}

// FuzzDecodeScheduleCommand decodes schedule commands from the log form and
// applies them: nothing panics, and what is refused wrote nothing.
func FuzzDecodeScheduleCommand(f *testing.F) {
	for _, c := range []engine.Command{
		&engine.CreateSchedule{Header: engine.Header{NowMS: schedT0}, ID: "s", Spec: everySpec(60_000), Action: testAction, TriggerImmediately: true},
		&engine.CreateSchedule{Header: engine.Header{NowMS: schedT0}, ID: "c", Spec: engine.ScheduleSpec{CronExpressions: []string{"@hourly"}}, Action: testAction, Policy: engine.SchedulePolicy{Overlap: engine.OverlapTerminateOther}},
		&engine.UpdateSchedule{Header: engine.Header{NowMS: schedT0}, ID: "s", Spec: everySpec(1000), Action: testAction},
		&engine.PauseSchedule{Header: engine.Header{NowMS: schedT0}, ID: "s", Paused: true, Note: "n"},
		&engine.TriggerSchedule{Header: engine.Header{NowMS: schedT0}, ID: "s", Overlap: engine.OverlapAllowAll},
		&engine.DeleteSchedule{Header: engine.Header{NowMS: schedT0}, ID: "s"},
		&engine.FireSchedules{Header: engine.Header{NowMS: schedT0 + 3600_000}, Max: 10},
		&engine.BackfillSchedule{Header: engine.Header{NowMS: schedT0}, ID: "s", StartMS: schedT0 - 3600_000, EndMS: schedT0, Overlap: engine.OverlapAllowAll},
		&engine.CompleteAsync{Header: engine.Header{NowMS: schedT0}, LeaseRef: engine.LeaseRef{Job: 1, Attempt: 1}, Result: []byte("r")},
	} {
		b, err := machine.EncodeCommand(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := machine.DecodeCommand(data)
		if err != nil {
			fuzzDecodeErr(t, "DecodeCommand", err)
			return
		}
		b, err := machine.EncodeCommand(c)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := machine.DecodeCommand(b)
		if err != nil {
			t.Fatal(err)
		}
		fuzzSameValue(t, "the command", c, c2)
		h := newSchedHarness(t)
		h.must(&engine.CreateSchedule{ID: "s", Spec: everySpec(60_000), Action: testAction})
		before := h.snapshot()
		if _, err := h.apply(c); err != nil {
			sameStore(t, before, h.snapshot())
		}
		h.verify()
	})
}
