package machine

import (
	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// The step metrics a Meter keeps (docs/state-machines.md §3):
// transitions, from the step events a command appended, and the steps in
// each non-terminal state, from the step records it wrote (both as Apply
// noted them).
// Like the job gauge, the step gauge is counted from the store at open and
// moved by every commit; it covers the steps with a step record (those on
// the explicit path) of open runs, the only ones whose state is stored.

// StepChange is one thing a command did to steps that the metrics count:
// N transitions From one state To another (To != StepNone), or a step
// entering (Delta 1) or leaving (-1) State (To == StepNone).
type StepChange struct {
	From, To engine.StepState
	N        int
	State    engine.StepState
	Delta    int64
}

// stepDiff appends the step changes a command made, read from its notes:
// the transitions of the step events it appended, each step starting from
// the state its record had before the command, and the step gauge moves of
// the step records it wrote. What the notes do not know (a record written
// before it was read) is read from the store as it was before the command.
func stepDiff(tx *storage.Tx, n *Notes, out []StepChange) []StepChange {
	first := len(out)
	n.eventAfter = n.eventAfter[:0]
	for i, ev := range n.events {
		// The state an earlier event of the command that moved the step
		// left it in, or else its state before the command.
		from := stepUnmoved
		for j := i - 1; j >= 0 && from == stepUnmoved; j-- {
			if p := n.events[j]; p.job == ev.job && p.step == ev.step {
				from = n.eventAfter[j]
			}
		}
		if from == stepUnmoved {
			from = stepBefore(tx, n.step(ev.job, ev.step), ev)
		}
		e := engine.Event{Type: ev.typ, Reason: ev.reason, StepAttempt: ev.attempt}
		route, ok := engine.StepRoute(from, &e)
		if !ok || len(route) == 0 {
			n.eventAfter = append(n.eventAfter, stepUnmoved)
			continue
		}
		for _, to := range route {
			if from != engine.StepNone {
				out = addTransition(out, first, from, to)
			}
			from = to
		}
		n.eventAfter = append(n.eventAfter, from)
	}
	for i := range n.steps {
		if s := &n.steps[i]; s.written {
			out = stepGauge(tx, s, out)
		}
	}
	return out
}

// stepUnmoved marks an event that did not move its step.
const stepUnmoved engine.StepState = 255

// addTransition counts one transition from → to in out[first:].
func addTransition(out []StepChange, first int, from, to engine.StepState) []StepChange {
	for i := first; i < len(out); i++ {
		if out[i].From == from && out[i].To == to {
			out[i].N++
			return out
		}
	}
	return append(out, StepChange{From: from, To: to, N: 1})
}

// stepBefore is the state a step was in before the command: its record's,
// or for a step without one (on the straight path), none, or RETRYING
// when the event is of a later try than the first. s is the step's note;
// when it does not know the record before the command, the store is read.
func stepBefore(tx *storage.Tx, s *stepNote, ev stepEventNote) engine.StepState {
	switch {
	case s != nil && s.known && s.existed:
		return s.before
	case s != nil && s.known:
	default:
		if b, err := tx.Before(storage.StepKey(uint64(ev.job), ev.step)); err == nil {
			if rec, err := DecodeStepRecord(b); err == nil {
				return rec.State
			}
		}
	}
	if ev.attempt > 1 {
		return engine.StepRetrying
	}
	return engine.StepNone
}

// stepGauge appends how a written step record moved the step gauge: out of
// its state before, if it counted then, and into its state now, if it
// counts now. A step counts while its record is in a non-terminal state and
// its job is open.
func stepGauge(tx *storage.Tx, s *stepNote, out []StepChange) []StepChange {
	key := storage.StepKey(uint64(s.job), s.step)
	jobKey := storage.JobKey(uint64(s.job))
	var was, is engine.StepState
	var counted, counts bool // whether it counted before, and counts now
	switch {
	case s.known && s.jobKnown:
		was, counted = s.before, s.existed && !s.before.Terminal() && s.openBefore
	default:
		if b, err := tx.Before(key); err == nil {
			if rec, err := DecodeStepRecord(b); err == nil && !rec.State.Terminal() && jobOpen(jobKey, tx.Before) {
				was, counted = rec.State, true
			}
		}
	}
	if s.jobKnown {
		is, counts = s.after, !s.after.Terminal() && s.openAfter
	} else {
		is, counts = s.after, !s.after.Terminal() && jobOpen(jobKey, tx.Get)
	}
	if counted && counts && was == is {
		return out
	}
	if counted {
		out = append(out, StepChange{State: was, Delta: -1})
	}
	if counts {
		out = append(out, StepChange{State: is, Delta: 1})
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
func countSteps(r *storage.Reader, key, b []byte, counts map[engine.StepState]int64) error {
	var j liveSteps
	if _, err := storage.DecodeAt(key, b, storage.KindJob, jobVersion, &j); err != nil {
		return err
	}
	id, err := storage.TrailingJob(key)
	if err != nil {
		return err
	}
	for _, name := range j.LiveSteps {
		rec, err := readStep(r.Get, engine.JobID(id), name)
		if err != nil {
			return err
		}
		if rec != nil && !rec.State.Terminal() {
			counts[rec.State]++
		}
	}
	return nil
}
