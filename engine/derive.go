package engine

import "fmt"

// DeriveStatus scans a history and returns the status its status events lead
// to: the last status event decides, refined by its attributes exactly as Next
// does. It does not judge legality; CheckHistory does.
func DeriveStatus(history []Event) Status {
	s := StatusNone
	for i := range history {
		if to, ok := Next(s, &history[i]); ok {
			s = to
		} else if IsStatusEvent(history[i].Type) {
			// An illegal event still "decides" in the seeds' projection;
			// take its base target so the projection is total.
			s = lenientTarget(&history[i])
		}
	}
	return s
}

// lenientTarget is the state an event leads to from any state, used only to
// keep DeriveStatus total on histories that CheckHistory rejects.
func lenientTarget(ev *Event) Status {
	for _, from := range Statuses() {
		if to, ok := Next(from, ev); ok {
			return to
		}
	}
	if to, ok := Next(StatusNone, ev); ok {
		return to
	}
	return StatusNone
}

// InvariantError reports the first place a history breaks the job state
// machine: which rule (1–4 of docs/state-machines.md §1; 0 for sequence and
// transition legality; 5 for a step's transition legality and 6 for its
// tries going back, §3), at which event, and why.
type InvariantError struct {
	Invariant int
	Seq       uint64
	Detail    string
}

// InvariantCode is the stable code of InvariantError.
const InvariantCode = "HDL-ENGINE-0002"

func (e *InvariantError) Error() string {
	return fmt.Sprintf("engine: history breaks invariant %d at seq %d: %s [%s]", e.Invariant, e.Seq, e.Detail, InvariantCode)
}

// Unwrap makes errors.Is(err, ErrInvariant) true.
func (e *InvariantError) Unwrap() error { return ErrInvariant }

// Code returns the stable code of invariant errors.
func (e *InvariantError) Code() string { return InvariantCode }

// CheckHistory checks one job's history against the state machine: seqs run
// 1, 2, 3, … without gaps; every status event is a legal transition; and the
// four invariants of docs/state-machines.md §1 hold. When stored is not
// StatusNone it must equal DeriveStatus(history).
func CheckHistory(history []Event, stored Status) error {
	s := StatusNone
	var lastStatus *Event // the last status event so far
	terminalSeen := false
	for i := range history {
		ev := &history[i]
		if ev.Seq != uint64(i+1) {
			return &InvariantError{0, ev.Seq, fmt.Sprintf("event %d has seq %d", i+1, ev.Seq)}
		}
		if !IsStatusEvent(ev.Type) {
			continue
		}
		// Invariant 1: one terminal end (job_requeued after job_failed is a
		// retry; after job_timed_out or job_terminated nothing follows).
		if terminalSeen {
			switch ev.Type {
			case EventJobRunning, EventJobLeased:
				return &InvariantError{1, ev.Seq, fmt.Sprintf("%s after a terminal event", ev.Type)}
			case EventJobRequeued:
				if lastStatus.Type != EventJobFailed {
					return &InvariantError{1, ev.Seq, fmt.Sprintf("job_requeued after %s", lastStatus.Type)}
				}
			}
		}
		// Invariant 4: lease-expiry reclaim never takes a blocked job.
		if ev.Type == EventJobRequeued && ev.Reason == ReasonLeaseExpired &&
			(lastStatus == nil || lastStatus.Type == EventJobWaiting) {
			return &InvariantError{4, ev.Seq, "lease-expiry reclaim of a job that was not running"}
		}
		to, ok := Next(s, ev)
		if !ok {
			return &InvariantError{0, ev.Seq, fmt.Sprintf("%s is illegal in %s", ev.Type, s)}
		}
		s = to
		lastStatus = ev
		switch ev.Type {
		case EventJobCompleted, EventJobFailed, EventJobCancelled, EventJobTimedOut, EventJobTerminated:
			terminalSeen = true
		case EventJobRequeued:
			terminalSeen = false // a retry of a failed job reopens it
		}
	}
	var seq uint64
	if lastStatus != nil {
		seq = lastStatus.Seq
	}
	// Invariant 2: a Waiting/Parked job's last status event is job_waiting.
	if (s == StatusWaiting || s == StatusParked) && lastStatus.Type != EventJobWaiting {
		return &InvariantError{2, seq, fmt.Sprintf("%s job's last status event is %s", s, lastStatus.Type)}
	}
	// Invariant 3: a Running job's last status event is a claim.
	if s == StatusRunning && lastStatus.Type != EventJobRunning && lastStatus.Type != EventJobLeased {
		return &InvariantError{3, seq, fmt.Sprintf("Running job's last status event is %s", lastStatus.Type)}
	}
	if stored != StatusNone && stored != s {
		return &InvariantError{0, seq, fmt.Sprintf("stored status %s, history derives %s", stored, s)}
	}
	return nil
}
