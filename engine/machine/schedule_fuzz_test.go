package engine

import (
	"bytes"
	"testing"

	"github.com/heddlewf/heddle/storage"
)

func fuzzSampleSchedules() []*Schedule {
	return []*Schedule{
		{ID: "s", Spec: everySpec(60_000), Action: testAction, CreatedMS: 1, UpdatedMS: 2},
		{ID: "c", Spec: ScheduleSpec{CronExpressions: []string{"*/5 * * * *"}, JitterMS: 100, StartAtMS: 5, EndAtMS: 9},
			Action:        ScheduleAction{WorkflowID: "b", Type: "t", Queue: "q", Retry: &RetryPolicy{InitialIntervalMS: 5}},
			Policy:        SchedulePolicy{Overlap: OverlapBufferAll, CatchupWindowMS: 60_000, PauseOnFailure: true},
			State:         ScheduleState{Paused: true, Note: "n", LimitedActions: true, RemainingActions: 2},
			NextNominalMS: 7, DueMS: 8, Buffered: []BufferedStart{{NominalMS: 3, Overlap: OverlapBufferAll}},
			Running: []ScheduleRun{{WorkflowID: "b-x", Job: 4, NominalMS: 3, ActualMS: 4}}, NumActions: 1, NumMissedCatchup: 2, NumSkippedOverlap: 3},
	}
}

// FuzzDecodeSchedule: decoding a schedule record never panics, fails only
// with ErrCorrupt, and what decodes round-trips; the spec of whatever
// decodes compiles or is refused without panicking.
func FuzzDecodeSchedule(f *testing.F) {
	for _, s := range fuzzSampleSchedules() {
		f.Add(EncodeSchedule(s))
	}
	for _, b := range fuzzGarbage(storage.KindSchedule) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodeSchedule(data)
		if err != nil {
			fuzzDecodeErr(t, "DecodeSchedule", err)
			return
		}
		b := EncodeSchedule(s)
		s2, err := DecodeSchedule(b)
		if err != nil {
			t.Fatalf("decoding the re-encoding of %+v: %v", *s, err)
		}
		fuzzSameValue(t, "the schedule", s, s2)
		if b2 := EncodeSchedule(s2); !bytes.Equal(b, b2) {
			t.Fatalf("encoding is not stable: % x, then % x", b, b2)
		}
		if c, _, err := CompileSpec(&s.Spec); err == nil {
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
	for _, c := range []Command{
		&CreateSchedule{Header: Header{NowMS: schedT0}, ID: "s", Spec: everySpec(60_000), Action: testAction, TriggerImmediately: true},
		&CreateSchedule{Header: Header{NowMS: schedT0}, ID: "c", Spec: ScheduleSpec{CronExpressions: []string{"@hourly"}}, Action: testAction, Policy: SchedulePolicy{Overlap: OverlapTerminateOther}},
		&UpdateSchedule{Header: Header{NowMS: schedT0}, ID: "s", Spec: everySpec(1000), Action: testAction},
		&PauseSchedule{Header: Header{NowMS: schedT0}, ID: "s", Paused: true, Note: "n"},
		&TriggerSchedule{Header: Header{NowMS: schedT0}, ID: "s", Overlap: OverlapAllowAll},
		&DeleteSchedule{Header: Header{NowMS: schedT0}, ID: "s"},
		&FireSchedules{Header: Header{NowMS: schedT0 + 3600_000}, Max: 10},
		&BackfillSchedule{Header: Header{NowMS: schedT0}, ID: "s", StartMS: schedT0 - 3600_000, EndMS: schedT0, Overlap: OverlapAllowAll},
		&CompleteAsync{Header: Header{NowMS: schedT0}, LeaseRef: LeaseRef{Job: 1, Attempt: 1}, Result: []byte("r")},
	} {
		b, err := EncodeCommand(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeCommand(data)
		if err != nil {
			fuzzDecodeErr(t, "DecodeCommand", err)
			return
		}
		b, err := EncodeCommand(c)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := DecodeCommand(b)
		if err != nil {
			t.Fatal(err)
		}
		fuzzSameValue(t, "the command", c, c2)
		h := newSchedHarness(t)
		h.must(&CreateSchedule{ID: "s", Spec: everySpec(60_000), Action: testAction})
		before := h.snapshot()
		if _, err := h.apply(c); err != nil {
			sameStore(t, before, h.snapshot())
		}
		h.verify()
	})
}
