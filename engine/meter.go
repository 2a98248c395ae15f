package engine

import (
	"bytes"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vmihailenco/msgpack/v5"

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

	// notes are handed to ApplyNoting for each command; diff is the
	// scratch Diff fills (both owned by the applying goroutine).
	notes Notes
	diff  MeterDiff

	// The series recorded on the hot path, resolved on first use.
	cmdSeries   [256]*commandSeries
	stepTrans   [numStepStates][numStepStates]prometheus.Counter
	stepsGauges [numStepStates]prometheus.Gauge
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
	// steps mirrors the step gauge (meter_steps.go).
	steps map[StepState]int64
}

// commandSeries are the series of one command kind applied without error.
type commandSeries struct {
	ok    prometheus.Counter
	apply prometheus.Observer
}

type jobCountKey struct {
	status Status
	queue  string
}

// change is one thing a command's writes did that the metrics count.
type change struct {
	status    Status // a job entering (delta 1) or leaving (-1) status
	queue     string
	delta     int64
	late      time.Duration // a fired timer's lateness (status 0)
	reclaimed int
}

// staging is the sum of what the staged commands changed.
type staging struct {
	jobs      map[jobCountKey]int64 // open-job gauge moves (non-terminal statuses)
	closed    map[jobCountKey]int   // jobs that reached a terminal status
	late      []time.Duration
	reclaimed int
	trans     [numStepStates][numStepStates]int
	steps     [numStepStates]int64
	dirty     bool // anything in trans or steps
}

// reset empties s, keeping its memory.
func (s *staging) reset() {
	clear(s.jobs)
	clear(s.closed)
	s.late, s.reclaimed = s.late[:0], 0
	if s.dirty {
		s.trans, s.steps, s.dirty = [numStepStates][numStepStates]int{}, [numStepStates]int64{}, false
	}
}

// NewMeter returns a Meter recording into m, or nil when m is nil.
func NewMeter(m *metrics.Metrics) *Meter {
	if m == nil {
		return nil
	}
	return &Meter{m: m, open: map[jobCountKey]int64{}, steps: map[StepState]int64{},
		staged: staging{jobs: map[jobCountKey]int64{}, closed: map[jobCountKey]int{}}}
}

// Notes returns the Notes to hand ApplyNoting for the next command, or
// nil on a nil Meter (nothing is noted then).
func (mt *Meter) Notes() *Notes {
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
func (mt *Meter) Applied(cmd Command, res Result, err error, start time.Time) {
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
		mt.m.Command(cmd.Kind().String(), outcomeOf(err), time.Since(start))
		if errors.Is(err, ErrStaleAttempt) {
			mt.m.StaleAttempt(cmd.Kind().String())
		}
	}
	if hb, ok := res.(*HeartbeatResult); ok {
		for _, r := range hb.Refused {
			if r.Code == StaleAttemptCode {
				mt.m.StaleAttempt(cmd.Kind().String())
			}
		}
	}
}

// MeterDiff is what one command changed that the metrics count. It holds
// the Meter's scratch memory: it is good until the next Diff.
type MeterDiff struct {
	changes []change
	steps   []stepChange
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
func (mt *Meter) Diff(tx *storage.Tx, cmd Command, res Result) MeterDiff {
	if mt == nil {
		return MeterDiff{}
	}
	n := &mt.notes
	out := mt.diff.changes[:0]
	if sr, ok := res.(*SweepResult); ok && len(sr.Jobs) > 0 {
		switch cmd.Kind() {
		case KindReclaim:
			out = append(out, change{reclaimed: len(sr.Jobs)})
		case KindFireTimers:
			out = firedLateness(tx, cmd, sr, out)
		}
	}
	if n.cmd != cmd {
		mt.diff.changes, mt.diff.steps = out, mt.diff.steps[:0]
		return mt.diff
	}
	for _, jn := range n.jobs {
		if jn.from == jn.to {
			continue // left its status and came back within the command
		}
		if jn.from != StatusNone {
			out = append(out, change{status: jn.from, queue: jn.queue, delta: -1})
		}
		out = append(out, change{status: jn.to, queue: jn.queue, delta: 1})
	}
	mt.diff.changes = out
	mt.diff.steps = stepDiff(tx, n, mt.diff.steps[:0])
	return mt.diff
}

// firedLateness appends the lateness of each timer a FireTimers command
// fired: the timer entries it deleted of the jobs it reports.
func firedLateness(tx *storage.Tx, cmd Command, sr *SweepResult, out []change) []change {
	tx.Each(func(key, _ []byte, deleted bool) {
		if !deleted || len(key) == 0 || key[0] != storage.PrefixTimer {
			return
		}
		tk, err := storage.ParseTimeKey(key)
		if err == nil && slices.Contains(sr.Jobs, JobID(tk.Job)) {
			out = append(out, change{late: time.Duration(max(cmd.Head().NowMS-tk.AtMS, 0)) * time.Millisecond})
		}
	})
	return out
}

// jobQueueStatus reads the queue and status of an encoded job record,
// scanning its keys when it can and decoding it in full when not.
func jobQueueStatus(key, b []byte) (string, Status, error) {
	if q, st, ok := scanQueueStatus(b); ok {
		return q, st, nil
	}
	var j queueStatus
	if _, err := storage.DecodeAt(key, b, storage.KindJob, jobVersion, &j); err != nil {
		return "", 0, err
	}
	return j.Queue, j.Status, nil
}

// queueStatus decodes just the queue and status of a job record.
type queueStatus struct {
	Queue  string `msgpack:"qu"`
	Status Status `msgpack:"st"`
}

// scanQueueStatus reads the queue and status of an encoded job record by
// walking its keys up to "qu" and "st" (the fourth and fifth), without
// decoding the rest: the metrics read them at every status change. It
// reports false for anything unexpected, and the caller decodes the record
// in full.
func scanQueueStatus(b []byte) (string, Status, bool) {
	if len(b) < 2 || storage.Kind(b[0]) != storage.KindJob || b[1] != jobVersion {
		return "", 0, false
	}
	dec := msgpack.GetDecoder()
	defer msgpack.PutDecoder(dec)
	dec.Reset(bytes.NewReader(b[2:]))
	n, err := dec.DecodeMapLen()
	if err != nil {
		return "", 0, false
	}
	var queue string
	var status Status
	found := 0
	for range min(n, 16) {
		k, err := dec.DecodeString()
		if err != nil {
			return "", 0, false
		}
		switch k {
		case "qu":
			if queue, err = dec.DecodeString(); err != nil {
				return "", 0, false
			}
			found++
		case "st":
			v, err := dec.DecodeUint8()
			if err != nil {
				return "", 0, false
			}
			status = Status(v)
			found++
		default:
			if err := dec.Skip(); err != nil {
				return "", 0, false
			}
		}
		if found == 2 {
			return queue, status, true
		}
	}
	return "", 0, false
}

// Stage adds a command's diff to the batch being built, to be recorded
// when the batch holding its writes commits.
func (mt *Meter) Stage(d MeterDiff) {
	if mt == nil || len(d.changes)+len(d.steps) == 0 {
		return
	}
	mt.mu.Lock()
	defer mt.mu.Unlock()
	st := &mt.staged
	for _, c := range d.changes {
		switch {
		case c.reclaimed > 0:
			st.reclaimed += c.reclaimed
		case c.delta == 0:
			st.late = append(st.late, c.late)
		case c.status.Terminal():
			if c.delta > 0 {
				st.closed[jobCountKey{c.status, c.queue}]++
			}
		default:
			st.jobs[jobCountKey{c.status, c.queue}] += c.delta
		}
	}
	for _, c := range d.steps {
		if c.to != StepNone {
			st.trans[c.from][c.to] += c.n
		} else {
			st.steps[c.state] += c.delta
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
					c = mt.m.StepTransitionsCounter(StepState(from).String(), StepState(to).String())
					mt.stepTrans[from][to] = c
				}
				c.Add(float64(n))
			}
		}
		for state, d := range st.steps {
			if d == 0 {
				continue
			}
			mt.steps[StepState(state)] += d
			g := mt.stepsGauges[state]
			if g == nil {
				g = mt.m.StepsGauge(StepState(state).String())
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
	steps := map[StepState]int64{}
	err := v.View(func(r *storage.Reader) error {
		for _, s := range Statuses() {
			if s.Terminal() {
				continue
			}
			var ids []uint64
			err := r.Scan(storage.StatusPrefix(byte(s)), nil, false, func(k, _ []byte) (bool, error) {
				id, err := storage.TrailingJob(k)
				ids = append(ids, id)
				return err == nil, err
			})
			if err != nil {
				return err
			}
			for _, id := range ids {
				key := storage.JobKey(id)
				b, err := r.Get(key)
				if err != nil {
					return err
				}
				queue, _, err := jobQueueStatus(key, b)
				if err != nil {
					return err
				}
				counts[jobCountKey{s, queue}]++
				if err := countSteps(r, key, b, steps); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
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

// outcomeOf names the outcome of a command for the metrics: "ok", or the
// name of the sentinel its error matches (the HTTP API's names).
func outcomeOf(err error) string {
	if err == nil {
		return "ok"
	}
	for _, o := range outcomeNames {
		if errors.Is(err, o.err) {
			return o.name
		}
	}
	return "other"
}

var outcomeNames = []struct {
	name string
	err  error
}{
	{"stale_attempt", ErrStaleAttempt},
	// Before invalid_command, which a reused id of another kind matches
	// as well.
	{"request_conflict", ErrRequestConflict},
	{"unknown_job", ErrUnknownJob},
	{"illegal_transition", ErrIllegalTransition},
	{"unknown_command", ErrUnknownCommand},
	{"payload_too_large", ErrPayloadTooLarge},
	{"invalid_command", ErrInvalidCommand},
	{"workflow_exists", ErrWorkflowExists},
	{"job_closed", ErrJobClosed},
	{"step_committed", ErrStepCommitted},
	{"step_state", ErrStepState},
	{"no_resource", ErrNoResource},
	{"dependency_failed", ErrDependencyFailed},
	{"unknown_resource", ErrUnknownResource},
	{"resource_exists", ErrResourceExists},
	{"resource_busy", ErrResourceBusy},
	{"invariant", ErrInvariant},
	{"corrupt", ErrCorrupt},
	{"storage_read", ErrStorageRead},
}
