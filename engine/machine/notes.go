package machine

import "github.com/heddlewf/heddle/engine"

// Notes are what one Apply changed that the metrics count, written down by
// Apply as it makes the changes: the status a job had before the command
// and the status it was saved in, the step events appended, and the step
// records written with the states they were in before and after. A Meter
// reads them instead of reading records back and decoding events, which
// is what made metrics cost most of their time.
//
// Noting is pure data: it reads no clock and no store, and it changes
// nothing Apply writes. A Notes belongs to the one goroutine that applies
// commands with it, and is emptied at the start of each Apply.
type Notes struct {
	// cmd is the command the notes are of (set when Apply succeeds).
	cmd    engine.Command
	jobs   []jobNote
	events []stepEventNote
	steps  []stepNote
	// eventAfter is Diff's scratch: the state each event left its step
	// in, as it walks them; diff is the MeterDiff it fills.
	eventAfter []engine.StepState
	diff       MeterDiff
}

// jobNote is a job whose record the command saved.
type jobNote struct {
	job   engine.JobID
	queue string
	// from is the status before the command (StatusNone for a job it
	// created), to the status of the last record it saved.
	from, to engine.Status
}

// stepEventNote is a step event the command appended, with what of it
// decides the step's route (engine.StepRoute reads its type and reason).
type stepEventNote struct {
	job     engine.JobID
	step    string
	typ     engine.EventType
	attempt uint32
	reason  string
}

// stepNote is a step whose record the command read or wrote.
type stepNote struct {
	job  engine.JobID
	step string
	// known says before and existed hold the record as it was before the
	// command: it was read before anything wrote it. A step first seen
	// when it was written (a record made without a look first) is not
	// known, and the Meter reads its record as it was instead.
	known   bool
	existed bool
	before  engine.StepState
	// written says the command wrote the record; after is its state then.
	written bool
	after   engine.StepState
	// openBefore and openAfter say whether the step's job was open before
	// the command and in the record it leaves; jobKnown says they were set
	// (once Apply succeeded, for a job the command loaded or created).
	openBefore, openAfter, jobKnown bool
}

// reset empties n for the next command, keeping its memory.
func (n *Notes) reset() {
	n.cmd = nil
	clear(n.jobs)
	clear(n.events)
	clear(n.steps)
	n.jobs, n.events, n.steps, n.eventAfter = n.jobs[:0], n.events[:0], n.steps[:0], n.eventAfter[:0]
}

// step returns the note of step name in job, or nil.
func (n *Notes) step(job engine.JobID, name string) *stepNote {
	for i := range n.steps {
		if s := &n.steps[i]; s.job == job && s.step == name {
			return s
		}
	}
	return nil
}

// noteJobSaved notes that l's record is saved now, before save replaces
// l.old: the first save of a command still holds the record as loaded.
func (a *applier) noteJobSaved(l *loaded) {
	n := a.notes
	if n == nil {
		return
	}
	j := l.job
	for i := range n.jobs {
		if n.jobs[i].job == j.ID {
			n.jobs[i].to = j.Status
			return
		}
	}
	from := engine.StatusNone
	if l.old != nil {
		from = l.old.Status
	}
	n.jobs = append(n.jobs, jobNote{job: j.ID, queue: j.Queue, from: from, to: j.Status})
}

// noteStepEvent notes an appended event if it is one of a step's.
func (a *applier) noteStepEvent(job engine.JobID, ev *engine.Event) {
	if a.notes == nil || ev.Step == "" || !engine.IsStepEvent(ev.Type) {
		return
	}
	a.notes.events = append(a.notes.events, stepEventNote{job: job, step: ev.Step, typ: ev.Type, attempt: ev.StepAttempt, reason: ev.Reason})
}

// noteStepRead notes the record of a step as read (rec nil: none), the
// first time the command reads it and only if it did not write it first.
func (a *applier) noteStepRead(job engine.JobID, name string, rec *engine.StepRecord) {
	n := a.notes
	if n == nil || n.step(job, name) != nil {
		return
	}
	s := stepNote{job: job, step: name, known: true}
	if rec != nil {
		s.existed, s.before = true, rec.State
	}
	n.steps = append(n.steps, s)
}

// noteStepWritten notes a step record written in state.
func (a *applier) noteStepWritten(job engine.JobID, name string, state engine.StepState) {
	n := a.notes
	if n == nil {
		return
	}
	s := n.step(job, name)
	if s == nil {
		n.steps = append(n.steps, stepNote{job: job, step: name})
		s = &n.steps[len(n.steps)-1]
	}
	s.written, s.after = true, state
}

// finishNotes sets what the step notes need of their jobs once the
// command has succeeded: whether each job was open before it, and in the
// record it leaves (the last saved, or the one it did not touch).
func (a *applier) finishNotes(cmd engine.Command) {
	n := a.notes
	if n == nil {
		return
	}
	n.cmd = cmd
	for i := range n.steps {
		s := &n.steps[i]
		if !s.written {
			continue
		}
		from, to, ok := a.jobStatusNoted(s.job)
		if !ok {
			continue // the Meter reads the job's records instead
		}
		s.openBefore = from != engine.StatusNone && !from.Terminal()
		s.openAfter = to != engine.StatusNone && !to.Terminal()
		s.jobKnown = true
	}
}

// jobStatusNoted returns the status of job before the command and in the
// record it leaves, for a job the command loaded or created.
func (a *applier) jobStatusNoted(job engine.JobID) (from, to engine.Status, ok bool) {
	for _, jn := range a.notes.jobs {
		if jn.job == job {
			return jn.from, jn.to, true
		}
	}
	l, ok := a.jobs[job]
	if !ok {
		return 0, 0, false
	}
	if l.old == nil {
		return engine.StatusNone, engine.StatusNone, true // created and never saved: no record
	}
	return l.old.Status, l.old.Status, true
}

// JobMoves calls fn for each job whose record the noted command saved, with
// its queue, the status it had before the command (StatusNone for a job the
// command created) and the status it was saved in. The task queue view
// counts from them the jobs that became ready to claim and those claimed
// (embedded.TaskQueues). Call it only after the command succeeded.
func (n *Notes) JobMoves(fn func(queue string, from, to engine.Status)) {
	for _, j := range n.jobs {
		fn(j.queue, j.from, j.to)
	}
}
