package engine

import (
	"bytes"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/heddlewf/heddle/metrics"
	"github.com/heddlewf/heddle/storage"
)

// Meter records the metrics of applying commands. The log that applies
// them (LocalLog, or a Raft node's state machine) calls it around Apply,
// never from inside: Apply stays a pure step function, and a Meter only
// reads the command, its result and the writes its Tx buffered.
//
// The open-job gauge is kept in memory: Count reads it from the status
// index when the store opens (or a snapshot replaces it), and every commit
// moves it by the status changes its commands wrote, so a scrape never
// scans anything.
//
// A nil *Meter (what NewMeter returns for nil metrics) does nothing. A
// Meter is driven by the one goroutine that applies commands; Count may
// run on another while nothing is applied.
type Meter struct {
	m *metrics.Metrics

	mu sync.Mutex
	// open mirrors the open-job gauge, so that a recount moves the gauge
	// by the difference (another engine may share the registry).
	open map[jobCountKey]int64
	// staged holds what the commands of the batch being built changed; it
	// is recorded when the batch commits and dropped if it does not.
	staged []change
	// steps mirrors the step gauge, and stagedSteps are the step changes
	// of the batch being built (meter_steps.go).
	steps       map[StepState]int64
	stagedSteps []stepChange
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

// NewMeter returns a Meter recording into m, or nil when m is nil.
func NewMeter(m *metrics.Metrics) *Meter {
	if m == nil {
		return nil
	}
	return &Meter{m: m, open: map[jobCountKey]int64{}, steps: map[StepState]int64{}}
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
	kind := cmd.Kind().String()
	mt.m.Command(kind, outcomeOf(err), time.Since(start))
	if errors.Is(err, ErrStaleAttempt) {
		mt.m.StaleAttempt(kind)
	}
	if hb, ok := res.(*HeartbeatResult); ok {
		for _, r := range hb.Refused {
			if r.Code == StaleAttemptCode {
				mt.m.StaleAttempt(kind)
			}
		}
	}
}

// MeterDiff is what one command changed that the metrics count.
type MeterDiff struct {
	changes []change
	steps   []stepChange
}

// Diff reads what a successfully applied command changed, from its
// buffered writes, before the batch takes them: the jobs that entered or
// left a status, the timers that fired, the leases reclaimed. Hand the
// diff to Stage once the batch holds the writes. On a nil Meter it does
// nothing. A record that does not read (they were just read or written by
// Apply, so they do) leaves its job's change out.
//
// A job's change is from the status of its record before the command to
// the status of the record the command wrote, whatever status index
// entries it set and removed on the way (a new run that is created Queued
// and delayed to Retrying in one command sets and removes Queued's).
func (mt *Meter) Diff(tx *storage.Tx, cmd Command, res Result) MeterDiff {
	if mt == nil {
		return MeterDiff{}
	}
	var out []change
	fired := map[uint64]bool{}
	if sr, ok := res.(*SweepResult); ok {
		switch cmd.Kind() {
		case KindReclaim:
			if n := len(sr.Jobs); n > 0 {
				out = append(out, change{reclaimed: n})
			}
		case KindFireTimers:
			for _, j := range sr.Jobs {
				fired[uint64(j)] = true
			}
		}
	}
	var moved, created []uint64 // jobs whose status entries changed; jobs created
	tx.Each(func(key, _ []byte, deleted bool) {
		if len(key) == 0 {
			return
		}
		switch key[0] {
		case storage.PrefixStatus:
			if id, err := storage.TrailingJob(key); err == nil && len(key) == 10 && !slices.Contains(moved, id) {
				moved = append(moved, id)
			}
		case storage.PrefixQueue:
			// The queue index entry is written once, when the job is created.
			if id, err := storage.TrailingJob(key); err == nil && !deleted {
				created = append(created, id)
			}
		case storage.PrefixTimer:
			if !deleted || len(fired) == 0 {
				return
			}
			tk, err := storage.ParseTimeKey(key)
			if err == nil && fired[tk.Job] {
				out = append(out, change{late: time.Duration(max(cmd.Head().NowMS-tk.AtMS, 0)) * time.Millisecond})
			}
		}
	})
	for _, id := range moved {
		key := storage.JobKey(id)
		b, err := tx.Get(key)
		if err != nil {
			continue
		}
		queue, to, err := jobQueueStatus(key, b)
		if err != nil {
			continue
		}
		from := StatusNone
		if !slices.Contains(created, id) {
			old, err := tx.Before(key)
			if err != nil {
				continue
			}
			if _, from, err = jobQueueStatus(key, old); err != nil {
				continue
			}
		}
		if from == to {
			continue // left its status and came back within the command
		}
		if from != StatusNone {
			out = append(out, change{status: from, queue: queue, delta: -1})
		}
		out = append(out, change{status: to, queue: queue, delta: 1})
	}
	return MeterDiff{changes: out, steps: stepDiff(tx)}
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

// Stage keeps a command's diff until the batch holding its writes commits.
func (mt *Meter) Stage(d MeterDiff) {
	if mt == nil || len(d.changes)+len(d.steps) == 0 {
		return
	}
	mt.mu.Lock()
	mt.staged = append(mt.staged, d.changes...)
	mt.stagedSteps = append(mt.stagedSteps, d.steps...)
	mt.mu.Unlock()
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
	staged, steps := mt.staged, mt.stagedSteps
	mt.staged, mt.stagedSteps = nil, nil
	for _, c := range staged {
		if c.delta != 0 && !c.status.Terminal() {
			mt.open[jobCountKey{c.status, c.queue}] += c.delta
		}
	}
	for _, c := range steps {
		if c.to == StepNone {
			mt.steps[c.state] += c.delta
		}
	}
	mt.mu.Unlock()
	for _, c := range steps {
		if c.to != StepNone {
			mt.m.StepTransitions(c.from.String(), c.to.String(), c.n)
		} else {
			mt.m.StepsAdd(c.state.String(), float64(c.delta))
		}
	}
	for _, c := range staged {
		switch {
		case c.reclaimed > 0:
			mt.m.Reclaims(c.reclaimed)
		case c.delta == 0:
			mt.m.TimerLateness(c.late)
		case c.status.Terminal():
			if c.delta > 0 {
				mt.m.JobClosed(c.status.String(), c.queue)
			}
		default:
			mt.m.JobsAdd(c.status.String(), c.queue, float64(c.delta))
		}
	}
}

// Discard drops what the commands of a batch that failed to commit
// changed.
func (mt *Meter) Discard() {
	if mt == nil {
		return
	}
	mt.mu.Lock()
	mt.staged, mt.stagedSteps = nil, nil
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
	mt.staged = nil
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
	mt.steps, mt.stagedSteps = steps, nil
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
