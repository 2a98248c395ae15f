package engine

// The pause family (docs/state-machines.md §6): an operator's pause and
// unpause of a run (Temporal's PauseWorkflowExecution and
// UnpauseWorkflowExecution) and the operations on one activity of a run
// (Temporal's PauseActivity, UnpauseActivity, ResetActivity and
// UpdateActivityOptions). They are people's commands, like Suspend: not
// fenced by a lease, linearized by the log. Each is idempotent: a second
// pause of a paused run (or activity) writes nothing and answers as the
// first, and a request id makes a retry answer what the first gave.

// Pause holds a run: it takes no new turn and starts no activity until
// Unpause, and keeps its status, timers, steps and lease. A turn running
// when it is paused finishes (its worker learns of the pause from the
// history and starts nothing more), and the run is not claimed again
// until unpaused. Timers fire, signals arrive and deadlines pass as
// before, and are recorded. The run's open activity tasks (activities on
// other task queues) are held too. A paused run answers as it is
// (StatusResult.Seq 0 when nothing was written).
type Pause struct {
	Header
	Target
	Reason string `json:"reason,omitempty" msgpack:"r,omitempty"`
}

// Unpause ends a run's pause: a Queued run is claimable again, a waiting
// one is woken (so that its worker starts what the pause held back), and
// its activity tasks are released. A run that is not paused answers as it
// is, writing nothing.
type Unpause struct {
	Header
	Target
	Reason string `json:"reason,omitempty" msgpack:"r,omitempty"`
}

// ActivitySelector names the pending activities of a run an activity
// command acts on: the one of ActivityID (its step), every one of
// ActivityType, or every one (MatchAll). Exactly one is given. An activity
// is pending from the moment the engine knows of it (a failed try, a
// heartbeat, a step lease, its scheduling on another task queue) until its
// result is recorded.
type ActivitySelector struct {
	ActivityID   string `json:"activity_id,omitempty" msgpack:"aid,omitempty"`
	ActivityType string `json:"activity_type,omitempty" msgpack:"aty,omitempty"`
	MatchAll     bool   `json:"match_all,omitempty" msgpack:"all,omitempty"`
}

// PauseActivity pauses activities of a run: no try of them starts until
// UnpauseActivity (or ResetActivity). A try running when it is paused
// finishes; if it fails with retries left, the next try waits for the
// unpause. The activity's timeouts keep running, as in Temporal.
type PauseActivity struct {
	Header
	Target
	ActivitySelector
	Reason string `json:"reason,omitempty" msgpack:"r,omitempty"`
}

// UnpauseActivity ends the pause of activities of a run. An activity whose
// retry delay passed meanwhile tries again at once, one still in its delay
// when it ends. ResetAttempts also resets the attempts (ResetActivity).
type UnpauseActivity struct {
	Header
	Target
	ActivitySelector
	Reason        string `json:"reason,omitempty" msgpack:"r,omitempty"`
	ResetAttempts bool   `json:"reset_attempts,omitempty" msgpack:"ra,omitempty"`
}

// ResetActivity starts activities of a run over: the retry policy counts
// their tries from 1 again, the heartbeat details of earlier tries are
// dropped, and one waiting for a retry delay tries again at once. A paused
// activity is unpaused unless KeepPaused. RestoreOriginalOptions also
// drops the options an operator gave (UpdateActivityOptions). A try
// running when it is reset finishes; the reset counts from the tries made
// before the command.
type ResetActivity struct {
	Header
	Target
	ActivitySelector
	KeepPaused             bool   `json:"keep_paused,omitempty" msgpack:"kp,omitempty"`
	RestoreOriginalOptions bool   `json:"restore_original_options,omitempty" msgpack:"ro,omitempty"`
	Reason                 string `json:"reason,omitempty" msgpack:"r,omitempty"`
}

// UpdateActivityOptions changes the timeouts and retry policy of
// activities of a run while they are pending: each non-zero field of
// Options replaces the value in force, from the next try on (a try that
// runs keeps its own timeouts). RestoreOriginal instead goes back to the
// options the workflow gave (and then Options must be empty). For an
// activity on another task queue, a new schedule-to-close timeout also
// moves the activity task's deadline (from its scheduling), and a new
// schedule-to-start timeout its start deadline while no worker took it.
type UpdateActivityOptions struct {
	Header
	Target
	ActivitySelector
	Options         ActivityOptions `json:"options" msgpack:"op"`
	RestoreOriginal bool            `json:"restore_original,omitempty" msgpack:"ro,omitempty"`
}

func (*Pause) Kind() CommandKind                 { return KindPause }
func (*Unpause) Kind() CommandKind               { return KindUnpause }
func (*PauseActivity) Kind() CommandKind         { return KindPauseActivity }
func (*UnpauseActivity) Kind() CommandKind       { return KindUnpauseActivity }
func (*ResetActivity) Kind() CommandKind         { return KindResetActivity }
func (*UpdateActivityOptions) Kind() CommandKind { return KindUpdateActivityOptions }

func (c *Pause) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.target(c.Target)
	ch.name("Reason", c.Reason, false)
	return ch.err
}

func (c *Unpause) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.target(c.Target)
	ch.name("Reason", c.Reason, false)
	return ch.err
}

// selector checks that s names activities exactly one way.
func (c *checker) selector(s ActivitySelector) {
	c.name("ActivityID", s.ActivityID, false)
	c.name("ActivityType", s.ActivityType, false)
	n := 0
	for _, set := range []bool{s.ActivityID != "", s.ActivityType != "", s.MatchAll} {
		if set {
			n++
		}
	}
	if n != 1 {
		c.fail("ActivitySelector", "must give exactly one of ActivityID, ActivityType and MatchAll")
	}
}

func (c *PauseActivity) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.target(c.Target)
	ch.selector(c.ActivitySelector)
	ch.name("Reason", c.Reason, false)
	return ch.err
}

func (c *UnpauseActivity) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.target(c.Target)
	ch.selector(c.ActivitySelector)
	ch.name("Reason", c.Reason, false)
	return ch.err
}

func (c *ResetActivity) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.target(c.Target)
	ch.selector(c.ActivitySelector)
	ch.name("Reason", c.Reason, false)
	return ch.err
}

func (c *UpdateActivityOptions) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.target(c.Target)
	ch.selector(c.ActivitySelector)
	c.Options.check(ch)
	switch {
	case ch.err != nil:
	case c.RestoreOriginal && !c.Options.IsZero():
		ch.fail("Options", "must be empty with RestoreOriginal, which goes back to the workflow's options")
	case !c.RestoreOriginal && c.Options.IsZero():
		ch.fail("Options", "changes nothing: give a timeout or a retry policy field, or RestoreOriginal")
	}
	return ch.err
}

// ActivityResult answers the activity commands: the activities (steps) of
// the run they acted on, in step order, and the seq of the last event they
// wrote (0 when every one already was as asked).
type ActivityResult struct {
	Job   JobID    `json:"job_id" msgpack:"j"`
	Steps []string `json:"steps" msgpack:"s"`
	Seq   uint64   `json:"seq,omitempty" msgpack:"sq,omitempty"`
}

func (*ActivityResult) isResult() {}
