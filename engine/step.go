package engine

import (
	"fmt"
	"slices"
)

// StepState is the state of one step (one activity execution), the 13 of
// docs/state-machines.md §3. Like a job's status it is a projection of history
// events (DeriveStepState); a step that took an explicit step lease, a
// resource or a person also has a stored record kept equal to it.
type StepState uint8

// Step states. The numbers are stored on disk (step records) and must never
// be reused.
const (
	StepNone              StepState = 0 // nothing recorded of the step
	StepPending           StepState = 1
	StepWaitingDeps       StepState = 2
	StepLeased            StepState = 3
	StepRunning           StepState = 4
	StepSucceeded         StepState = 5
	StepFailedRetryable   StepState = 6
	StepRetrying          StepState = 7
	StepFailedResource    StepState = 8
	StepSwitchingResource StepState = 9
	StepFailedFatal       StepState = 10
	StepFailed            StepState = 11
	StepNeedsUser         StepState = 12
	StepLeaseTimeout      StepState = 13
	// NumStepStates is one more than the largest step state: the length
	// of an array indexed by StepState.
	NumStepStates = 14
)

var stepStateNames = [NumStepStates]string{
	"NONE", "PENDING", "WAITING_DEPS", "LEASED", "RUNNING", "SUCCEEDED", "FAILED_RETRYABLE",
	"RETRYING", "FAILED_RESOURCE", "SWITCHING_RESOURCE", "FAILED_FATAL", "FAILED", "NEEDS_USER", "LEASE_TIMEOUT",
}

func (s StepState) String() string {
	if int(s) < len(stepStateNames) {
		return stepStateNames[s]
	}
	return fmt.Sprintf("StepState(%d)", uint8(s))
}

// ParseStepState returns the state String names ("RUNNING").
func ParseStepState(name string) (StepState, error) {
	for i, n := range stepStateNames {
		if n == name && i != 0 {
			return StepState(i), nil
		}
	}
	return StepNone, fmt.Errorf("%w: unknown step state %q", ErrInvalidCommand, name)
}

// StepStates lists the 13 states, in numeric order.
func StepStates() []StepState {
	out := make([]StepState, 0, NumStepStates-1)
	for s := StepState(1); s < NumStepStates; s++ {
		out = append(out, s)
	}
	return out
}

// Terminal reports whether s ends the step: SUCCEEDED or FAILED.
func (s StepState) Terminal() bool { return s == StepSucceeded || s == StepFailed }

// stepTable is the step transition table of docs/state-machines.md §3, the
// seed's exactly. A missing cell is an illegal transition.
var stepTable = map[StepState][]StepState{
	StepNone:              {StepPending},
	StepPending:           {StepWaitingDeps, StepLeased},
	StepWaitingDeps:       {StepLeased},
	StepLeased:            {StepRunning, StepLeaseTimeout},
	StepRunning:           {StepSucceeded, StepFailedRetryable, StepFailedResource, StepFailedFatal, StepNeedsUser},
	StepFailedRetryable:   {StepRetrying},
	StepRetrying:          {StepRunning},
	StepFailedResource:    {StepSwitchingResource},
	StepSwitchingResource: {StepLeased},
	StepLeaseTimeout:      {StepPending},
	StepNeedsUser:         {StepRunning},
	StepFailedFatal:       {StepFailed},
	StepSucceeded:         {},
	StepFailed:            {},
}

// StepTransitionLegal reports whether a step may move from one state to
// another: a cell of the seed's table, or the project's one extension — a
// step that waits (PENDING, WAITING_DEPS, LEASED, RETRYING,
// SWITCHING_RESOURCE, NEEDS_USER) may fail for good where it is
// (FAILED_FATAL), because the workflow cancelled it, a dependency failed,
// no resource is left to switch to, or its schedule-to-close time passed.
// The seed's table has no way out of those states but forward, as the job
// table had none for cancelling a queued job.
func StepTransitionLegal(from, to StepState) bool {
	for _, s := range stepTable[from] {
		if s == to {
			return true
		}
	}
	return to == StepFailedFatal && from.Waits()
}

// HoldsLease reports whether a step in state s is in a try that holds its
// step lease (LEASED, RUNNING).
func (s StepState) HoldsLease() bool { return s == StepLeased || s == StepRunning }

// Waits reports whether a step in state s waits for something other than
// its own run: a resource, a dependency, a retry delay, a person.
func (s StepState) Waits() bool {
	switch s {
	case StepPending, StepWaitingDeps, StepLeased, StepRetrying, StepSwitchingResource, StepNeedsUser:
		return true
	}
	return false
}

// Reasons recorded on step events.
const (
	// ReasonStepLeaseExpired: a step_lease_timeout of a lease that ran out.
	ReasonStepLeaseExpired = "step_lease_expired"
	// ReasonStepTimeoutFatal: a running step's lease ran out and its
	// options make a timeout fatal (FAILED_FATAL instead of a retry).
	ReasonStepTimeoutFatal = "step_timeout_fatal"
	// ReasonStepTakenOver: a newer attempt of the job took the step over
	// from the attempt that leased it.
	ReasonStepTakenOver = "taken_over"
	// ReasonAnswerTimeout: a step_answered written because nobody answered
	// in time.
	ReasonAnswerTimeout = "answer_timeout"
	// ReasonNotStarted marks an activity_failed of a step that failed
	// where it waited (cancelled before it ran, a failed dependency, no
	// resource left): the projection takes the table's extension to
	// FAILED_FATAL instead of passing through RUNNING.
	ReasonNotStarted = "not_started"
)

// stepEventSet lists the events of a step's projection.
var stepEventSet = map[EventType]bool{
	EventActivityScheduled: true, EventActivityAttemptFailed: true, EventActivityCompleted: true, EventActivityFailed: true,
	EventStepWaitingDeps: true, EventStepLeased: true, EventStepStarted: true, EventStepLeaseTimeout: true,
	EventStepResourceFailed: true, EventStepNeedsUser: true, EventStepAnswered: true,
	EventActivityPaused: true, EventActivityUnpaused: true, EventActivityReset: true, EventActivityOptionsUpdated: true,
}

// IsStepEvent reports whether t is an event of a step's projection.
func IsStepEvent(t EventType) bool { return stepEventSet[t] }

// IsEngineStepEvent reports whether t is a step event only the engine
// writes (step_*); the activity_* ones the SDK writes.
func IsEngineStepEvent(t EventType) bool {
	switch t {
	case EventStepWaitingDeps, EventStepLeased, EventStepStarted, EventStepLeaseTimeout,
		EventStepResourceFailed, EventStepNeedsUser, EventStepAnswered,
		EventActivityPaused, EventActivityUnpaused, EventActivityReset, EventActivityOptionsUpdated:
		return true
	}
	return false
}

// toRunning is the way a step gets to RUNNING from each state when an event
// tells that its try ran (a failed try, a result): the states it passes
// through. An implicit step (one the job's lease covers, with no step
// record) records nothing until its try ends, so its first event walks
// PENDING, LEASED and RUNNING at once.
var toRunning = map[StepState][]StepState{
	StepNone:     {StepPending, StepLeased, StepRunning},
	StepPending:  {StepLeased, StepRunning},
	StepLeased:   {StepRunning},
	StepRunning:  {},
	StepRetrying: {StepRunning},
}

// StepRoute returns the states a step in from passes through when ev is
// appended, the last being its new state, and whether ev may follow from
// at all. It is the projection's table: every pair it walks is legal
// (StepTransitionLegal), which the tests check cell by cell.
func StepRoute(from StepState, ev *Event) ([]StepState, bool) {
	ran := func(then ...StepState) ([]StepState, bool) {
		p, ok := toRunning[from]
		if !ok {
			return nil, false
		}
		return append(append([]StepState(nil), p...), then...), true
	}
	if IsActivityControlEvent(ev.Type) {
		// An operator's command on the activity changes no state; on a
		// step nothing was recorded of yet, it records the step as issued.
		switch {
		case from == StepNone:
			return []StepState{StepPending}, true
		case from.Terminal():
			return nil, false
		}
		return []StepState{}, true
	}
	switch ev.Type {
	case EventActivityScheduled:
		if from == StepNone {
			return []StepState{StepPending}, true
		}
	case EventStepWaitingDeps:
		switch from {
		case StepNone:
			return []StepState{StepPending, StepWaitingDeps}, true
		case StepPending:
			return []StepState{StepWaitingDeps}, true
		}
	case EventStepLeased:
		switch from {
		case StepNone, StepLeaseTimeout:
			return []StepState{StepPending, StepLeased}, true
		case StepPending, StepWaitingDeps, StepSwitchingResource:
			return []StepState{StepLeased}, true
		case StepRetrying:
			// A retry takes its lease again: the retry's start (RETRYING
			// goes to RUNNING only).
			return []StepState{StepRunning}, true
		}
	case EventStepStarted:
		if from != StepRunning {
			return ran()
		}
	case EventActivityAttemptFailed:
		return ran(StepFailedRetryable, StepRetrying)
	case EventStepResourceFailed:
		return ran(StepFailedResource, StepSwitchingResource)
	case EventStepNeedsUser:
		return ran(StepNeedsUser)
	case EventStepAnswered:
		if from == StepNeedsUser {
			return []StepState{StepRunning}, true
		}
	case EventStepLeaseTimeout:
		switch {
		case from == StepLeased:
			return []StepState{StepLeaseTimeout, StepPending}, true
		case from == StepRunning && ev.Reason == ReasonStepTimeoutFatal:
			return []StepState{StepFailedFatal}, true
		case from == StepRunning:
			return []StepState{StepFailedRetryable, StepRetrying}, true
		}
	case EventActivityCompleted:
		return ran(StepSucceeded)
	case EventActivityFailed:
		switch {
		case from == StepFailedFatal:
			return []StepState{StepFailed}, true
		case from.Terminal():
			return nil, false
		case ev.Reason == ReasonNotStarted && from == StepNone:
			return []StepState{StepPending, StepFailedFatal, StepFailed}, true
		case ev.Reason == ReasonNotStarted && from.Waits():
			return []StepState{StepFailedFatal, StepFailed}, true
		case from == StepWaitingDeps || from == StepSwitchingResource || from == StepNeedsUser:
			return []StepState{StepFailedFatal, StepFailed}, true
		}
		return ran(StepFailedFatal, StepFailed)
	}
	return nil, false
}

// StepProjection is what a step's history events say of it.
type StepProjection struct {
	State StepState
	// Attempt is the newest try: the largest StepAttempt the events carry,
	// or for events written before steps carried one, one more than the
	// failed tries (0 while no try ran).
	Attempt uint32
	// Resource is the resource the step holds a unit of now ("" when none).
	Resource string
	// Avoid lists the resources that failed the step, in order.
	Avoid []string
	// Path lists every state the step passed through, from the first.
	Path []StepState
	// Pause, AttemptBase and Options are what the operator's activity
	// commands left (the activity_* control events): see StepRecord.
	Pause       *PauseInfo
	AttemptBase uint32
	Options     *ActivityOptions
}

// DeriveStepState projects the history events of one step (in seq order;
// events of other types or steps are skipped) to its state. An event that
// may not follow the state reached still decides, as for job statuses, so
// the projection is total; CheckStepHistory judges legality.
func DeriveStepState(events []Event) StepProjection {
	var p StepProjection
	var failed uint32
	ran := false
	for i := range events {
		ev := &events[i]
		if !IsStepEvent(ev.Type) {
			continue
		}
		route, ok := StepRoute(p.State, ev)
		if !ok {
			route = lenientStepRoute(ev)
		}
		p.Path = append(p.Path, route...)
		if len(route) > 0 {
			p.State = route[len(route)-1]
		}
		if ev.StepAttempt > p.Attempt {
			p.Attempt = ev.StepAttempt
		}
		p.activityControl(ev)
		switch {
		case ev.Type == EventActivityAttemptFailed:
			failed++
			ran = true
		case ev.Type == EventActivityCompleted, ev.Type == EventActivityFailed && ev.Reason != ReasonNotStarted:
			ran = true
		}
		switch ev.Type {
		case EventStepLeased:
			p.Resource = ev.Resource
		case EventStepResourceFailed:
			if ev.Resource != "" && !slices.Contains(p.Avoid, ev.Resource) {
				p.Avoid = append(p.Avoid, ev.Resource)
			}
			p.Resource = ""
		case EventStepLeaseTimeout, EventActivityAttemptFailed, EventActivityCompleted, EventActivityFailed:
			p.Resource = ""
		}
	}
	if p.Attempt == 0 && ran {
		// Written before events carried their try: count the failed ones.
		p.Attempt = failed + 1
	}
	return p
}

// lenientStepRoute is where ev leads from any state, used only to keep
// DeriveStepState total on histories CheckStepHistory rejects.
func lenientStepRoute(ev *Event) []StepState {
	for _, from := range append([]StepState{StepNone}, StepStates()...) {
		if r, ok := StepRoute(from, ev); ok && len(r) > 0 {
			return r[len(r)-1:]
		}
	}
	return nil
}

// CheckStepHistory checks the events of one step against the step state
// machine: every event may follow the state reached (StepRoute), every
// state it passes through is a legal transition, nothing follows a
// terminal state, and step attempts never go back (a step_leased or a
// step_answered starts a newer try than any before).
func CheckStepHistory(step string, events []Event) error {
	s := StepNone
	var attempt uint32
	for i := range events {
		ev := &events[i]
		if !IsStepEvent(ev.Type) {
			continue
		}
		if s.Terminal() {
			return &InvariantError{5, ev.Seq, fmt.Sprintf("step %q: %s after the step ended %s", step, ev.Type, s)}
		}
		route, ok := StepRoute(s, ev)
		if !ok {
			return &InvariantError{5, ev.Seq, fmt.Sprintf("step %q: %s may not follow %s", step, ev.Type, s)}
		}
		for _, to := range route {
			if !StepTransitionLegal(s, to) {
				return &InvariantError{5, ev.Seq, fmt.Sprintf("step %q: %s moves %s to %s, not a legal transition", step, ev.Type, s, to)}
			}
			s = to
		}
		if ev.StepAttempt != 0 {
			newTry := ev.Type == EventStepLeased || ev.Type == EventStepAnswered
			if ev.StepAttempt < attempt || newTry && ev.StepAttempt == attempt {
				return &InvariantError{6, ev.Seq, fmt.Sprintf("step %q: %s of attempt %d after attempt %d", step, ev.Type, ev.StepAttempt, attempt)}
			}
			attempt = ev.StepAttempt
		}
	}
	return nil
}

// CriticDecision is what a critic decides after a step's run (docs/state-machines.md §3).
type CriticDecision string

// The critic's decisions.
const (
	DecisionAccept         CriticDecision = "accept"
	DecisionRetry          CriticDecision = "retry"
	DecisionSwitchResource CriticDecision = "switch_resource"
	DecisionReplan         CriticDecision = "replan"
	DecisionNeedsUser      CriticDecision = "needs_user"
)

// Decisions lists the critic's decisions.
func Decisions() []CriticDecision {
	return []CriticDecision{DecisionAccept, DecisionRetry, DecisionSwitchResource, DecisionReplan, DecisionNeedsUser}
}

// DecideNextState is the seed's decide_next_state: the state a critic's
// decision leads a step to, given the retries it had (currentRetries) and
// the most it may have (maxRetries). Retry beyond the bound, replan (the
// workflow plans anew) and any unknown decision fail the step for good.
func DecideNextState(d CriticDecision, currentRetries, maxRetries int) StepState {
	switch d {
	case DecisionAccept:
		return StepSucceeded
	case DecisionRetry:
		if currentRetries < maxRetries {
			return StepFailedRetryable
		}
		return StepFailedFatal
	case DecisionSwitchResource:
		return StepFailedResource
	case DecisionReplan:
		return StepFailedFatal
	case DecisionNeedsUser:
		return StepNeedsUser
	}
	return StepFailedFatal
}
