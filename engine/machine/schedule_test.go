package machine_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// The harness starts at 1_000_000 ms; schedule tests work on a round epoch
// so that the times read well.
const schedT0 = int64(1_700_000_000_000) // 2023-11-14T22:13:20Z

func newSchedHarness(t *testing.T) *harness {
	h := newHarness(t)
	h.now = schedT0
	return h
}

func everySpec(ms int64) engine.ScheduleSpec {
	return engine.ScheduleSpec{Intervals: []engine.ScheduleInterval{{EveryMS: ms}}}
}

var testAction = engine.ScheduleAction{Type: "report", Queue: "q", Input: []byte("in")}

func (h *harness) schedule(id string) *engine.Schedule {
	h.t.Helper()
	var s *engine.Schedule
	viewOK(h.t, h.db, func(r *storage.Reader) error {
		b, err := r.Get(storage.ScheduleKey(id))
		if err != nil {
			return err
		}
		s, err = machine.DecodeSchedule(b)
		return err
	})
	return s
}

// fireAt moves the clock to at and applies FireSchedules, returning the
// workflow ids of the runs it started.
func (h *harness) fireAt(at int64) []string {
	h.t.Helper()
	h.now = at
	res := h.must(&engine.FireSchedules{Max: 100}).(*engine.SweepResult)
	var ids []string
	for _, j := range res.Jobs {
		ids = append(ids, h.job(j).WorkflowID)
	}
	return ids
}

func rfc(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }

func TestScheduleCheckRefusesBadFields(t *testing.T) {
	ok := engine.CreateSchedule{ID: "s", Spec: everySpec(60_000), Action: testAction}
	cases := []struct {
		name  string
		edit  func(c *engine.CreateSchedule)
		field string
		want  error
	}{
		{"no id", func(c *engine.CreateSchedule) { c.ID = "" }, "ID", engine.ErrInvalidCommand},
		{"bad cron", func(c *engine.CreateSchedule) { c.Spec.CronExpressions = []string{"61 * * * *"} }, "Spec.CronExpressions[0]", engine.ErrInvalidCommand},
		{"cron zone", func(c *engine.CreateSchedule) { c.Spec.CronExpressions = []string{"CRON_TZ=Europe/Paris 0 9 * * *"} }, "Spec.CronExpressions[0]", engine.ErrInvalidCommand},
		{"short interval", func(c *engine.CreateSchedule) { c.Spec = everySpec(999) }, "Spec.Intervals[0].EveryMS", engine.ErrInvalidCommand},
		{"offset too big", func(c *engine.CreateSchedule) { c.Spec.Intervals[0].OffsetMS = 60_000 }, "Spec.Intervals[0].OffsetMS", engine.ErrInvalidCommand},
		{"end before start", func(c *engine.CreateSchedule) { c.Spec.StartAtMS, c.Spec.EndAtMS = 10, 5 }, "Spec.EndAtMS", engine.ErrInvalidCommand},
		{"start after 9999", func(c *engine.CreateSchedule) { c.Spec.StartAtMS = 1 << 62 }, "Spec.StartAtMS", engine.ErrInvalidCommand},
		{"negative jitter", func(c *engine.CreateSchedule) { c.Spec.JitterMS = -1 }, "Spec.JitterMS", engine.ErrInvalidCommand},
		{"no type", func(c *engine.CreateSchedule) { c.Action.Type = "" }, "Action.Type", engine.ErrInvalidCommand},
		{"no queue", func(c *engine.CreateSchedule) { c.Action.Queue = "" }, "Action.Queue", engine.ErrInvalidCommand},
		{"bad overlap", func(c *engine.CreateSchedule) { c.Policy.Overlap = 7 }, "Policy.Overlap", engine.ErrInvalidCommand},
		{"short catch-up", func(c *engine.CreateSchedule) { c.Policy.CatchupWindowMS = 9_999 }, "Policy.CatchupWindowMS", engine.ErrInvalidCommand},
		{"remaining without limit", func(c *engine.CreateSchedule) { c.State.RemainingActions = 3 }, "State.RemainingActions", engine.ErrInvalidCommand},
		{"long base id", func(c *engine.CreateSchedule) { c.Action.WorkflowID = strings.Repeat("w", 1000) }, "Action.WorkflowID", engine.ErrPayloadTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newSchedHarness(t)
			c := ok
			c.Spec.Intervals = append([]engine.ScheduleInterval(nil), ok.Spec.Intervals...)
			tc.edit(&c)
			before := h.snapshot()
			_, err := h.apply(&c)
			var fe *engine.FieldError
			if !errors.Is(err, tc.want) || !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("got %v, want %v on field %s", err, tc.want, tc.field)
			}
			sameStore(t, before, h.snapshot())
		})
	}
}

func TestScheduleLifecycleErrors(t *testing.T) {
	h := newSchedHarness(t)
	h.must(&engine.CreateSchedule{ID: "s", Spec: everySpec(60_000), Action: testAction})
	h.mustFail(&engine.CreateSchedule{ID: "s", Spec: everySpec(60_000), Action: testAction}, engine.ErrScheduleExists)
	for _, c := range []engine.Command{
		&engine.UpdateSchedule{ID: "x", Spec: everySpec(60_000), Action: testAction},
		&engine.PauseSchedule{ID: "x", Paused: true}, &engine.TriggerSchedule{ID: "x"}, &engine.DeleteSchedule{ID: "x"},
	} {
		h.mustFail(c, engine.ErrUnknownSchedule)
	}
	h.must(&engine.DeleteSchedule{ID: "s"})
	h.mustFail(&engine.DeleteSchedule{ID: "s"}, engine.ErrUnknownSchedule)
	// A stale due entry of the deleted schedule is dropped by its sweep.
	if ids := h.fireAt(schedT0 + 120_000); len(ids) != 0 {
		t.Fatalf("a deleted schedule started %v", ids)
	}
	h.verify()
}

func TestScheduleIntervalStartsRunsWithDeterministicIDs(t *testing.T) {
	h := newSchedHarness(t)
	res := h.must(&engine.CreateSchedule{ID: "rep", Spec: everySpec(60_000), Action: testAction, Policy: engine.SchedulePolicy{Overlap: engine.OverlapAllowAll}}).(*engine.ScheduleResult)
	first := (schedT0/60_000 + 1) * 60_000
	if res.Schedule.NextNominalMS != first || res.Schedule.DueMS != first {
		t.Fatalf("next %d due %d, want %d", res.Schedule.NextNominalMS, res.Schedule.DueMS, first)
	}
	if ids := h.fireAt(first - 1); len(ids) != 0 {
		t.Fatalf("fired early: %v", ids)
	}
	ids := h.fireAt(first)
	if want := "rep-" + rfc(first); len(ids) != 1 || ids[0] != want {
		t.Fatalf("started %v, want [%s]", ids, want)
	}
	j := h.job(h.schedule("rep").Running[0].Job)
	if j.Type != "report" || j.Queue != "q" || j.Status != engine.StatusQueued || j.ScheduleID != "rep" {
		t.Fatalf("run %+v", j)
	}
	// Three minutes later: the two times passed in between and the third
	// are all taken (AllowAll), each with its own nominal time.
	ids = h.fireAt(first + 3*60_000)
	if len(ids) != 3 || ids[2] != "rep-"+rfc(first+3*60_000) {
		t.Fatalf("started %v", ids)
	}
	s := h.schedule("rep")
	if s.NumActions != 4 || len(s.Running) != 4 || len(s.Recent) != 4 || s.NextNominalMS != first+4*60_000 {
		t.Fatalf("schedule %+v", s)
	}
	h.verify()
}

func TestScheduleCronSpec(t *testing.T) {
	base := time.Date(2024, 1, 31, 10, 17, 30, 0, time.UTC).UnixMilli()
	cases := []struct {
		spec engine.ScheduleSpec
		want []string
	}{
		{engine.ScheduleSpec{CronExpressions: []string{"*/15 * * * *"}}, []string{"2024-01-31T10:30:00Z", "2024-01-31T10:45:00Z", "2024-01-31T11:00:00Z"}},
		{engine.ScheduleSpec{CronExpressions: []string{"0 9 * * MON"}}, []string{"2024-02-05T09:00:00Z", "2024-02-12T09:00:00Z", "2024-02-19T09:00:00Z"}},
		{engine.ScheduleSpec{CronExpressions: []string{"@daily"}}, []string{"2024-02-01T00:00:00Z", "2024-02-02T00:00:00Z", "2024-02-03T00:00:00Z"}},
		{engine.ScheduleSpec{CronExpressions: []string{"30 0 12 29 2 *"}}, []string{"2024-02-29T12:00:30Z", "2028-02-29T12:00:30Z"}},
		// The union of a cron line and an interval, bounded by EndAtMS.
		{engine.ScheduleSpec{CronExpressions: []string{"0 11 * * *"}, Intervals: []engine.ScheduleInterval{{EveryMS: 20 * 60_000, OffsetMS: 60_000}},
			EndAtMS: time.Date(2024, 1, 31, 11, 1, 0, 0, time.UTC).UnixMilli()},
			[]string{"2024-01-31T10:21:00Z", "2024-01-31T10:41:00Z", "2024-01-31T11:00:00Z", "2024-01-31T11:01:00Z"}},
		// StartAtMS moves the first time.
		{engine.ScheduleSpec{Intervals: []engine.ScheduleInterval{{EveryMS: 3600_000}}, StartAtMS: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC).UnixMilli()},
			[]string{"2024-03-01T00:00:00Z", "2024-03-01T01:00:00Z"}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.spec.CronExpressions, tc.spec.Intervals), func(t *testing.T) {
			c, field, err := engine.CompileSpec(&tc.spec)
			if err != nil {
				t.Fatalf("%s: %v", field, err)
			}
			var got []string
			for at := c.Next(base); at != 0 && len(got) < len(tc.want)+1; at = c.Next(at) {
				got = append(got, rfc(at))
			}
			if len(tc.want) < 4 && len(got) > len(tc.want) {
				got = got[:len(tc.want)]
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("times %v, want %v", got, tc.want)
			}
		})
	}
}

func TestScheduleJitterIsDeterministicAndBounded(t *testing.T) {
	const jitter = 30_000
	seen := map[int64]bool{}
	for i := range int64(200) {
		j := engine.ScheduleJitter("s", schedT0+i*60_000, jitter)
		if j < 0 || j >= jitter {
			t.Fatalf("jitter %d out of [0, %d)", j, jitter)
		}
		if j != engine.ScheduleJitter("s", schedT0+i*60_000, jitter) {
			t.Fatal("jitter changed between two calls")
		}
		seen[j/1000] = true
	}
	if len(seen) < 20 {
		t.Fatalf("jitter took only %d distinct seconds over 200 times", len(seen))
	}
	if engine.ScheduleJitter("s", schedT0, 0) != 0 {
		t.Fatal("no jitter configured, yet a delay")
	}
	h := newSchedHarness(t)
	s := h.must(&engine.CreateSchedule{ID: "j", Spec: engine.ScheduleSpec{Intervals: []engine.ScheduleInterval{{EveryMS: 60_000}}, JitterMS: jitter}, Action: testAction}).(*engine.ScheduleResult).Schedule
	due := s.NextNominalMS + engine.ScheduleJitter("j", s.NextNominalMS, jitter)
	if s.DueMS != due {
		t.Fatalf("due %d, want nominal+jitter %d", s.DueMS, due)
	}
	if ids := h.fireAt(due - 1); len(ids) != 0 {
		t.Fatal("fired before its jittered time")
	}
	ids := h.fireAt(due)
	if len(ids) != 1 || ids[0] != "j-"+rfc(s.NextNominalMS) {
		t.Fatalf("started %v; the id carries the nominal time %s", ids, rfc(s.NextNominalMS))
	}
	run := h.schedule("j").Recent[0]
	if run.NominalMS != s.NextNominalMS || run.ActualMS != due {
		t.Fatalf("recent %+v", run)
	}
}

// TestScheduleOverlapPolicies fires twice while the first run is open,
// then closes it, cell by cell for each policy.
func TestScheduleOverlapPolicies(t *testing.T) {
	cases := []struct {
		p engine.OverlapPolicy
		// after the second and third times, while run 1 is open:
		startedWhileOpen, buffered int
		skipped                    int64
		firstStatus                engine.Status // run 1's status after the third time
		cancelRequested            bool
		// after run 1 (and, for TerminateOther, all) closed:
		startedAfterClose int
	}{
		{engine.OverlapSkip, 0, 0, 2, engine.StatusQueued, false, 0},
		{engine.OverlapUnspecified, 0, 0, 2, engine.StatusQueued, false, 0},
		{engine.OverlapBufferOne, 0, 1, 1, engine.StatusQueued, false, 1},
		{engine.OverlapBufferAll, 0, 2, 0, engine.StatusQueued, false, 1},
		{engine.OverlapCancelOther, 0, 1, 0, engine.StatusQueued, true, 1},
		{engine.OverlapTerminateOther, 2, 0, 0, engine.StatusTerminated, false, 0},
		{engine.OverlapAllowAll, 2, 0, 0, engine.StatusQueued, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.p.String(), func(t *testing.T) {
			h := newSchedHarness(t)
			s := h.must(&engine.CreateSchedule{ID: "o", Spec: everySpec(60_000), Action: testAction, Policy: engine.SchedulePolicy{Overlap: tc.p}}).(*engine.ScheduleResult).Schedule
			t1 := s.NextNominalMS
			if ids := h.fireAt(t1); len(ids) != 1 {
				t.Fatalf("first time started %v", ids)
			}
			run1 := h.schedule("o").Running[0].Job
			ids := append(h.fireAt(t1+60_000), h.fireAt(t1+120_000)...)
			s = h.schedule("o")
			if len(ids) != tc.startedWhileOpen || len(s.Buffered) != tc.buffered || s.NumSkippedOverlap != tc.skipped {
				t.Fatalf("started %v, buffered %v, skipped %d", ids, s.Buffered, s.NumSkippedOverlap)
			}
			j1 := h.job(run1)
			if j1.Status != tc.firstStatus || j1.CancelRequested != tc.cancelRequested {
				t.Fatalf("run 1 is %s (cancel requested %v)", j1.Status, j1.CancelRequested)
			}
			// Close every open run; the schedule is woken at once.
			for _, r := range s.Running {
				if !h.job(r.Job).Status.Terminal() {
					h.must(&engine.Cancel{Target: engine.Target{Job: r.Job}})
				}
			}
			after := h.fireAt(h.now)
			if len(after) != tc.startedAfterClose {
				t.Fatalf("after the close started %v, want %d", after, tc.startedAfterClose)
			}
			if tc.p == engine.OverlapBufferAll {
				// The second buffered start waits for the one just started.
				if want := "o-" + rfc(t1+60_000); after[0] != want {
					t.Fatalf("started %s first, want %s", after[0], want)
				}
				if got := len(h.schedule("o").Buffered); got != 1 {
					t.Fatalf("%d still buffered, want 1", got)
				}
			}
			h.verify()
		})
	}
}

func TestScheduleCatchupWindowSkipsTimesMissedTooLong(t *testing.T) {
	h := newSchedHarness(t)
	s := h.must(&engine.CreateSchedule{ID: "c", Spec: everySpec(60_000), Action: testAction,
		Policy: engine.SchedulePolicy{Overlap: engine.OverlapAllowAll, CatchupWindowMS: 150_000}}).(*engine.ScheduleResult).Schedule
	t1 := s.NextNominalMS
	// Ten minutes late: the times older than 150 s are missed, the last
	// three (at -120 s, -60 s, 0) are taken.
	ids := h.fireAt(t1 + 600_000)
	s = h.schedule("c")
	if len(ids) != 3 || s.NumMissedCatchup != 8 || s.NumActions != 3 {
		t.Fatalf("started %v, missed %d, actions %d", ids, s.NumMissedCatchup, s.NumActions)
	}
}

func TestScheduleBoundsStepsPerCommand(t *testing.T) {
	h := newSchedHarness(t)
	s := h.must(&engine.CreateSchedule{ID: "b", Spec: everySpec(1000), Action: testAction}).(*engine.ScheduleResult).Schedule
	// 2500 times have come; the policy skips while run 1 is open, but each
	// time is a step: the first command takes 1000, and leaves the schedule
	// due now for the next sweep.
	late := s.NextNominalMS + 2499_000
	h.fireAt(late)
	if s = h.schedule("b"); s.DueMS != late || s.NumSkippedOverlap != 999 {
		t.Fatalf("due %d (want %d), skipped %d", s.DueMS, late, s.NumSkippedOverlap)
	}
	h.fireAt(late)
	h.fireAt(late)
	if s = h.schedule("b"); s.DueMS != late+1000 || s.NumSkippedOverlap != 2499 || s.NumActions != 1 {
		t.Fatalf("due %d, skipped %d, actions %d", s.DueMS, s.NumSkippedOverlap, s.NumActions)
	}
	h.verify()
}

func TestSchedulePauseTriggerUpdate(t *testing.T) {
	h := newSchedHarness(t)
	s := h.must(&engine.CreateSchedule{ID: "p", Spec: everySpec(60_000), Action: testAction,
		State: engine.ScheduleState{Paused: true, Note: "created paused"}}).(*engine.ScheduleResult).Schedule
	if s.DueMS != 0 || len(engine.NextActionTimes(s, 3)) != 0 {
		t.Fatalf("a paused schedule is due at %d", s.DueMS)
	}
	if ids := h.fireAt(schedT0 + 300_000); len(ids) != 0 {
		t.Fatal("a paused schedule fired")
	}
	// A trigger acts even while paused, named after now.
	tr := h.must(&engine.TriggerSchedule{ID: "p"}).(*engine.ScheduleResult)
	if len(tr.Started) != 1 || tr.Started[0].WorkflowID != "p-"+rfc(h.now) {
		t.Fatalf("trigger started %+v", tr.Started)
	}
	// A second trigger in the same second finds that id open: skipped.
	if tr = h.must(&engine.TriggerSchedule{ID: "p", Overlap: engine.OverlapAllowAll}).(*engine.ScheduleResult); len(tr.Started) != 0 || tr.Schedule.NumSkippedOverlap != 1 {
		t.Fatalf("second trigger: %+v", tr)
	}
	// Unpaused, it goes on from now: the times passed are not caught up.
	h.now += 1000
	s = h.must(&engine.PauseSchedule{ID: "p", Note: "back"}).(*engine.ScheduleResult).Schedule
	want := (h.now/60_000 + 1) * 60_000
	if s.State.Paused || s.State.Note != "back" || s.NextNominalMS != want || s.DueMS != want {
		t.Fatalf("unpaused: %+v, want next %d", s, want)
	}
	// An update replaces the spec and action, keeps the counters.
	s = h.must(&engine.UpdateSchedule{ID: "p", Spec: everySpec(3600_000), Action: engine.ScheduleAction{WorkflowID: "nightly", Type: "t2", Queue: "q2"},
		Policy: engine.SchedulePolicy{Overlap: engine.OverlapAllowAll}}).(*engine.ScheduleResult).Schedule
	next := (h.now/3600_000 + 1) * 3600_000
	if s.NextNominalMS != next || s.NumActions != 1 || s.Action.Type != "t2" {
		t.Fatalf("updated: %+v", s)
	}
	ids := h.fireAt(next)
	if len(ids) != 1 || ids[0] != "nightly-"+rfc(next) {
		t.Fatalf("started %v", ids)
	}
	h.verify()
}

func TestScheduleLimitedActionsAndPauseOnFailure(t *testing.T) {
	h := newSchedHarness(t)
	s := h.must(&engine.CreateSchedule{ID: "l", Spec: everySpec(60_000), Action: testAction, Policy: engine.SchedulePolicy{Overlap: engine.OverlapAllowAll},
		State: engine.ScheduleState{LimitedActions: true, RemainingActions: 2}}).(*engine.ScheduleResult).Schedule
	ids := h.fireAt(s.NextNominalMS + 300_000)
	if s = h.schedule("l"); len(ids) != 2 || s.State.RemainingActions != 0 || s.DueMS != 0 {
		t.Fatalf("started %v; schedule %+v", ids, s)
	}
	// A trigger still acts, and does not count.
	if tr := h.must(&engine.TriggerSchedule{ID: "l"}).(*engine.ScheduleResult); len(tr.Started) != 1 {
		t.Fatal("a trigger of a schedule out of actions did nothing")
	}

	s = h.must(&engine.CreateSchedule{ID: "f", Spec: everySpec(60_000), Action: engine.ScheduleAction{Type: "report", Queue: "qf"},
		Policy: engine.SchedulePolicy{PauseOnFailure: true}}).(*engine.ScheduleResult).Schedule
	h.fireAt(s.NextNominalMS)
	h.now++
	c := h.must(&engine.Claim{Queue: "qf", Owner: "w", Max: 1, LeaseMS: 10_000}).(*engine.ClaimResult).Jobs[0]
	h.must(&engine.Fail{LeaseRef: c.Lease(), Error: []byte("boom")})
	h.fireAt(h.now)
	if s = h.schedule("f"); !s.State.Paused || !strings.Contains(s.State.Note, "Failed") || s.DueMS != 0 {
		t.Fatalf("after a failed run: %+v", s.State)
	}
	h.verify()
}

func TestScheduleRunContinuedAsNewKeepsItsSchedule(t *testing.T) {
	h := newSchedHarness(t)
	s := h.must(&engine.CreateSchedule{ID: "k", Spec: everySpec(60_000), Action: engine.ScheduleAction{Type: "report", Queue: "qk"},
		Policy: engine.SchedulePolicy{Overlap: engine.OverlapBufferOne}}).(*engine.ScheduleResult).Schedule
	h.fireAt(s.NextNominalMS)
	h.fireAt(s.NextNominalMS + 60_000) // buffered
	c := h.must(&engine.Claim{Queue: "qk", Owner: "w", Max: 1, LeaseMS: 10_000}).(*engine.ClaimResult).Jobs[0]
	next := h.must(&engine.ContinueAsNew{LeaseRef: c.Lease()}).(*engine.CreateResult)
	if h.job(next.Job).ScheduleID != "k" {
		t.Fatal("the continued run lost its schedule")
	}
	if ids := h.fireAt(h.now); len(ids) != 0 {
		t.Fatalf("started %v while the chain is open", ids)
	}
	h.must(&engine.Cancel{Target: engine.Target{Job: next.Job}})
	if ids := h.fireAt(h.now); len(ids) != 1 || ids[0] != "k-"+rfc(s.NextNominalMS+60_000) {
		t.Fatalf("after the chain closed started %v", ids)
	}
}

// TestFireSchedulesStaysWithinItsWriteBudget: schedules whose runs carry
// large inputs, all due at once, are fired over several sweeps, each far
// below a transaction's limit, and none is lost or fired twice.
func TestFireSchedulesStaysWithinItsWriteBudget(t *testing.T) {
	h := newSchedHarness(t)
	act := engine.ScheduleAction{Type: "report", Queue: "q", Input: make([]byte, 8<<10)}
	const n = 200
	for i := range n {
		h.must(&engine.CreateSchedule{ID: fmt.Sprintf("s%03d", i), Spec: everySpec(60_000), Action: act})
	}
	h.now = (schedT0/60_000 + 1) * 60_000
	seen := map[engine.JobID]bool{}
	sweeps := 0
	for more := true; more; sweeps++ {
		res := h.must(&engine.FireSchedules{Max: 1000}).(*engine.SweepResult)
		for _, j := range res.Jobs {
			if seen[j] {
				t.Fatalf("job %d started twice", j)
			}
			seen[j] = true
		}
		more = res.More
	}
	if len(seen) != n || sweeps < 3 {
		t.Fatalf("%d runs started over %d sweeps, want %d over several", len(seen), sweeps, n)
	}
	h.verify()
}

// TestScheduleCatchUpOfLargeRunsStaysWithinBudget: one schedule with many
// times to catch up, each starting a run with a large input, takes them
// over several sweeps.
func TestScheduleCatchUpOfLargeRunsStaysWithinBudget(t *testing.T) {
	h := newSchedHarness(t)
	act := engine.ScheduleAction{Type: "report", Queue: "q", Input: make([]byte, 200<<10)}
	s := h.must(&engine.CreateSchedule{ID: "big", Spec: everySpec(60_000), Action: act, Policy: engine.SchedulePolicy{Overlap: engine.OverlapAllowAll}}).(*engine.ScheduleResult).Schedule
	h.now = s.NextNominalMS + 19*60_000 // twenty times have come
	started, sweeps := 0, 0
	for more := true; more && sweeps < 50; sweeps++ {
		res := h.must(&engine.FireSchedules{Max: 10}).(*engine.SweepResult)
		started += len(res.Jobs)
		more = h.schedule("big").DueMS <= h.now
	}
	if started != 20 || sweeps < 4 {
		t.Fatalf("%d runs over %d sweeps, want 20 over several", started, sweeps)
	}
	h.verify()
}

func TestScheduleWithAnEmptySpecActsOnlyWhenTriggered(t *testing.T) {
	h := newSchedHarness(t)
	s := h.must(&engine.CreateSchedule{ID: "e", Action: testAction}).(*engine.ScheduleResult).Schedule
	if s.NextNominalMS != 0 || s.DueMS != 0 || len(engine.NextActionTimes(s, 3)) != 0 {
		t.Fatalf("an empty spec has times: %+v", s)
	}
	if ids := h.fireAt(schedT0 + 365*24*3600_000); len(ids) != 0 {
		t.Fatalf("an empty spec fired %v", ids)
	}
	if tr := h.must(&engine.TriggerSchedule{ID: "e"}).(*engine.ScheduleResult); len(tr.Started) != 1 {
		t.Fatal("a trigger of an empty spec started nothing")
	}
	h.verify()
}

func TestScheduleCreateTriggerImmediately(t *testing.T) {
	h := newSchedHarness(t)
	res := h.must(&engine.CreateSchedule{ID: "now", Spec: everySpec(3600_000), Action: testAction, TriggerImmediately: true}).(*engine.ScheduleResult)
	if len(res.Started) != 1 || res.Started[0].WorkflowID != "now-"+rfc(schedT0) {
		t.Fatalf("started %+v", res.Started)
	}
}

// TestScheduleModel drives one interval schedule with random fires,
// triggers, run closes and pauses against a reference model of the policy,
// and compares the started workflow ids and counters after every step.
func TestScheduleModel(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5c4ed))
	policies := []engine.OverlapPolicy{engine.OverlapSkip, engine.OverlapBufferOne, engine.OverlapBufferAll, engine.OverlapTerminateOther, engine.OverlapAllowAll}
	for round := range 6 {
		p := policies[round%len(policies)]
		t.Run(fmt.Sprintf("%d-%s", round, p), func(t *testing.T) {
			h := newSchedHarness(t)
			const every = 10_000
			s := h.must(&engine.CreateSchedule{ID: "m", Spec: everySpec(every), Action: testAction, Policy: engine.SchedulePolicy{Overlap: p}}).(*engine.ScheduleResult).Schedule
			m := &schedModel{p: p, next: s.NextNominalMS, every: every}
			for step := range 60 {
				switch op := rng.IntN(10); {
				case op < 5: // time passes and the scheduler fires
					h.now += int64(rng.IntN(3*every)) + 1
					got := h.fireAt(h.now)
					want := m.fire(h.now)
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Fatalf("step %d fire at %s: started %v, model %v", step, rfc(h.now), got, want)
					}
				case op < 7 && len(m.running) > 0: // a run ends
					i := rng.IntN(len(m.running))
					wf := m.running[i]
					h.must(&engine.Cancel{Target: engine.Target{WorkflowID: wf}})
					m.closed(wf)
					got := h.fireAt(h.now)
					if want := m.fire(h.now); fmt.Sprint(got) != fmt.Sprint(want) {
						t.Fatalf("step %d close of %s: started %v, model %v", step, wf, got, want)
					}
				case op < 8: // a trigger, in a new second
					h.now += 1000
					res := h.must(&engine.TriggerSchedule{ID: "m"}).(*engine.ScheduleResult)
					var got []string
					for _, st := range res.Started {
						got = append(got, st.WorkflowID)
					}
					if want := m.trigger(h.now); fmt.Sprint(got) != fmt.Sprint(want) {
						t.Fatalf("step %d trigger: started %v, model %v", step, got, want)
					}
				default: // pause, or unpause
					h.now++
					paused := !m.paused
					h.must(&engine.PauseSchedule{ID: "m", Paused: paused})
					m.pause(paused, h.now)
				}
				s = h.schedule("m")
				if s.NumActions != m.actions || s.NumSkippedOverlap != m.skipped || len(s.Buffered) != len(m.buffered) || len(s.Running) != len(m.running) {
					t.Fatalf("step %d: schedule actions %d skipped %d buffered %d running %d; model %d %d %d %d", step,
						s.NumActions, s.NumSkippedOverlap, len(s.Buffered), len(s.Running), m.actions, m.skipped, len(m.buffered), len(m.running))
				}
			}
			h.verify()
		})
	}
}

// schedModel is the reference: an interval schedule and its policy, over
// plain lists.
type schedModel struct {
	p                engine.OverlapPolicy
	every, next      int64
	paused           bool
	running          []string
	buffered         []int64
	actions, skipped int64
}

func (m *schedModel) id(at int64) string { return "m-" + rfc(at) }

func (m *schedModel) start(at int64) []string {
	for _, r := range m.running {
		if r == m.id(at) { // a trigger named like an open run
			m.skipped++
			return nil
		}
	}
	m.running = append(m.running, m.id(at))
	m.actions++
	return []string{m.id(at)}
}

func (m *schedModel) act(at int64) []string {
	if len(m.running) == 0 && len(m.buffered) == 0 {
		return m.start(at)
	}
	switch m.p {
	case engine.OverlapAllowAll:
		return m.start(at)
	case engine.OverlapTerminateOther:
		m.running = nil
		return m.start(at)
	case engine.OverlapBufferOne:
		if len(m.buffered) == 0 {
			m.buffered = append(m.buffered, at)
			return nil
		}
	case engine.OverlapBufferAll:
		m.buffered = append(m.buffered, at)
		return nil
	}
	m.skipped++
	return nil
}

func (m *schedModel) fire(now int64) []string {
	out := m.drain()
	for !m.paused && m.next <= now {
		out = append(out, m.act(m.next)...)
		m.next += m.every
	}
	return out
}

func (m *schedModel) drain() []string {
	var out []string
	for len(m.buffered) > 0 && len(m.running) == 0 {
		out = append(out, m.start(m.buffered[0])...)
		m.buffered = m.buffered[1:]
	}
	return out
}

func (m *schedModel) closed(wf string) {
	for i, r := range m.running {
		if r == wf {
			m.running = append(m.running[:i], m.running[i+1:]...)
			return
		}
	}
}

func (m *schedModel) trigger(now int64) []string {
	out := append(m.drain(), m.act(now)...)
	return append(out, m.fire(now)...)
}

func (m *schedModel) pause(paused bool, now int64) {
	if m.paused && !paused {
		m.next = (now/m.every + 1) * m.every
	}
	m.paused = paused
	m.drain() // the engine drains when it looks; nothing is buffered with nothing running
}

func TestScheduleBackfill(t *testing.T) {
	h := newSchedHarness(t)
	h.must(&engine.CreateSchedule{ID: "bf", Spec: everySpec(3600_000), Action: testAction, State: engine.ScheduleState{Paused: true}})
	day := (schedT0/86_400_000 - 2) * 86_400_000 // two days back, midnight
	// Five past hours, AllowAll: five runs named after their hours, while paused.
	res := h.must(&engine.BackfillSchedule{ID: "bf", StartMS: day, EndMS: day + 4*3600_000, Overlap: engine.OverlapAllowAll}).(*engine.ScheduleResult)
	if len(res.Started) != 5 || res.Started[0].WorkflowID != "bf-"+rfc(day) || res.Started[4].WorkflowID != "bf-"+rfc(day+4*3600_000) {
		t.Fatalf("backfill started %+v", res.Started)
	}
	// Under the schedule's Skip, with those runs open: all skipped.
	res = h.must(&engine.BackfillSchedule{ID: "bf", StartMS: day + 5*3600_000, EndMS: day + 6*3600_000}).(*engine.ScheduleResult)
	if len(res.Started) != 0 || res.Schedule.NumSkippedOverlap != 2 {
		t.Fatalf("backfill under Skip: started %+v, skipped %d", res.Started, res.Schedule.NumSkippedOverlap)
	}
	before := h.snapshot()
	h.mustFail(&engine.BackfillSchedule{ID: "bf", StartMS: day, EndMS: day + 200*3600_000}, engine.ErrInvalidCommand)
	h.mustFail(&engine.BackfillSchedule{ID: "bf", StartMS: day, EndMS: day - 1}, engine.ErrInvalidCommand)
	h.mustFail(&engine.BackfillSchedule{ID: "nope", StartMS: day, EndMS: day}, engine.ErrUnknownSchedule)
	sameStore(t, before, h.snapshot())
	h.verify()
}
