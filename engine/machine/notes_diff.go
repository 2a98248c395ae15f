package machine

import (
	"bytes"
	"slices"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// JobChange is one thing a command's writes did to jobs that the metrics
// count: a job of Queue entering (Delta 1) or leaving (-1) Status, a
// fired timer's lateness (Late, with Delta 0), or leases reclaimed.
type JobChange struct {
	Status    engine.Status
	Queue     string
	Delta     int64
	Late      time.Duration
	Reclaimed int
}

// MeterDiff is what one command changed that the metrics count. It holds
// the scratch memory of the Notes that made it: it is good until their
// next Diff.
type MeterDiff struct {
	Changes []JobChange
	Steps   []StepChange
}

// Diff reads what cmd, applied with n, changed that the metrics count
// (see engine/embedded's Meter.Diff), from n, res and tx's buffered writes. Like the
// Meter's, it reads no clock and writes nothing.
func (n *Notes) Diff(tx *storage.Tx, cmd engine.Command, res engine.Result) MeterDiff {
	out := n.diff.Changes[:0]
	if sr, ok := res.(*engine.SweepResult); ok && len(sr.Jobs) > 0 {
		switch cmd.Kind() {
		case engine.KindReclaim:
			out = append(out, JobChange{Reclaimed: len(sr.Jobs)})
		case engine.KindFireTimers:
			out = firedLateness(tx, cmd, sr, out)
		}
	}
	if n.cmd != cmd {
		n.diff.Changes, n.diff.Steps = out, n.diff.Steps[:0]
		return n.diff
	}
	for _, jn := range n.jobs {
		if jn.from == jn.to {
			continue // left its status and came back within the command
		}
		if jn.from != engine.StatusNone {
			out = append(out, JobChange{Status: jn.from, Queue: jn.queue, Delta: -1})
		}
		out = append(out, JobChange{Status: jn.to, Queue: jn.queue, Delta: 1})
	}
	n.diff.Changes = out
	n.diff.Steps = stepDiff(tx, n, n.diff.Steps[:0])
	return n.diff
}

// firedLateness appends the lateness of each timer a FireTimers command
// fired: the timer entries it deleted of the jobs it reports.
func firedLateness(tx *storage.Tx, cmd engine.Command, sr *engine.SweepResult, out []JobChange) []JobChange {
	tx.Each(func(key, _ []byte, deleted bool) {
		if !deleted || len(key) == 0 || key[0] != storage.PrefixTimer {
			return
		}
		tk, err := storage.ParseTimeKey(key)
		if err == nil && slices.Contains(sr.Jobs, engine.JobID(tk.Job)) {
			out = append(out, JobChange{Late: time.Duration(max(cmd.Head().NowMS-tk.AtMS, 0)) * time.Millisecond})
		}
	})
	return out
}

// jobQueueStatus reads the queue and status of an encoded job record,
// scanning its keys when it can and decoding it in full when not.
func jobQueueStatus(key, b []byte) (string, engine.Status, error) {
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
	Queue  string        `msgpack:"qu"`
	Status engine.Status `msgpack:"st"`
}

// scanQueueStatus reads the queue and status of an encoded job record by
// walking its keys up to "qu" and "st" (the fourth and fifth), without
// decoding the rest: the metrics read them at every status change. It
// reports false for anything unexpected, and the caller decodes the record
// in full.
func scanQueueStatus(b []byte) (string, engine.Status, bool) {
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
	var status engine.Status
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
			status = engine.Status(v)
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

// CountOpen reads from the status index of r the open jobs, calling job
// once for each with its status and queue, and the steps the step gauge
// counts (those with a record in a non-terminal state, of open jobs),
// calling steps once for each state with their number. It reads every
// open job's record (not the finished ones).
func CountOpen(r *storage.Reader, job func(s engine.Status, queue string), steps func(s engine.StepState, n int64)) (err error) {
	defer markStorage(&err)
	counts := map[engine.StepState]int64{}
	for _, s := range engine.Statuses() {
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
			job(s, queue)
			if err := countSteps(r, key, b, counts); err != nil {
				return err
			}
		}
	}
	for s, n := range counts {
		steps(s, n)
	}
	return nil
}
