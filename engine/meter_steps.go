package engine

import (
	"encoding/binary"

	"github.com/heddlewf/heddle/storage"
)

// The step metrics a Meter keeps (docs/state-machines.md §3):
// transitions, read from the step events a command appended, and the
// steps in each non-terminal state, read from the step records it wrote.
// Like the job gauge, the step gauge is counted from the store at open and
// moved by every commit; it covers the steps with a step record (those on
// the explicit path) of open runs, the only ones whose state is stored.

// stepChange is one thing a command did to steps that the metrics count:
// n transitions from one state to another (to != StepNone), or a step
// entering (delta 1) or leaving (-1) a state (to == StepNone).
type stepChange struct {
	from, to StepState
	n        int
	state    StepState
	delta    int64
}

type stepKey struct {
	job  uint64
	step string
}

// stepEventHead is what the step metrics read of an event: decoding only
// these fields skips its payload and wait, which a full decode of every
// event a command writes spent most of the metrics' cost on.
type stepEventHead struct {
	Type        EventType `msgpack:"t"`
	Step        string    `msgpack:"s,omitempty"`
	StepAttempt uint32    `msgpack:"sa,omitempty"`
}

// stepDiff reads the step changes from a command's buffered writes.
func stepDiff(tx *storage.Tx) []stepChange {
	type jobEvent struct {
		job uint64
		ev  *Event
	}
	var evs []jobEvent
	var recs [][]byte
	tx.Each(func(key, val []byte, deleted bool) {
		if len(key) == 0 || deleted {
			return
		}
		switch key[0] {
		case storage.PrefixEvent:
			job, _, err := storage.ParseEventKey(key)
			if err != nil {
				return
			}
			var h stepEventHead
			if _, err := storage.Decode(val, storage.KindEvent, eventVersion, &h); err == nil && IsStepEvent(h.Type) && h.Step != "" {
				evs = append(evs, jobEvent{job, &Event{Type: h.Type, Step: h.Step, StepAttempt: h.StepAttempt}})
			}
		case storage.PrefixStep:
			recs = append(recs, key)
		}
	})
	var out []stepChange
	counts := map[[2]StepState]int{}
	state := map[stepKey]StepState{}
	for _, je := range evs {
		k := stepKey{je.job, je.ev.Step}
		from, ok := state[k]
		if !ok {
			from = stepBefore(tx, k, je.ev)
		}
		route, ok := stepRoute(from, je.ev)
		if !ok || len(route) == 0 {
			continue
		}
		for _, to := range route {
			if from != StepNone {
				counts[[2]StepState{from, to}]++
			}
			from = to
		}
		state[k] = from
	}
	for ft, n := range counts {
		out = append(out, stepChange{from: ft[0], to: ft[1], n: n})
	}
	for _, key := range recs {
		out = append(out, stepGauge(tx, key)...)
	}
	return out
}

// stepBefore is the state a step was in before the command: its record's,
// or for a step without one (on the straight path), none, or RETRYING
// when the event is of a later try than the first.
func stepBefore(tx *storage.Tx, k stepKey, ev *Event) StepState {
	if b, err := tx.Before(storage.StepKey(k.job, k.step)); err == nil {
		if rec, err := DecodeStepRecord(b); err == nil {
			return rec.State
		}
	}
	if ev.StepAttempt > 1 {
		return StepRetrying
	}
	return StepNone
}

// stepGauge is how a written step record moved the step gauge: out of its
// state before, if it counted then, and into its state now, if it counts
// now. A step counts while its record is in a non-terminal state and its
// job is open.
func stepGauge(tx *storage.Tx, key []byte) []stepChange {
	if len(key) < 9 {
		return nil
	}
	jobKey := storage.JobKey(binary.BigEndian.Uint64(key[1:9]))
	var out []stepChange
	if b, err := tx.Before(key); err == nil {
		if rec, err := DecodeStepRecord(b); err == nil && !rec.State.Terminal() && jobOpen(jobKey, tx.Before) {
			out = append(out, stepChange{state: rec.State, delta: -1})
		}
	}
	if b, err := tx.Get(key); err == nil {
		if rec, err := DecodeStepRecord(b); err == nil && !rec.State.Terminal() && jobOpen(jobKey, tx.Get) {
			out = append(out, stepChange{state: rec.State, delta: 1})
		}
	}
	if len(out) == 2 && out[0].state == out[1].state {
		return nil
	}
	return out
}

// jobOpen reports whether the job record get reads is of an open job.
func jobOpen(key []byte, get func([]byte) ([]byte, error)) bool {
	b, err := get(key)
	if err != nil {
		return false
	}
	_, st, err := jobQueueStatus(key, b)
	return err == nil && !st.Terminal()
}

// liveSteps decodes just the live steps of an encoded job record.
type liveSteps struct {
	LiveSteps []string `msgpack:"lv"`
}

// countSteps counts the step gauge from the step records of open job id.
func countSteps(r *storage.Reader, key, b []byte, counts map[StepState]int64) error {
	var j liveSteps
	if _, err := storage.DecodeAt(key, b, storage.KindJob, jobVersion, &j); err != nil {
		return err
	}
	id, err := storage.TrailingJob(key)
	if err != nil {
		return err
	}
	for _, name := range j.LiveSteps {
		rec, err := readStep(r.Get, JobID(id), name)
		if err != nil {
			return err
		}
		if rec != nil && !rec.State.Terminal() {
			counts[rec.State]++
		}
	}
	return nil
}
