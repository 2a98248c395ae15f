package engine

import (
	"fmt"
	"slices"
	"testing"
)

// specStepTable is docs/state-machines.md §3's table, written out again here so
// that the engine's table is checked against the document, not itself.
var specStepTable = map[string][]string{
	"PENDING":            {"WAITING_DEPS", "LEASED"},
	"WAITING_DEPS":       {"LEASED"},
	"LEASED":             {"RUNNING", "LEASE_TIMEOUT"},
	"RUNNING":            {"SUCCEEDED", "FAILED_RETRYABLE", "FAILED_RESOURCE", "FAILED_FATAL", "NEEDS_USER"},
	"FAILED_RETRYABLE":   {"RETRYING"},
	"RETRYING":           {"RUNNING"},
	"FAILED_RESOURCE":    {"SWITCHING_RESOURCE"},
	"SWITCHING_RESOURCE": {"LEASED"},
	"LEASE_TIMEOUT":      {"PENDING"},
	"NEEDS_USER":         {"RUNNING"},
	"FAILED_FATAL":       {"FAILED"},
	"SUCCEEDED":          {},
	"FAILED":             {},
}

// specStepExtension is the project's one extension: a waiting step fails
// for good where it is.
var specStepExtension = []string{"PENDING", "WAITING_DEPS", "LEASED", "RETRYING", "SWITCHING_RESOURCE", "NEEDS_USER"}

// Every cell of the 13×13 table: legal exactly when the document's table or
// the documented extension has it.
func TestStepTableEveryCell(t *testing.T) {
	if len(StepStates()) != 13 {
		t.Fatalf("%d step states, the seed has 13", len(StepStates()))
	}
	for _, from := range StepStates() {
		row, ok := specStepTable[from.String()]
		if !ok {
			t.Fatalf("state %s is not in the document's table", from)
		}
		for _, to := range StepStates() {
			want := slices.Contains(row, to.String()) ||
				to == StepFailedFatal && slices.Contains(specStepExtension, from.String())
			if got := StepTransitionLegal(from, to); got != want {
				t.Errorf("%s -> %s: legal %v, want %v", from, to, got, want)
			}
		}
	}
	// The only way in is PENDING.
	for _, to := range StepStates() {
		if got := StepTransitionLegal(StepNone, to); got != (to == StepPending) {
			t.Errorf("(none) -> %s: legal %v", to, got)
		}
	}
	for _, s := range StepStates() {
		if got, err := ParseStepState(s.String()); err != nil || got != s {
			t.Errorf("ParseStepState(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseStepState("NONE"); err == nil {
		t.Error("ParseStepState accepted NONE")
	}
}

var allStepEvents = []EventType{
	EventActivityScheduled, EventActivityAttemptFailed, EventActivityCompleted, EventActivityFailed,
	EventStepWaitingDeps, EventStepLeased, EventStepStarted, EventStepLeaseTimeout,
	EventStepResourceFailed, EventStepNeedsUser, EventStepAnswered,
}

// Every route the projection takes, for every event from every state,
// walks only legal cells; and the cells the routes reach cover the whole
// table, so no transition of the document is unreachable.
func TestStepRoutesWalkLegalCells(t *testing.T) {
	reached := map[[2]StepState]bool{}
	variants := func(t EventType) []Event {
		switch t {
		case EventStepLeaseTimeout:
			return []Event{{Type: t, Reason: ReasonStepLeaseExpired}, {Type: t, Reason: ReasonStepTimeoutFatal}}
		case EventActivityFailed:
			return []Event{{Type: t}, {Type: t, Reason: ReasonNotStarted}}
		}
		return []Event{{Type: t}}
	}
	for _, from := range append([]StepState{StepNone}, StepStates()...) {
		for _, typ := range allStepEvents {
			for _, ev := range variants(typ) {
				route, ok := StepRoute(from, &ev)
				if !ok {
					continue
				}
				if from.Terminal() {
					t.Errorf("%s %s from terminal %s", ev.Type, ev.Reason, from)
				}
				s := from
				for _, to := range route {
					if !StepTransitionLegal(s, to) {
						t.Errorf("%s %s from %s walks %v: %s -> %s is illegal", ev.Type, ev.Reason, from, route, s, to)
					}
					reached[[2]StepState{s, to}] = true
					s = to
				}
			}
		}
	}
	for _, from := range StepStates() {
		for _, to := range StepStates() {
			if slices.Contains(specStepTable[from.String()], to.String()) && !reached[[2]StepState{from, to}] {
				t.Errorf("no event takes a step from %s to %s", from, to)
			}
		}
	}
}

// The routes, cell by cell: where each event leads from each state it may
// follow. A missing row is refused.
func TestStepRoutes(t *testing.T) {
	R := func(s ...StepState) []StepState { return s }
	cases := []struct {
		from StepState
		ev   Event
		want []StepState // nil: refused
	}{
		{StepNone, Event{Type: EventActivityScheduled}, R(StepPending)},
		{StepPending, Event{Type: EventActivityScheduled}, nil},
		{StepNone, Event{Type: EventStepWaitingDeps}, R(StepPending, StepWaitingDeps)},
		{StepPending, Event{Type: EventStepWaitingDeps}, R(StepWaitingDeps)},
		{StepRetrying, Event{Type: EventStepWaitingDeps}, nil},
		{StepNone, Event{Type: EventStepLeased}, R(StepPending, StepLeased)},
		{StepPending, Event{Type: EventStepLeased}, R(StepLeased)},
		{StepWaitingDeps, Event{Type: EventStepLeased}, R(StepLeased)},
		{StepSwitchingResource, Event{Type: EventStepLeased}, R(StepLeased)},
		{StepLeaseTimeout, Event{Type: EventStepLeased}, R(StepPending, StepLeased)},
		{StepRetrying, Event{Type: EventStepLeased}, R(StepRunning)},
		{StepLeased, Event{Type: EventStepLeased}, nil},
		{StepRunning, Event{Type: EventStepLeased}, nil},
		{StepNeedsUser, Event{Type: EventStepLeased}, nil},
		{StepLeased, Event{Type: EventStepStarted}, R(StepRunning)},
		{StepRunning, Event{Type: EventStepStarted}, nil},
		{StepNeedsUser, Event{Type: EventStepStarted}, nil},
		{StepNone, Event{Type: EventActivityAttemptFailed}, R(StepPending, StepLeased, StepRunning, StepFailedRetryable, StepRetrying)},
		{StepRunning, Event{Type: EventActivityAttemptFailed}, R(StepFailedRetryable, StepRetrying)},
		{StepRetrying, Event{Type: EventActivityAttemptFailed}, R(StepRunning, StepFailedRetryable, StepRetrying)},
		{StepNeedsUser, Event{Type: EventActivityAttemptFailed}, nil},
		{StepRunning, Event{Type: EventStepResourceFailed}, R(StepFailedResource, StepSwitchingResource)},
		{StepLeased, Event{Type: EventStepResourceFailed}, R(StepRunning, StepFailedResource, StepSwitchingResource)},
		{StepSwitchingResource, Event{Type: EventStepResourceFailed}, nil},
		{StepRunning, Event{Type: EventStepNeedsUser}, R(StepNeedsUser)},
		{StepNeedsUser, Event{Type: EventStepNeedsUser}, nil},
		{StepNeedsUser, Event{Type: EventStepAnswered}, R(StepRunning)},
		{StepRunning, Event{Type: EventStepAnswered}, nil},
		{StepLeased, Event{Type: EventStepLeaseTimeout}, R(StepLeaseTimeout, StepPending)},
		{StepRunning, Event{Type: EventStepLeaseTimeout, Reason: ReasonStepLeaseExpired}, R(StepFailedRetryable, StepRetrying)},
		{StepRunning, Event{Type: EventStepLeaseTimeout, Reason: ReasonStepTimeoutFatal}, R(StepFailedFatal)},
		{StepPending, Event{Type: EventStepLeaseTimeout}, nil},
		{StepNone, Event{Type: EventActivityCompleted}, R(StepPending, StepLeased, StepRunning, StepSucceeded)},
		{StepPending, Event{Type: EventActivityCompleted}, R(StepLeased, StepRunning, StepSucceeded)},
		{StepRetrying, Event{Type: EventActivityCompleted}, R(StepRunning, StepSucceeded)},
		{StepNeedsUser, Event{Type: EventActivityCompleted}, nil},
		{StepSucceeded, Event{Type: EventActivityCompleted}, nil},
		{StepNone, Event{Type: EventActivityFailed}, R(StepPending, StepLeased, StepRunning, StepFailedFatal, StepFailed)},
		{StepRunning, Event{Type: EventActivityFailed}, R(StepFailedFatal, StepFailed)},
		{StepFailedFatal, Event{Type: EventActivityFailed}, R(StepFailed)},
		{StepWaitingDeps, Event{Type: EventActivityFailed}, R(StepFailedFatal, StepFailed)},
		{StepSwitchingResource, Event{Type: EventActivityFailed}, R(StepFailedFatal, StepFailed)},
		{StepNeedsUser, Event{Type: EventActivityFailed}, R(StepFailedFatal, StepFailed)},
		{StepNone, Event{Type: EventActivityFailed, Reason: ReasonNotStarted}, R(StepPending, StepFailedFatal, StepFailed)},
		{StepRetrying, Event{Type: EventActivityFailed, Reason: ReasonNotStarted}, R(StepFailedFatal, StepFailed)},
		{StepLeased, Event{Type: EventActivityFailed, Reason: ReasonNotStarted}, R(StepFailedFatal, StepFailed)},
		{StepFailed, Event{Type: EventActivityFailed}, nil},
	}
	for _, c := range cases {
		got, ok := StepRoute(c.from, &c.ev)
		name := fmt.Sprintf("%s %s %s", c.from, c.ev.Type, c.ev.Reason)
		switch {
		case c.want == nil && ok:
			t.Errorf("%s: routed %v, want refused", name, got)
		case c.want != nil && !ok:
			t.Errorf("%s: refused, want %v", name, c.want)
		case c.want != nil && !slices.Equal(got, c.want):
			t.Errorf("%s: route %v, want %v", name, got, c.want)
		}
	}
}

// The projection of whole step histories, as the worker and the engine
// write them.
func TestDeriveStepState(t *testing.T) {
	ev := func(typ EventType, attempt uint32, f ...func(*Event)) Event {
		e := Event{Type: typ, StepAttempt: attempt}
		for _, fn := range f {
			fn(&e)
		}
		return e
	}
	res := func(id string) func(*Event) { return func(e *Event) { e.Resource = id } }
	cases := []struct {
		name     string
		evs      []Event
		state    StepState
		attempt  uint32
		resource string
		avoid    []string
	}{
		{"nothing", nil, StepNone, 0, "", nil},
		{"straight path", []Event{ev(EventActivityCompleted, 1)}, StepSucceeded, 1, "", nil},
		{"legacy retries carry no attempt", []Event{ev(EventActivityAttemptFailed, 0), ev(EventActivityAttemptFailed, 0)}, StepRetrying, 3, "", nil},
		{"leased on a resource", []Event{ev(EventStepLeased, 1, res("b1"))}, StepLeased, 1, "b1", nil},
		{"started", []Event{ev(EventStepLeased, 1, res("b1")), ev(EventStepStarted, 1)}, StepRunning, 1, "b1", nil},
		{"switched", []Event{ev(EventStepLeased, 1, res("b1")), ev(EventStepResourceFailed, 1, res("b1")), ev(EventStepLeased, 2, res("b2"))},
			StepLeased, 2, "b2", []string{"b1"}},
		{"switching with nothing left", []Event{ev(EventStepLeased, 1, res("b1")), ev(EventStepResourceFailed, 1, res("b1")),
			ev(EventActivityFailed, 0, func(e *Event) { e.Reason = ReasonNotStarted })}, StepFailed, 1, "", []string{"b1"}},
		{"needs a person keeps the unit", []Event{ev(EventStepLeased, 1, res("b1")), ev(EventStepNeedsUser, 1)}, StepNeedsUser, 1, "b1", nil},
		{"answered", []Event{ev(EventStepLeased, 1, res("b1")), ev(EventStepNeedsUser, 1), ev(EventStepAnswered, 2)}, StepRunning, 2, "b1", nil},
		{"lease timeout", []Event{ev(EventStepLeased, 1, res("b1")), ev(EventStepLeaseTimeout, 1)}, StepPending, 1, "", nil},
		{"retry releases", []Event{ev(EventStepLeased, 1, res("b1")), ev(EventActivityAttemptFailed, 1)}, StepRetrying, 1, "", nil},
		{"retry re-leases", []Event{ev(EventStepLeased, 1, res("b1")), ev(EventActivityAttemptFailed, 1), ev(EventStepLeased, 2, res("b2"))},
			StepRunning, 2, "b2", nil},
		{"waiting for deps", []Event{ev(EventStepWaitingDeps, 0)}, StepWaitingDeps, 0, "", nil},
	}
	for _, c := range cases {
		p := DeriveStepState(c.evs)
		if p.State != c.state || p.Resource != c.resource || !slices.Equal(p.Avoid, c.avoid) {
			t.Errorf("%s: %s on %q avoiding %v, want %s on %q avoiding %v", c.name, p.State, p.Resource, p.Avoid, c.state, c.resource, c.avoid)
		}
		if c.state != StepNone && c.attempt != 0 && p.Attempt != c.attempt {
			t.Errorf("%s: attempt %d, want %d", c.name, p.Attempt, c.attempt)
		}
		for i := range c.evs {
			c.evs[i].Seq = uint64(i + 1)
		}
		if err := CheckStepHistory("1", c.evs); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

func TestCheckStepHistoryRefuses(t *testing.T) {
	cases := []struct {
		name      string
		evs       []Event
		invariant int
	}{
		{"after the end", []Event{{Seq: 1, Type: EventActivityCompleted}, {Seq: 2, Type: EventActivityAttemptFailed}}, 5},
		{"answer without a question", []Event{{Seq: 1, Type: EventStepLeased, StepAttempt: 1}, {Seq: 2, Type: EventStepAnswered, StepAttempt: 2}}, 5},
		{"completed while asking", []Event{{Seq: 1, Type: EventStepLeased, StepAttempt: 1}, {Seq: 2, Type: EventStepNeedsUser, StepAttempt: 1},
			{Seq: 3, Type: EventActivityCompleted, StepAttempt: 2}}, 5},
		{"a lease of an old try", []Event{{Seq: 1, Type: EventStepLeased, StepAttempt: 2}, {Seq: 2, Type: EventStepLeaseTimeout, StepAttempt: 2},
			{Seq: 3, Type: EventStepLeased, StepAttempt: 2}}, 6},
		{"tries going back", []Event{{Seq: 1, Type: EventActivityAttemptFailed, StepAttempt: 3}, {Seq: 2, Type: EventActivityCompleted, StepAttempt: 2}}, 6},
	}
	for _, c := range cases {
		err := CheckStepHistory("1", c.evs)
		ie, ok := err.(*InvariantError)
		if !ok || ie.Invariant != c.invariant {
			t.Errorf("%s: %v, want invariant %d", c.name, err, c.invariant)
		}
	}
}

// decide_next_state, decision by decision, at and beyond the retry bound.
func TestDecideNextState(t *testing.T) {
	cases := []struct {
		d             CriticDecision
		retries, maxR int
		want          StepState
	}{
		{DecisionAccept, 0, 3, StepSucceeded},
		{DecisionRetry, 0, 3, StepFailedRetryable},
		{DecisionRetry, 2, 3, StepFailedRetryable},
		{DecisionRetry, 3, 3, StepFailedFatal},
		{DecisionRetry, 4, 3, StepFailedFatal},
		{DecisionSwitchResource, 9, 3, StepFailedResource},
		{DecisionReplan, 0, 3, StepFailedFatal},
		{DecisionNeedsUser, 0, 3, StepNeedsUser},
		{"shrug", 0, 3, StepFailedFatal},
		{"", 0, 3, StepFailedFatal},
	}
	for _, c := range cases {
		if got := DecideNextState(c.d, c.retries, c.maxR); got != c.want {
			t.Errorf("DecideNextState(%q, %d, %d) = %s, want %s", c.d, c.retries, c.maxR, got, c.want)
		}
	}
}
