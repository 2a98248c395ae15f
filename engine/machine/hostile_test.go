package engine

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// engineOwned lists the event types only the engine writes: the ones it
// appends itself for signals, timers, steps, cancel requests and effects,
// and every status event.
func engineOwned() []EventType {
	return append([]EventType{EventSignalReceived, EventStepCommitted, EventTimerFired, EventCancelRequested,
		EventEffectRecorded}, StatusEvents()...)
}

// A worker holding a lease cannot write an event the engine owns, in any of
// the three places a worker names an event type: a forged cancel_requested
// would wake the job's next Wait, a forged signal_received would hand the
// workflow a signal nobody sent.
func TestWorkersCannotWriteEngineOwnedEvents(t *testing.T) {
	h := newHarness(t)
	ref := drive(h, StatusRunning, "wf")
	for _, typ := range engineOwned() {
		cmds := map[string]Command{
			"AppendEvents": &AppendEvents{LeaseRef: ref, Events: []NewEvent{{Type: "marker"}, {Type: typ, Name: "s"}}},
			"Wait.Events":  &Wait{LeaseRef: ref, Spec: WaitSpec{Signals: []string{"s"}}, Events: []NewEvent{{Type: typ, Name: "s"}}},
			"CommitStep":   &CommitStep{LeaseRef: ref, Step: "st-" + string(typ), Type: typ},
		}
		for where, cmd := range cmds {
			t.Run(where+"/"+string(typ), func(t *testing.T) {
				before := h.snapshot()
				_, err := h.apply(cmd)
				if !errors.Is(err, ErrInvalidCommand) || !strings.Contains(err.Error(), string(typ)) {
					t.Fatalf("error %v, want ErrInvalidCommand naming %q", err, typ)
				}
				sameStore(t, before, h.snapshot())
			})
		}
	}
	// The attack of the report: a forged cancel_requested, then a Wait,
	// which it would end at once (Woken) with nothing the workflow asked
	// for having happened.
	h.mustFail(&AppendEvents{LeaseRef: ref, Events: []NewEvent{{Type: EventCancelRequested}}}, ErrInvalidCommand)
	w := h.must(&Wait{LeaseRef: ref, Spec: WaitSpec{Signals: []string{"go"}}, SeenSeq: h.job(ref.Job).LastSeq}).(*WaitResult)
	if w.Woken || w.Status != StatusWaiting {
		t.Fatalf("wait after the refused forgery = %+v, want Waiting", w)
	}
	// The SDK's own event types still go through.
	h.must(&Signal{Target: Target{Job: ref.Job}, Name: "go"})
	c := h.claimOne(60_000)
	h.must(&AppendEvents{LeaseRef: c.Lease(), Events: []NewEvent{{Type: "marker_recorded", Step: "1"}}})
	h.must(&CommitStep{LeaseRef: c.Lease(), Step: "2", Type: "activity_completed"})
	h.verify()
}

// A request id names one command. Reused with another body it is refused
// with ErrRequestConflict, naming the id, and nothing is written; repeated
// with the same body it is answered from the record, whatever the time or
// the caller's identity (the header's NowMS and By are not the command's
// body).
func TestRequestIDReuseWithAnotherBodyIsRefused(t *testing.T) {
	h := newHarness(t)
	a := h.must(&CreateJob{Header: Header{RequestID: "rq-a"}, WorkflowID: "A", Type: "t", Queue: "q"}).(*CreateResult)
	h.create("other")

	before := h.snapshot()
	// The first attack of the report: a start of B under A's request id
	// was answered with A's job, and B never existed.
	_, err := h.apply(&CreateJob{Header: Header{RequestID: "rq-a"}, WorkflowID: "B", Type: "t", Queue: "q"})
	var rc *RequestConflictError
	if !errors.Is(err, ErrRequestConflict) || !errors.As(err, &rc) || rc.RequestID != "rq-a" || !strings.Contains(err.Error(), `"rq-a"`) {
		t.Fatalf("start of B under A's id: %v, want a RequestConflictError naming rq-a", err)
	}
	sameStore(t, before, h.snapshot())
	if _, err := h.apply(&Signal{Target: Target{WorkflowID: "B"}, Name: "x"}); !errors.Is(err, ErrUnknownJob) {
		t.Fatalf("B exists after the refused start: %v", err)
	}

	// The second: a signal to another workflow under a used id was
	// dropped in silence.
	h.must(&Signal{Header: Header{RequestID: "rq-s"}, Target: Target{WorkflowID: "A"}, Name: "go"})
	before = h.snapshot()
	if _, err := h.apply(&Signal{Header: Header{RequestID: "rq-s"}, Target: Target{WorkflowID: "other"}, Name: "go"}); !errors.Is(err, ErrRequestConflict) {
		t.Fatalf("signal to another workflow under a used id: %v, want ErrRequestConflict", err)
	}
	if _, err := h.apply(&Signal{Header: Header{RequestID: "rq-s"}, Target: Target{WorkflowID: "A"}, Name: "go", Payload: []byte("1")}); !errors.Is(err, ErrRequestConflict) {
		t.Fatalf("signal with another payload under a used id: %v, want ErrRequestConflict", err)
	}
	// Another kind under a used id is a conflict too, and still the
	// invalid command it always was.
	if _, err := h.apply(&Cancel{Header: Header{RequestID: "rq-s"}, Target: Target{Job: a.Job}}); !errors.Is(err, ErrRequestConflict) || !errors.Is(err, ErrInvalidCommand) {
		t.Fatalf("cancel under a signal's id: %v, want ErrRequestConflict and ErrInvalidCommand", err)
	}
	sameStore(t, before, h.snapshot())

	// The same body later, from someone else, in another span of the
	// caller's trace: the first result.
	h.now += 5000
	again := h.must(&CreateJob{Header: Header{RequestID: "rq-a", By: "someone"}, WorkflowID: "A", Type: "t", Queue: "q",
		TraceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
	if !reflect.DeepEqual(again, a) {
		t.Fatalf("retry answered %+v, first %+v", again, a)
	}
	sameStore(t, before, h.snapshot())
	h.verify()
}

// A float that is not a finite number is refused: stored, it would make
// every JSON read of the job fail.
func TestNonFiniteFloatsAreRefused(t *testing.T) {
	h := newHarness(t)
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		before := h.snapshot()
		_, err := h.apply(&CreateJob{Type: "t", Queue: "q", Retry: &RetryPolicy{InitialIntervalMS: 1, BackoffCoefficient: f}})
		if !errors.Is(err, ErrInvalidCommand) || !strings.Contains(err.Error(), "Retry.BackoffCoefficient") {
			t.Fatalf("coefficient %v: %v, want ErrInvalidCommand naming Retry.BackoffCoefficient", f, err)
		}
		sameStore(t, before, h.snapshot())
		if err := (&RetryPolicy{BackoffCoefficient: f}).Validate(); err == nil {
			t.Fatalf("RetryPolicy.Validate accepted %v", f)
		}
	}
	h.must(&CreateJob{Type: "t", Queue: "q", Retry: &RetryPolicy{InitialIntervalMS: 1, BackoffCoefficient: 2}})
	if err := (&RetryPolicy{BackoffCoefficient: 1.5}).Validate(); err != nil {
		t.Fatal(err)
	}
}

// The identity the server puts in a command's header is recorded on the
// events the commands people issue write.
func TestCallerIdentityIsRecorded(t *testing.T) {
	h := newHarness(t)
	by := func(name string) Header { return Header{By: name} }
	id := h.must(&CreateJob{Header: by("alice"), WorkflowID: "wf", Type: "t", Queue: "q"}).(*CreateResult).Job
	h.must(&Signal{Header: by("bob"), Target: Target{Job: id}, Name: "s"})
	h.must(&RequestCancel{Header: by("carol"), Target: Target{Job: id}})
	h.must(&Suspend{Header: by("dave"), Target: Target{Job: id}})
	h.must(&Resume{Header: by("erin"), Target: Target{Job: id}})
	h.must(&Terminate{Header: by("frank"), Target: Target{Job: id}})
	id2 := h.create("wf2")
	h.must(&Cancel{Header: by("grace"), Target: Target{Job: id2}})
	want := map[EventType]string{EventJobCreated: "alice", EventSignalReceived: "bob", EventCancelRequested: "carol",
		EventJobSuspended: "dave", EventJobResumed: "erin", EventJobTerminated: "frank"}
	for _, ev := range h.history(id) {
		if w, ok := want[ev.Type]; ok && ev.By != w {
			t.Errorf("%s recorded by %q, want %q", ev.Type, ev.By, w)
		}
		delete(want, ev.Type)
	}
	if len(want) > 0 {
		t.Errorf("events never written: %v", want)
	}
	if evs := h.history(id2); evs[len(evs)-1].Type != EventJobCancelled || evs[len(evs)-1].By != "grace" {
		t.Errorf("cancel recorded as %+v", evs[len(evs)-1])
	}
	h.verify()
}

// A policy stored before floats were checked, with a coefficient JSON
// cannot hold, still reads as JSON: the coefficient is null.
func TestStoredNonFiniteCoefficientStillReadsAsJSON(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		b, err := json.Marshal(&Job{ID: 1, Retry: &RetryPolicy{InitialIntervalMS: 5, BackoffCoefficient: f, MaximumAttempts: 3}})
		if err != nil {
			t.Fatalf("coefficient %v: %v", f, err)
		}
		if !strings.Contains(string(b), `"retry":{"initial_interval_ms":5,"maximum_attempts":3,"backoff_coefficient":null}`) {
			t.Fatalf("coefficient %v written as %s", f, b)
		}
	}
	b, err := json.Marshal(RetryPolicy{InitialIntervalMS: 5, BackoffCoefficient: 2})
	if err != nil || string(b) != `{"initial_interval_ms":5,"backoff_coefficient":2}` {
		t.Fatalf("a finite policy wrote %s, %v", b, err)
	}
}

// A parent run terminates its child, as its parent-close policy says,
// with its own lease (Terminate.ByParent): the engine takes it only while
// that lease is current and only for the parent's own child. Anything
// else is refused, and nothing is written.
func TestTerminateByParentOnlyReachesItsChildren(t *testing.T) {
	h := newHarness(t)
	parent := h.must(&CreateJob{WorkflowID: "parent", Type: "p", Queue: "pq"}).(*CreateResult).Job
	c := h.must(&Claim{Queue: "pq", Owner: "w", Max: 1, LeaseMS: 60_000}).(*ClaimResult).Jobs[0]
	ref := LeaseRef{Job: parent, Attempt: c.Attempt}
	child := h.must(&CreateJob{WorkflowID: "child", Type: "c", Queue: "cq", ParentID: parent, ParentStep: "1", ParentLease: &ref}).(*CreateResult).Job
	stranger := h.create("stranger")

	before := h.snapshot()
	for _, bad := range []struct {
		name string
		cmd  *Terminate
		want error
	}{
		{"a job that is not its child", &Terminate{Target: Target{WorkflowID: "stranger"}, ByParent: &ref}, ErrUnknownJob},
		{"a stale lease of the parent", &Terminate{Target: Target{Job: child}, ByParent: &LeaseRef{Job: parent, Attempt: ref.Attempt + 1}}, ErrStaleAttempt},
		{"the child naming itself its parent", &Terminate{Target: Target{Job: child}, ByParent: &LeaseRef{Job: child, Attempt: 1}}, ErrStaleAttempt},
		{"a lease without its attempt", &Terminate{Target: Target{Job: child}, ByParent: &LeaseRef{Job: parent}}, ErrInvalidCommand},
	} {
		if _, err := h.apply(bad.cmd); !errors.Is(err, bad.want) {
			t.Errorf("%s: %v, want %v", bad.name, err, bad.want)
		}
		sameStore(t, before, h.snapshot())
	}
	if s := h.job(stranger).Status; s != StatusQueued {
		t.Fatalf("the stranger is %s", s)
	}
	h.must(&Terminate{Header: Header{By: "wendy"}, Target: Target{WorkflowID: "child"}, Reason: "parent closed", ByParent: &ref})
	if j := h.job(child); j.Status != StatusTerminated {
		t.Fatalf("the child is %s, want Terminated", j.Status)
	}
	if ev := h.lastEvent(child); ev.Type != EventJobTerminated || ev.By != "wendy" {
		t.Fatalf("the child's last event: %+v", ev)
	}
	h.verify()
}
