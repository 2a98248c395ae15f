package machine_test

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/metrics"
	"github.com/heddlewf/heddle/storage"
)

// The reference model of the Meter: what a command changed that the
// metrics count, read back from its buffered writes and the records as they
// were before it (the way the Meter worked before Apply noted its changes).
// It decodes every event a command wrote and reads every job and step
// record it touched, so it is slow, but it depends on nothing Apply does
// besides what it writes. The property tests compare the Meter's diff with
// it after every command (meterCheck).

// referenceDiff is the reference model's diff of a command Apply answered
// with res, whose writes tx holds (not yet added to the batch).
func referenceDiff(t testing.TB, tx *storage.Tx, cmd engine.Command, res engine.Result) machine.MeterDiff {
	t.Helper()
	var out []machine.JobChange
	fired := map[uint64]bool{}
	if sr, ok := res.(*engine.SweepResult); ok {
		switch cmd.Kind() {
		case engine.KindReclaim:
			if n := len(sr.Jobs); n > 0 {
				out = append(out, machine.JobChange{Reclaimed: n})
			}
		case engine.KindFireTimers:
			for _, j := range sr.Jobs {
				fired[uint64(j)] = true
			}
		}
	}
	var moved, created []uint64 // jobs whose status entries changed; jobs created
	tx.Each(func(key, _ []byte, deleted bool) {
		switch key[0] {
		case storage.PrefixStatus:
			if id, err := storage.TrailingJob(key); err == nil && !slices.Contains(moved, id) {
				moved = append(moved, id)
			}
		case storage.PrefixQueue:
			// The queue index entry is written once, when the job is created.
			if id, err := storage.TrailingJob(key); err == nil && !deleted {
				created = append(created, id)
			}
		case storage.PrefixTimer:
			if tk, err := storage.ParseTimeKey(key); deleted && err == nil && fired[tk.Job] {
				out = append(out, machine.JobChange{Late: time.Duration(max(cmd.Head().NowMS-tk.AtMS, 0)) * time.Millisecond})
			}
		}
	})
	for _, id := range moved {
		j := refJob(t, tx.Get, id)
		from := engine.StatusNone
		if !slices.Contains(created, id) {
			from = refJob(t, tx.Before, id).Status
		}
		if from == j.Status {
			continue
		}
		if from != engine.StatusNone {
			out = append(out, machine.JobChange{Status: from, Queue: j.Queue, Delta: -1})
		}
		out = append(out, machine.JobChange{Status: j.Status, Queue: j.Queue, Delta: 1})
	}
	return machine.MeterDiff{Changes: out, Steps: referenceStepDiff(t, tx, res)}
}

// refJob reads job id with get, failing the test if it cannot.
func refJob(t testing.TB, get func([]byte) ([]byte, error), id uint64) *engine.Job {
	t.Helper()
	key := storage.JobKey(id)
	b, err := get(key)
	if err != nil {
		t.Fatalf("reference: reading job %d: %v", id, err)
	}
	j := new(engine.Job)
	if _, err := storage.DecodeAt(key, b, storage.KindJob, machine.JobVersion, j); err != nil {
		t.Fatalf("reference: decoding job %d: %v", id, err)
	}
	return j
}

// referenceStepDiff reads the step changes from a command's buffered
// writes: the route of every step event it wrote, each step starting from
// its record before the command, and the gauge moves of every step record
// it wrote. The events a reset copies into its new run are history, not
// transitions: they are left out.
func referenceStepDiff(t testing.TB, tx *storage.Tx, res engine.Result) []machine.StepChange {
	copied := func(job, seq uint64) bool {
		r, ok := res.(*engine.ResetResult)
		return ok && job == uint64(r.Job) && seq <= r.CopiedEvents
	}
	t.Helper()
	type jobEvent struct {
		job uint64
		ev  *engine.Event
	}
	var evs []jobEvent
	var recs [][]byte
	tx.Each(func(key, val []byte, deleted bool) {
		switch {
		case deleted:
		case key[0] == storage.PrefixEvent:
			job, seq, err := storage.ParseEventKey(key)
			if err != nil {
				t.Fatalf("reference: event key %x: %v", key, err)
			}
			if copied(job, seq) {
				return
			}
			ev, err := machine.DecodeEvent(val)
			if err != nil {
				t.Fatalf("reference: event %x: %v", key, err)
			}
			if engine.IsStepEvent(ev.Type) && ev.Step != "" {
				evs = append(evs, jobEvent{job, ev})
			}
		case key[0] == storage.PrefixStep:
			recs = append(recs, key)
		}
	})
	type stepID struct {
		job  uint64
		step string
	}
	counts := map[[2]engine.StepState]int{}
	state := map[stepID]engine.StepState{}
	for _, je := range evs {
		k := stepID{je.job, je.ev.Step}
		from, ok := state[k]
		if !ok {
			from = engine.StepNone
			if rec := refStep(t, tx.Before, storage.StepKey(k.job, k.step)); rec != nil {
				from = rec.State
			} else if je.ev.StepAttempt > 1 {
				from = engine.StepRetrying
			}
		}
		route, ok := engine.StepRoute(from, je.ev)
		if !ok || len(route) == 0 {
			continue
		}
		for _, to := range route {
			if from != engine.StepNone {
				counts[[2]engine.StepState{from, to}]++
			}
			from = to
		}
		state[k] = from
	}
	var out []machine.StepChange
	for ft, n := range counts {
		out = append(out, machine.StepChange{From: ft[0], To: ft[1], N: n})
	}
	for _, key := range recs {
		job := storage.JobKey(binary.BigEndian.Uint64(key[1:9]))
		open := func(get func([]byte) ([]byte, error)) bool {
			b, err := get(job)
			if err != nil {
				return false
			}
			_, st, err := machine.JobQueueStatus(job, b)
			return err == nil && !st.Terminal()
		}
		var moves []machine.StepChange
		if rec := refStep(t, tx.Before, key); rec != nil && !rec.State.Terminal() && open(tx.Before) {
			moves = append(moves, machine.StepChange{State: rec.State, Delta: -1})
		}
		if rec := refStep(t, tx.Get, key); rec != nil && !rec.State.Terminal() && open(tx.Get) {
			moves = append(moves, machine.StepChange{State: rec.State, Delta: 1})
		}
		if len(moves) == 2 && moves[0].State == moves[1].State {
			continue
		}
		out = append(out, moves...)
	}
	return out
}

// refStep reads the step record at key with get, or nil when there is none.
func refStep(t testing.TB, get func([]byte) ([]byte, error), key []byte) *engine.StepRecord {
	t.Helper()
	b, err := get(key)
	if err != nil {
		return nil
	}
	rec, err := machine.DecodeStepRecord(b)
	if err != nil {
		t.Fatalf("reference: step record %x: %v", key, err)
	}
	return rec
}

// diffSummary sums a diff into what the metrics record of it, one line a
// series: the comparison is of what a scrape would see.
func diffSummary(d machine.MeterDiff) map[string]float64 {
	out := map[string]float64{}
	for _, c := range d.Changes {
		switch {
		case c.Reclaimed > 0:
			out["reclaimed"] += float64(c.Reclaimed)
		case c.Delta == 0:
			out[fmt.Sprintf("late %v", c.Late)]++
		case c.Status.Terminal() && c.Delta > 0:
			out[fmt.Sprintf("closed %s %s", c.Status, c.Queue)]++
		case !c.Status.Terminal():
			out[fmt.Sprintf("jobs %s %s", c.Status, c.Queue)] += float64(c.Delta)
		}
	}
	for _, c := range d.Steps {
		if c.To != engine.StepNone {
			out[fmt.Sprintf("transition %s>%s", c.From, c.To)] += float64(c.N)
		} else {
			out[fmt.Sprintf("steps %s", c.State)] += float64(c.Delta)
		}
	}
	maps.DeleteFunc(out, func(_ string, v float64) bool { return v == 0 })
	return out
}

// meterCheck compares the Meter's diff of every command with the
// reference model's, and counts what it compared so a test can tell it
// reached the interesting cases.
type meterCheck struct {
	t    testing.TB
	mt   *embedded.Meter
	seen *meterSeen
}

// meterSeen counts the comparisons with a change of each kind of series
// ("jobs", "transition", …), over the seeds of one test.
type meterSeen struct {
	mu sync.Mutex
	n  map[string]int
}

func newMeterCheck(t testing.TB, seen *meterSeen) *meterCheck {
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return &meterCheck{t: t, mt: embedded.NewMeter(m), seen: seen}
}

// apply applies cmd in tx with noting on, and compares the diffs when it
// succeeds; trace describes the commands before it for a failure.
func (c *meterCheck) apply(m *machine.Machine, tx *storage.Tx, cmd engine.Command, trace func() string) (engine.Result, error) {
	c.t.Helper()
	res, err := m.ApplyNoting(tx, cmd, c.mt.Notes())
	if err != nil {
		return res, err
	}
	got := diffSummary(c.mt.Diff(tx, cmd, res))
	want := diffSummary(referenceDiff(c.t, tx, cmd, res))
	if !maps.Equal(got, want) {
		c.t.Fatalf("the Meter's diff of %s is\n  %v\nthe read-back reference says\n  %v\nlast commands:\n%s",
			propFmtCmd(cmd), fmtSummary(got), fmtSummary(want), trace())
	}
	c.seen.mu.Lock()
	if c.seen.n == nil {
		c.seen.n = map[string]int{}
	}
	for k := range got {
		c.seen.n[strings.Fields(k)[0]]++
	}
	c.seen.mu.Unlock()
	return res, nil
}

func fmtSummary(s map[string]float64) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(s)) {
		fmt.Fprintf(&b, "%s=%v ", k, s[k])
	}
	return b.String()
}

// check fails t unless the comparisons covered every kind of change in
// kinds (a reference check that never compared a transition proves nothing
// about them).
func (s *meterSeen) check(t testing.TB, kinds ...string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range kinds {
		if s.n[k] == 0 {
			t.Errorf("no command compared against the meter's reference changed %q (compared: %v)", k, s.n)
		}
	}
	t.Logf("meter diffs compared with the reference, by the kind of change in them: %v", s.n)
}
