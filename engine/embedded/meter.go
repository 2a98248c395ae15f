package embedded

import (
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/metrics"
	"github.com/heddlewf/heddle/storage"
)

// Meter records the metrics of applying commands. The log that applies
// them (LocalLog, or a Raft node's state machine) calls it around Apply,
// never from inside: Apply stays a pure step function. Apply writes down
// what a command changed that the metrics count in the Meter's Notes
// (ApplyNoting), and the Meter reads those, the command and its result;
// it reads a record back only for what the notes leave unknown.
//
// The open-job gauge is kept in memory: Count reads it from the status
// index when the store opens (or a snapshot replaces it), and every commit
// moves it by the status changes its commands wrote, so a scrape never
// scans anything.
//
// What the commands of a group commit changed is summed while the group
// is built and recorded once when it commits: the job counts in one call
// to the metrics, which bound their queue labels (metrics.Options), the
// other series through series resolved once (no label lookup per command).
//
// A nil *Meter (what NewMeter returns for nil metrics) does nothing. A
// Meter is driven by the one goroutine that applies commands; Count may
// run on another while nothing is applied.
type Meter struct {
	m *metrics.Metrics

	// notes are handed to ApplyNoting for each command (owned by the
	// applying goroutine).
	notes machine.Notes

	// The series recorded on the hot path, resolved on first use.
	cmdSeries   [256]*commandSeries
	stepTrans   [engine.NumStepStates][engine.NumStepStates]prometheus.Counter
	stepsGauges [engine.NumStepStates]prometheus.Gauge
	// jobMoves is the scratch of Committed's job changes.
	jobMoves []metrics.JobChange

	mu sync.Mutex
	// open mirrors the open-job gauge, so that a recount moves the gauge
	// by the difference (another engine may share the registry). It holds
	// no zero counts: its size follows the open jobs, not every queue
	// ever seen.
	open map[jobCountKey]int64
	// staged sums what the commands of the batch being built changed; it
	// is recorded when the batch commits and dropped if it does not.
	staged staging
	// steps mirrors the step gauge (machine.StepChange).
	steps map[engine.StepState]int64
}

// commandSeries are the series of one command kind applied without error.
type commandSeries struct {
	ok    prometheus.Counter
	apply prometheus.Observer
}

type jobCountKey struct {
	status engine.Status
	queue  string
}

// staging is the sum of what the staged commands changed.
type staging struct {
	jobs      map[jobCountKey]int64 // open-job gauge moves (non-terminal statuses)
	closed    map[jobCountKey]int   // jobs that reached a terminal status
	late      []time.Duration
	reclaimed int
	trans     [engine.NumStepStates][engine.NumStepStates]int
	steps     [engine.NumStepStates]int64
	dirty     bool // anything in trans or steps
}

// reset empties s, keeping its memory.
func (s *staging) reset() {
	clear(s.jobs)
	clear(s.closed)
	s.late, s.reclaimed = s.late[:0], 0
	if s.dirty {
		s.trans, s.steps, s.dirty = [engine.NumStepStates][engine.NumStepStates]int{}, [engine.NumStepStates]int64{}, false
	}
}

// NewMeter returns a Meter recording into m, or nil when m is nil.
func NewMeter(m *metrics.Metrics) *Meter {
	if m == nil {
		return nil
	}
	return &Meter{m: m, open: map[jobCountKey]int64{}, steps: map[engine.StepState]int64{},
		staged: staging{jobs: map[jobCountKey]int64{}, closed: map[jobCountKey]int{}}}
}

// Notes returns the Notes to hand ApplyNoting for the next command, or
// nil on a nil Meter (nothing is noted then).
func (mt *Meter) Notes() *machine.Notes {
	if mt == nil {
		return nil
	}
	return &mt.notes
}

// Start returns the time an Apply starts (the zero time on a nil Meter,
// which reads no clock).
func (mt *Meter) Start() time.Time {
	if mt == nil {
		return time.Time{}
	}
	return time.Now()
}

// Applied records a command Apply answered with res or err, started at
// start (Start's value).
func (mt *Meter) Applied(cmd engine.Command, res engine.Result, err error, start time.Time) {
	if mt == nil || cmd == nil {
		return
	}
	if err == nil {
		k := cmd.Kind()
		s := mt.cmdSeries[k]
		if s == nil {
			ok, apply := mt.m.CommandSeries(k.String())
			s = &commandSeries{ok: ok, apply: apply}
			mt.cmdSeries[k] = s
		}
		s.ok.Inc()
		s.apply.Observe(time.Since(start).Seconds())
	} else {
		mt.m.Command(cmd.Kind().String(), machine.Outcome(err), time.Since(start))
		if errors.Is(err, engine.ErrStaleAttempt) {
			mt.m.StaleAttempt(cmd.Kind().String())
		}
	}
	if hb, ok := res.(*engine.HeartbeatResult); ok {
		for _, r := range hb.Refused {
			if r.Code == engine.StaleAttemptCode {
				mt.m.StaleAttempt(cmd.Kind().String())
			}
		}
	}
}

// Diff reads what a successfully applied command changed before the batch
// takes its writes: from the notes ApplyNoting wrote (Notes), the jobs
// that entered or left a status and the step changes; from its result,
// the leases reclaimed and the timers that fired (whose lateness its
// buffered writes give). Hand the diff to Stage once the batch holds the
// writes. On a nil Meter it does nothing. The notes must be of cmd (the
// Meter's Notes handed to ApplyNoting for it): of another command, or of
// an Apply that did not note, they count no job or step change.
//
// A job's change is from the status of its record before the command to
// the status of the record the command wrote, whatever statuses it passed
// through on the way (a new run that is created Queued and delayed to
// Retrying in one command counts as entering Retrying only).
func (mt *Meter) Diff(tx *storage.Tx, cmd engine.Command, res engine.Result) machine.MeterDiff {
	if mt == nil {
		return machine.MeterDiff{}
	}
	return mt.notes.Diff(tx, cmd, res)
}

// Stage adds a command's diff to the batch being built, to be recorded
// when the batch holding its writes commits.
func (mt *Meter) Stage(d machine.MeterDiff) {
	if mt == nil || len(d.Changes)+len(d.Steps) == 0 {
		return
	}
	mt.mu.Lock()
	defer mt.mu.Unlock()
	st := &mt.staged
	for _, c := range d.Changes {
		switch {
		case c.Reclaimed > 0:
			st.reclaimed += c.Reclaimed
		case c.Delta == 0:
			st.late = append(st.late, c.Late)
		case c.Status.Terminal():
			if c.Delta > 0 {
				st.closed[jobCountKey{c.Status, c.Queue}]++
			}
		default:
			st.jobs[jobCountKey{c.Status, c.Queue}] += c.Delta
		}
	}
	for _, c := range d.Steps {
		if c.To != engine.StepNone {
			st.trans[c.From][c.To] += c.N
		} else {
			st.steps[c.State] += c.Delta
		}
		st.dirty = true
	}
}

// Committed records a batch of commands whose commit started at start
// (Start's value) and succeeded, synced to disk or not, and what its
// commands changed.
func (mt *Meter) Committed(commands int, start time.Time, synced bool) {
	if mt == nil {
		return
	}
	mt.m.Commit(commands, time.Since(start), synced)
	mt.mu.Lock()
	defer mt.mu.Unlock()
	st := &mt.staged
	// The job counts go to the metrics in one call: their queue labels are
	// bounded there (metrics.Options.MaxQueues), so no series is cached
	// here per queue.
	moves := mt.jobMoves[:0]
	for k, d := range st.jobs {
		if d == 0 {
			continue
		}
		if n := mt.open[k] + d; n != 0 {
			mt.open[k] = n
		} else {
			delete(mt.open, k)
		}
		moves = append(moves, metrics.JobChange{Status: k.status.String(), Queue: k.queue, Open: d})
	}
	for k, n := range st.closed {
		moves = append(moves, metrics.JobChange{Status: k.status.String(), Queue: k.queue, Closed: int64(n)})
	}
	mt.m.JobsChanged(moves)
	clear(moves) // hold no queue name until the next commit
	mt.jobMoves = moves[:0]
	mt.m.Reclaims(st.reclaimed)
	for _, late := range st.late {
		mt.m.TimerLateness(late)
	}
	if st.dirty {
		for from := range st.trans {
			for to, n := range st.trans[from] {
				if n == 0 {
					continue
				}
				c := mt.stepTrans[from][to]
				if c == nil {
					c = mt.m.StepTransitionsCounter(engine.StepState(from).String(), engine.StepState(to).String())
					mt.stepTrans[from][to] = c
				}
				c.Add(float64(n))
			}
		}
		for state, d := range st.steps {
			if d == 0 {
				continue
			}
			mt.steps[engine.StepState(state)] += d
			g := mt.stepsGauges[state]
			if g == nil {
				g = mt.m.StepsGauge(engine.StepState(state).String())
				mt.stepsGauges[state] = g
			}
			g.Add(float64(d))
		}
	}
	st.reset()
}

// Discard drops what the commands of a batch that failed to commit
// changed.
func (mt *Meter) Discard() {
	if mt == nil {
		return
	}
	mt.mu.Lock()
	mt.staged.reset()
	mt.mu.Unlock()
}

// Synced records a sync of the database outside a commit.
func (mt *Meter) Synced() {
	if mt == nil {
		return
	}
	mt.m.Sync()
}

// Count reads the open jobs by status and queue from the status index of
// v and sets the gauge to them: once when a store opens, and again after a
// snapshot replaced it. It reads every open job's record (not the finished
// ones), and nothing may be applied meanwhile.
func (mt *Meter) Count(v Viewer) error {
	if mt == nil {
		return nil
	}
	counts := map[jobCountKey]int64{}
	steps := map[engine.StepState]int64{}
	err := v.View(func(r *storage.Reader) error {
		return machine.CountOpen(r, func(s engine.Status, queue string) { counts[jobCountKey{s, queue}]++ },
			func(s engine.StepState, n int64) { steps[s] += n })
	})
	if err != nil {
		return machine.MarkStorageError(err)
	}
	mt.mu.Lock()
	defer mt.mu.Unlock()
	for k, n := range counts {
		if d := n - mt.open[k]; d != 0 {
			mt.m.JobsAdd(k.status.String(), k.queue, float64(d))
		}
	}
	for k, n := range mt.open {
		if _, ok := counts[k]; !ok && n != 0 {
			mt.m.JobsAdd(k.status.String(), k.queue, float64(-n))
		}
	}
	mt.open = counts
	mt.staged.reset()
	for st, n := range steps {
		if d := n - mt.steps[st]; d != 0 {
			mt.m.StepsAdd(st.String(), float64(d))
		}
	}
	for st, n := range mt.steps {
		if _, ok := steps[st]; !ok && n != 0 {
			mt.m.StepsAdd(st.String(), float64(-n))
		}
	}
	mt.steps = steps
	return nil
}
