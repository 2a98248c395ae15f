package engine

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// MaxDelayMS bounds every delay, timeout and time span a command carries
// (100 years), so that release times never overflow.
const MaxDelayMS = 100 * 365 * 24 * 3600 * 1000

// checker collects the first field error of one command's validation.
type checker struct {
	cmd string
	lim *Limits
	err error
}

func newChecker(c Command, l *Limits) *checker {
	ch := &checker{cmd: c.Kind().String(), lim: l}
	h := c.Head()
	ch.name("RequestID", h.RequestID, false)
	if h.NowMS <= 0 {
		ch.fail("NowMS", "must be a positive Unix time in milliseconds (the log stamps it)")
	}
	if len(h.Nonce) > maxNonceBytes && ch.err == nil {
		ch.err = tooLarge(ch.cmd, "Nonce", len(h.Nonce), maxNonceBytes)
	}
	return ch
}

func (c *checker) fail(field, reason string) {
	if c.err == nil {
		c.err = InvalidField(c.cmd, field, reason)
	}
}

func (c *checker) name(field, v string, required bool) {
	switch {
	case c.err != nil:
	case required && v == "":
		c.fail(field, "is required")
	case len(v) > c.lim.MaxNameBytes:
		c.err = tooLarge(c.cmd, field, len(v), c.lim.MaxNameBytes)
	case !utf8.ValidString(v):
		// Every surface prints names as text: bytes that are not UTF-8
		// would all show as U+FFFD, and a run could not be reached by the
		// id it shows.
		c.fail(field, fmt.Sprintf("is not valid UTF-8 (byte %d of %q is not): ids and names must be UTF-8 text", firstInvalidUTF8(v), v))
	}
}

// firstInvalidUTF8 returns the offset of the first byte of s that does not
// start a valid UTF-8 sequence.
func firstInvalidUTF8(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n <= 1 {
				return i
			}
		}
	}
	return len(s)
}

func (c *checker) names(field string, vs []string) {
	for i, v := range vs {
		c.name(fmt.Sprintf("%s[%d]", field, i), v, true)
	}
}

func (c *checker) payload(field string, b []byte) {
	if c.err == nil && len(b) > c.lim.MaxPayloadBytes {
		c.err = tooLarge(c.cmd, field, len(b), c.lim.MaxPayloadBytes)
	}
}

func (c *checker) batch(field string, n int) {
	switch {
	case c.err != nil:
	case n <= 0:
		c.fail(field, "must be at least 1")
	case n > c.lim.MaxBatch:
		c.err = tooLarge(c.cmd, field, n, c.lim.MaxBatch)
	}
}

func (c *checker) lease(field string, ms int64) {
	switch {
	case c.err != nil:
	case ms <= 0:
		c.fail(field, "must be a positive number of milliseconds")
	case ms > c.lim.MaxLeaseMS:
		c.fail(field, fmt.Sprintf("is %d ms, over the limit of %d ms", ms, c.lim.MaxLeaseMS))
	}
}

// duration checks a timeout or delay: 0 (none) up to 100 years.
func (c *checker) duration(field string, ms int64) {
	if ms < 0 || ms > MaxDelayMS {
		c.fail(field, fmt.Sprintf("is %d, not in [0, %d] (100 years)", ms, MaxDelayMS))
	}
}

func (c *checker) ref(r LeaseRef) {
	if c.err == nil && r.Job == 0 {
		c.fail("Job", "is required")
	}
	if c.err == nil && r.Attempt == 0 {
		c.fail("Attempt", "is required for a fenced write")
	}
	c.leaseToken("Token", r.Token)
}

// leaseToken bounds a presented lease token; its value is judged by Apply.
func (c *checker) leaseToken(field, t string) {
	if c.err == nil && len(t) > maxLeaseTokenBytes {
		c.err = tooLarge(c.cmd, field, len(t), maxLeaseTokenBytes)
	}
}

// parentLease checks the lease a create naming a parent must carry: the
// parent's own.
func (c *checker) parentLease(h *Header, parent JobID, pl *LeaseRef) {
	switch {
	case c.err != nil, LegacyParent(h, parent, pl):
	case parent == 0 && pl != nil:
		c.fail("ParentLease", "is set without a parent")
	case parent == 0:
	case pl == nil:
		c.fail("ParentLease", fmt.Sprintf("is required with a parent (job %d): only the holder of the parent run's lease may start its children and remote activities", parent))
	case pl.Job != parent:
		c.fail("ParentLease", fmt.Sprintf("names job %d, not the parent %d", pl.Job, parent))
	case pl.Attempt == 0:
		c.fail("ParentLease.Attempt", "is required")
	default:
		c.leaseToken("ParentLease.Token", pl.Token)
	}
}

// events checks events a worker asks to append: non-status types, names and
// payloads within the limits.
func (c *checker) events(evs []NewEvent) {
	for i := range evs {
		e := &evs[i]
		c.userEvent(fmt.Sprintf("Events[%d].Type", i), e.Type)
		c.name(fmt.Sprintf("Events[%d].Step", i), e.Step, false)
		c.name(fmt.Sprintf("Events[%d].Name", i), e.Name, false)
		c.payload(fmt.Sprintf("Events[%d].Payload", i), e.Payload)
	}
}

func (c *checker) target(t Target) {
	if c.err == nil && t.Job == 0 && t.WorkflowID == "" {
		c.fail("Target", "needs a Job or a WorkflowID")
	}
	c.name("WorkflowID", t.WorkflowID, false)
}

func (c *checker) userEvent(field string, t EventType) {
	c.name(field, string(t), true)
	switch {
	case c.err != nil:
	case IsStatusEvent(t):
		c.fail(field, fmt.Sprintf("%q is a status event, written only by its own command", t))
	case IsEngineEvent(t):
		c.fail(field, fmt.Sprintf("%q is an event only the engine writes", t))
	}
	if c.err == nil && IsEngineStepEvent(t) {
		c.fail(field, fmt.Sprintf("%q is a step event only the engine writes", t))
	}
}

func (c *CreateJob) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.name("WorkflowID", c.WorkflowID, false)
	ch.name("Type", c.Type, true)
	ch.name("Queue", c.Queue, true)
	ch.payload("Input", c.Input)
	if c.ReusePolicy > IDReuseReturnExisting {
		ch.fail("ReusePolicy", fmt.Sprintf("%d is not a known policy", c.ReusePolicy))
	}
	ch.name("ParentStep", c.ParentStep, c.ParentID != 0)
	ch.name("ParentWorkflowID", c.ParentWorkflowID, false)
	ch.name("ScheduleID", c.ScheduleID, false)
	ch.duration("ExecutionTimeoutMS", c.ExecutionTimeoutMS)
	ch.duration("RunTimeoutMS", c.RunTimeoutMS)
	ch.duration("ScheduleToStartTimeoutMS", c.ScheduleToStartTimeoutMS)
	if c.Retry != nil {
		var fe *FieldError
		if err := c.Retry.Validate(); errors.As(err, &fe) {
			ch.fail("Retry."+fe.Field, fe.Reason)
		}
	}
	if c.ParentClosePolicy > ParentCloseAbandon {
		ch.fail("ParentClosePolicy", fmt.Sprintf("%d is not a policy (0 terminate, 1 request cancel, 2 abandon)", c.ParentClosePolicy))
	}
	if r := c.Retry; r != nil {
		if r.Backoff > 2 {
			ch.fail("Retry.Backoff", fmt.Sprintf("%d is not a backoff kind (0 exponential, 1 linear, 2 fixed)", r.Backoff))
		}
		for i, t := range r.NonRetryableErrorTypes {
			ch.name(fmt.Sprintf("Retry.NonRetryableErrorTypes[%d]", i), t, true)
		}
		if len(r.NonRetryableErrorTypes) > l.MaxBatch && ch.err == nil {
			ch.err = tooLarge(ch.cmd, "Retry.NonRetryableErrorTypes", len(r.NonRetryableErrorTypes), l.MaxBatch)
		}
	}
	if c.ParentID == 0 && c.ParentStep != "" {
		ch.fail("ParentID", "is required with ParentStep")
	}
	ch.parentLease(&c.Header, c.ParentID, c.ParentLease)
	ch.name("TraceParent", c.TraceParent, false)
	ch.cron("CronSchedule", c.CronSchedule)
	if c.CronFirstNow && c.CronSchedule == "" {
		ch.fail("CronFirstNow", "needs CronSchedule")
	}
	if c.StartDelayMS < 0 || c.StartDelayMS > MaxDelayMS {
		ch.fail("StartDelayMS", fmt.Sprintf("is %d, not in [0, %d] (100 years)", c.StartDelayMS, MaxDelayMS))
	} else if c.StartDelayMS > 0 && c.CronSchedule != "" {
		ch.fail("StartDelayMS", "cannot be combined with CronSchedule")
	}
	return ch.err
}

func (c *Claim) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.name("Queue", c.Queue, true)
	ch.name("Owner", c.Owner, true)
	ch.batch("Max", c.Max)
	ch.lease("LeaseMS", c.LeaseMS)
	if len(c.Types) > l.MaxBatch && ch.err == nil {
		ch.err = tooLarge(ch.cmd, "Types", len(c.Types), l.MaxBatch)
	}
	ch.names("Types", c.Types)
	ch.name("BuildID", c.BuildID, false)
	if c.TailEvents < 0 || c.TailEvents > MaxTailEvents {
		ch.fail("TailEvents", fmt.Sprintf("is %d, not in [0, %d]", c.TailEvents, MaxTailEvents))
	}
	return ch.err
}

func (c *Heartbeat) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.batch("Leases", len(c.Leases))
	for _, r := range c.Leases {
		ch.ref(r)
	}
	ch.lease("LeaseMS", c.LeaseMS)
	return ch.err
}

func (c *AppendEvents) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.ref(c.LeaseRef)
	switch {
	case len(c.Events) == 0 && len(c.Timers) == 0 && len(c.CancelTimers) == 0:
		ch.fail("Events", "is empty, and no timer is set or cancelled")
	case len(c.Events) > l.MaxEventsPerAppend && ch.err == nil:
		ch.err = tooLarge(ch.cmd, "Events", len(c.Events), l.MaxEventsPerAppend)
	case len(c.Timers)+len(c.CancelTimers) > l.MaxBatch && ch.err == nil:
		ch.err = tooLarge(ch.cmd, "Timers", len(c.Timers)+len(c.CancelTimers), l.MaxBatch)
	}
	ch.events(c.Events)
	for i, t := range c.Timers {
		ch.name(fmt.Sprintf("Timers[%d].ID", i), t.ID, true)
		if t.FireMS <= 0 {
			ch.fail(fmt.Sprintf("Timers[%d].FireMS", i), "must be a positive Unix time in milliseconds")
		}
	}
	for i, id := range c.CancelTimers {
		ch.name(fmt.Sprintf("CancelTimers[%d]", i), id, true)
	}
	return ch.err
}

func (c *CommitStep) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.ref(c.LeaseRef)
	ch.name("Step", c.Step, true)
	ch.name("Name", c.Name, false)
	ch.userEvent("Type", c.Type)
	ch.payload("Payload", c.Payload)
	if c.CatchUp && len(c.Payload) > 0 {
		ch.fail("Payload", "must be empty with CatchUp: the recorded effect supplies it")
	}
	ch.decision(c.Decision)
	ch.name("Reason", c.Reason, false)
	if c.Reason != "" && c.Reason != ReasonNotStarted {
		ch.fail("Reason", fmt.Sprintf("%q is not a reason a step commit records (only %q)", c.Reason, ReasonNotStarted))
	}
	return ch.err
}

func (c *Wait) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.ref(c.LeaseRef)
	s := &c.Spec
	if s.TimerAtMS == 0 && len(s.Timers) == 0 && len(s.Signals) == 0 && !s.AnySignal && len(s.Steps) == 0 {
		ch.fail("Spec", "waits for nothing: give a timer, signals or steps")
	}
	for i, t := range s.Timers {
		ch.name(fmt.Sprintf("Spec.Timers[%d].ID", i), t.ID, true)
		if t.FireMS <= 0 {
			ch.fail(fmt.Sprintf("Spec.Timers[%d].FireMS", i), "must be a positive Unix time in milliseconds")
		}
	}
	if len(c.Events) > l.MaxEventsPerAppend && ch.err == nil {
		ch.err = tooLarge(ch.cmd, "Events", len(c.Events), l.MaxEventsPerAppend)
	}
	ch.events(c.Events)
	if s.TimerAtMS < 0 {
		ch.fail("Spec.TimerAtMS", "is negative")
	}
	ch.name("Spec.TimerID", s.TimerID, s.TimerAtMS > 0)
	if s.TimerAtMS == 0 && s.TimerID != "" {
		ch.fail("Spec.TimerAtMS", "is required with a TimerID")
	}
	if n := len(s.Signals) + len(s.Steps) + len(s.Timers); n > l.MaxBatch && ch.err == nil {
		ch.err = tooLarge(ch.cmd, "Spec", n, l.MaxBatch)
	}
	ch.names("Spec.Signals", s.Signals)
	ch.names("Spec.Steps", s.Steps)
	return ch.err
}

func (c *Signal) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.target(c.Target)
	ch.name("Name", c.Name, true)
	ch.payload("Payload", c.Payload)
	ch.sender(c.Sender)
	return ch.err
}

// sender checks the sender step of a Signal or RequestCancel, when given.
func (ch *checker) sender(s *SenderStep) {
	if s == nil || ch.err != nil {
		return
	}
	if s.Job == 0 || s.Attempt == 0 {
		ch.fail("Sender", "needs the sending run's job and attempt")
		return
	}
	ch.name("Sender.Step", s.Step, true)
}

func (c *FireTimers) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.batch("Max", c.Max)
	return ch.err
}

func (c *Reclaim) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.batch("Max", c.Max)
	return ch.err
}

func (c *ReleaseDelayed) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.batch("Max", c.Max)
	return ch.err
}

func (c *Cancel) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.target(c.Target)
	ch.name("Reason", c.Reason, false)
	return ch.err
}

func (c *Terminate) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.target(c.Target)
	ch.name("Reason", c.Reason, false)
	if p := c.ByParent; ch.err == nil && p != nil && (p.Job == 0 || p.Attempt == 0) {
		ch.fail("ByParent", "needs the parent's job and attempt")
	}
	return ch.err
}

func (c *ExpireDeadlines) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.batch("Max", c.Max)
	return ch.err
}

func (c *Activate) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.target(c.Target)
	return ch.err
}

func (c *Suspend) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.target(c.Target)
	ch.name("Reason", c.Reason, false)
	return ch.err
}

func (c *Resume) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.target(c.Target)
	return ch.err
}

func (c *Complete) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.ref(c.LeaseRef)
	ch.payload("Result", c.Result)
	return ch.err
}

func (c *Fail) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.ref(c.LeaseRef)
	ch.payload("Error", c.Error)
	return ch.err
}

func (c *Requeue) Check(l *Limits) error {
	ch := newChecker(c, l)
	if c.Job == 0 {
		ch.fail("Job", "is required")
	}
	if c.DelayMS < 0 || c.DelayMS > MaxDelayMS {
		ch.fail("DelayMS", fmt.Sprintf("is %d, not in [0, %d] (100 years)", c.DelayMS, MaxDelayMS))
	}
	ch.name("Reason", c.Reason, false)
	return ch.err
}

func (c *RequestCancel) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.target(c.Target)
	ch.name("Reason", c.Reason, false)
	ch.sender(c.Sender)
	return ch.err
}

func (c *ContinueAsNew) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.ref(c.LeaseRef)
	ch.name("Type", c.Type, false)
	ch.payload("Input", c.Input)
	ch.payload("Failure", c.Failure)
	if c.DelayMS < 0 || c.DelayMS > MaxDelayMS {
		ch.fail("DelayMS", fmt.Sprintf("is %d, not in [0, %d]", c.DelayMS, MaxDelayMS))
	}
	return ch.err
}

// Cron workflows, as Temporal's CronSchedule: a workflow id started with a
// cron line runs once per time of the line. The engine keeps the chain
// going so that no worker has to: the first run waits (Retrying) for the
// line's first time after its start, and a run that completes or fails is
// ended, in the same command, as the chain's next run is created, held
// back until the next time after now, with the same input and the last
// completed run's result on its job_created (Event.LastResult). A run that
// its run timeout ends is followed too; the chain's execution timeout, a
// cancel or a terminate end the chain. A retry of a failed
// run (ContinueAsNew with a failure) stays within the chain's time.

// cron checks a cron line.
func (c *checker) cron(field, line string) {
	if c.err != nil || line == "" {
		return
	}
	c.name(field, line, false)
	if err := ParseCron(line); err != nil && c.err == nil {
		c.fail(field, err.Error())
	}
}

// maxNonceBytes and maxLeaseTokenBytes bound what a command may carry in
// Header.Nonce and LeaseRef.Token.
const (
	maxNonceBytes      = 64
	maxLeaseTokenBytes = 64
)
