package engine

import (
	"fmt"
	"slices"
)

// LeaseStep gives a step of a running job (fenced) an explicit step lease
// for its next try, in one linearized command:
//
//   - when a step it depends on has not succeeded yet, the step waits
//     (WAITING_DEPS, step_waiting_deps) and is leased by the commit of the
//     last of them; when one failed, the command fails with
//     ErrDependencyFailed and the worker fails the step;
//   - when it needs a resource (Capabilities, Selector), it takes a unit
//     of a matching resource that is not drained and not on its
//     avoid-list, the one with the most free units; when none is free it
//     joins the waiter queue and is leased, first come first served, when
//     a unit frees; when no resource could ever serve it, the command
//     fails with a *NoResourceError and the worker fails the step;
//   - otherwise it is leased at once (step_leased, LEASED).
//
// A step leased by an older attempt of the job is taken over (its lease
// times out first, step_lease_timeout); one the engine granted on its own
// (a freed unit, dependencies done, a person's answer) is adopted without
// an event; one this attempt holds already is returned as it is. A step
// that waits for a person (NEEDS_USER) or whose lease ran out for good
// (FAILED_FATAL) is not leased: the answer's State says so.
type LeaseStep struct {
	Header
	LeaseRef
	Step string `json:"step" msgpack:"st"`
	// Name is the activity type, the Name of the step's events.
	Name string `json:"name" msgpack:"n"`
	// LeaseMS is the step lease's length; the worker renews it with
	// StepHeartbeat. The scheduler ends a lease that runs out
	// (ExpireSteps).
	LeaseMS      int64             `json:"lease_ms" msgpack:"ls"`
	Capabilities []string          `json:"capabilities,omitempty" msgpack:"cp,omitempty"`
	Selector     map[string]string `json:"selector,omitempty" msgpack:"sl,omitempty"`
	DependsOn    []string          `json:"depends_on,omitempty" msgpack:"dp,omitempty"`
	// TimeoutFatal makes a running step whose lease runs out FAILED_FATAL
	// rather than FAILED_RETRYABLE.
	TimeoutFatal bool `json:"timeout_fatal,omitempty" msgpack:"tf,omitempty"`
	// Start: the worker runs the try as soon as it holds the lease, so a
	// granted step that is LEASED starts (step_started, RUNNING) in the
	// same command rather than at its first heartbeat: a try that takes a
	// step lease costs one write before its result, not two.
	Start bool `json:"start,omitempty" msgpack:"sr,omitempty"`
}

// StepHeartbeat reports that try StepAttempt of a step still runs (fenced),
// and renews the job's lease to Now+LeaseMS in the same command, so an
// activity's heartbeat stays one write. A leased step's first heartbeat
// starts it (step_started, RUNNING) and each renews its step lease by the
// step's lease length. A step without a step record (one the job's lease
// covers) has the heartbeat noted on the job record, for describe. A try
// that is not the step's newest, or a step not running, is refused with
// ErrStaleAttempt (a *StaleStepError).
type StepHeartbeat struct {
	Header
	LeaseRef
	Step        string `json:"step" msgpack:"st"`
	StepAttempt uint32 `json:"step_attempt" msgpack:"sa"`
	LeaseMS     int64  `json:"lease_ms" msgpack:"ls"`
}

// StepOutcome is how a try that did not end its step ended.
type StepOutcome string

// The outcomes EndStepAttempt records.
const (
	// OutcomeRetry: the try failed and will be retried
	// (activity_attempt_failed: FAILED_RETRYABLE, then RETRYING).
	OutcomeRetry StepOutcome = "retry"
	// OutcomeSwitchResource: the try's resource failed
	// (step_resource_failed: FAILED_RESOURCE, then SWITCHING_RESOURCE);
	// the resource joins the step's avoid-list.
	OutcomeSwitchResource StepOutcome = "switch_resource"
	// OutcomeNeedsUser: the try needs a person (step_needs_user:
	// NEEDS_USER); the payload is the question.
	OutcomeNeedsUser StepOutcome = "needs_user"
)

// EndStepAttempt ends try StepAttempt of a step without ending the step
// (fenced): the try will be retried, its resource failed, or it needs a
// person. The step's resource unit is released (and given to the first
// waiter it serves) unless the step needs a person: a person answers for
// the resource the question came from, so the unit stays with the step.
// A step without a step record gets one (it was running under the job's
// lease).
type EndStepAttempt struct {
	Header
	LeaseRef
	Step        string      `json:"step" msgpack:"st"`
	Name        string      `json:"name" msgpack:"n"`
	StepAttempt uint32      `json:"step_attempt" msgpack:"sa"`
	Outcome     StepOutcome `json:"outcome" msgpack:"oc"`
	// Payload is the event's: the failed try's record, or the question.
	Payload  []byte         `json:"payload,omitempty" msgpack:"p,omitempty"`
	Decision CriticDecision `json:"decision,omitempty" msgpack:"dc,omitempty"`
	// AnswerTimeoutMS bounds the wait for a person (0: no bound); when it
	// passes, the step is answered with ReasonAnswerTimeout and no answer.
	AnswerTimeoutMS int64 `json:"answer_timeout_ms,omitempty" msgpack:"at,omitempty"`
	// LeaseMS is the step lease a person's answer grants; 0 means the
	// step's own lease length (or a minute, for a step without a record).
	LeaseMS int64 `json:"lease_ms,omitempty" msgpack:"ls,omitempty"`
}

// AnswerStep answers a step that needs a person (NEEDS_USER): step_answered
// with the answer as its payload moves it to RUNNING under a new try, with
// a step lease the job's next attempt adopts, and wakes the job. A step
// that does not need a person is refused with ErrStepState.
type AnswerStep struct {
	Header
	Target
	Step   string `json:"step" msgpack:"st"`
	Answer []byte `json:"answer,omitempty" msgpack:"an,omitempty"`
}

// ExpireSteps ends up to Max step leases that ran out by Now and answers
// the steps whose person did not answer in time (the scheduler proposes
// it): a leased step that never ran times out to PENDING (LEASE_TIMEOUT),
// a running one fails its try (FAILED_RETRYABLE, or FAILED_FATAL when its
// options say so); either releases its unit.
type ExpireSteps struct {
	Header
	Max int `json:"max" msgpack:"mx"`
}

// AddResource registers a resource with Capacity units (at least 1). An id
// in use is refused with ErrResourceExists. Steps waiting for what it
// offers are leased its units at once, first come first served.
type AddResource struct {
	Header
	ID           string            `json:"id" msgpack:"id"`
	Capabilities []string          `json:"capabilities,omitempty" msgpack:"cp,omitempty"`
	Labels       map[string]string `json:"labels,omitempty" msgpack:"lb,omitempty"`
	Capacity     int               `json:"capacity" msgpack:"c"`
}

// DrainResource stops a resource from taking new leases (the ones it holds
// finish), or with Undrain lets it take them again.
type DrainResource struct {
	Header
	ID      string `json:"id" msgpack:"id"`
	Undrain bool   `json:"undrain,omitempty" msgpack:"ud,omitempty"`
}

// RemoveResource deletes a resource that holds no lease; one that does is
// refused with ErrResourceBusy (drain it, and remove it once its leases
// ended).
type RemoveResource struct {
	Header
	ID string `json:"id" msgpack:"id"`
}

func (*LeaseStep) Kind() CommandKind      { return KindLeaseStep }
func (*StepHeartbeat) Kind() CommandKind  { return KindStepHeartbeat }
func (*EndStepAttempt) Kind() CommandKind { return KindEndStepAttempt }
func (*AnswerStep) Kind() CommandKind     { return KindAnswerStep }
func (*ExpireSteps) Kind() CommandKind    { return KindExpireSteps }
func (*AddResource) Kind() CommandKind    { return KindAddResource }
func (*DrainResource) Kind() CommandKind  { return KindDrainResource }
func (*RemoveResource) Kind() CommandKind { return KindRemoveResource }

// maxResourceCapacity bounds a resource's units.
const maxResourceCapacity = 1_000_000

// requirements checks what a step asks of a resource.
func (c *checker) requirements(caps []string, selector map[string]string) {
	if n := len(caps) + len(selector); n > c.lim.MaxBatch && c.err == nil {
		c.err = tooLarge(c.cmd, "Capabilities", n, c.lim.MaxBatch)
	}
	c.names("Capabilities", caps)
	for _, k := range sortedKeys(selector) {
		c.name("Selector key", k, true)
		c.name(fmt.Sprintf("Selector[%q]", k), selector[k], false)
	}
}

func (c *checker) stepAttempt(n uint32) {
	if c.err == nil && n == 0 {
		c.fail("StepAttempt", "is required: tries are numbered from 1")
	}
}

func (c *LeaseStep) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.ref(c.LeaseRef)
	ch.name("Step", c.Step, true)
	ch.name("Name", c.Name, true)
	ch.lease("LeaseMS", c.LeaseMS)
	ch.requirements(c.Capabilities, c.Selector)
	if len(c.DependsOn) > l.MaxBatch && ch.err == nil {
		ch.err = tooLarge(ch.cmd, "DependsOn", len(c.DependsOn), l.MaxBatch)
	}
	ch.names("DependsOn", c.DependsOn)
	if slices.Contains(c.DependsOn, c.Step) {
		ch.fail("DependsOn", fmt.Sprintf("names the step %q itself", c.Step))
	}
	return ch.err
}

func (c *StepHeartbeat) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.ref(c.LeaseRef)
	ch.name("Step", c.Step, true)
	ch.stepAttempt(c.StepAttempt)
	ch.lease("LeaseMS", c.LeaseMS)
	return ch.err
}

func (c *EndStepAttempt) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.ref(c.LeaseRef)
	ch.name("Step", c.Step, true)
	ch.name("Name", c.Name, true)
	ch.stepAttempt(c.StepAttempt)
	switch c.Outcome {
	case OutcomeRetry, OutcomeSwitchResource, OutcomeNeedsUser:
	default:
		ch.fail("Outcome", fmt.Sprintf("%q is not retry, switch_resource or needs_user", c.Outcome))
	}
	ch.payload("Payload", c.Payload)
	ch.decision(c.Decision)
	ch.duration("AnswerTimeoutMS", c.AnswerTimeoutMS)
	if c.AnswerTimeoutMS != 0 && c.Outcome != OutcomeNeedsUser {
		ch.fail("AnswerTimeoutMS", "is only for the needs_user outcome")
	}
	if c.LeaseMS != 0 {
		ch.lease("LeaseMS", c.LeaseMS)
	}
	return ch.err
}

func (c *checker) decision(d CriticDecision) {
	if c.err != nil || d == "" {
		return
	}
	for _, x := range Decisions() {
		if x == d {
			return
		}
	}
	c.fail("Decision", fmt.Sprintf("%q is not a critic decision (accept, retry, switch_resource, replan, needs_user)", d))
}

func (c *AnswerStep) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.target(c.Target)
	ch.name("Step", c.Step, true)
	ch.payload("Answer", c.Answer)
	return ch.err
}

func (c *ExpireSteps) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.batch("Max", c.Max)
	return ch.err
}

func (c *AddResource) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.name("ID", c.ID, true)
	ch.requirements(c.Capabilities, nil)
	if len(c.Labels) > l.MaxBatch && ch.err == nil {
		ch.err = tooLarge(ch.cmd, "Labels", len(c.Labels), l.MaxBatch)
	}
	for _, k := range sortedKeys(c.Labels) {
		ch.name("Labels key", k, true)
		ch.name(fmt.Sprintf("Labels[%q]", k), c.Labels[k], false)
	}
	if c.Capacity < 1 || c.Capacity > maxResourceCapacity {
		ch.fail("Capacity", fmt.Sprintf("is %d, not in [1, %d]", c.Capacity, maxResourceCapacity))
	}
	return ch.err
}

func (c *DrainResource) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.name("ID", c.ID, true)
	return ch.err
}

func (c *RemoveResource) Check(l *Limits) error {
	ch := newChecker(c, l)
	ch.name("ID", c.ID, true)
	return ch.err
}
