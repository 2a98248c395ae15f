package machine_test

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// engineOwned lists the event types only the engine writes: the ones it
// appends itself for signals, timers, steps, cancel requests and effects,
// and every status event.
func engineOwned() []engine.EventType {
	return append([]engine.EventType{engine.EventSignalReceived, engine.EventStepCommitted, engine.EventTimerFired, engine.EventCancelRequested,
		engine.EventEffectRecorded}, engine.StatusEvents()...)
}

// A worker holding a lease cannot write an event the engine owns, in any of
// the three places a worker names an event type: a forged cancel_requested
// would wake the job's next Wait, a forged signal_received would hand the
// workflow a signal nobody sent.
func TestWorkersCannotWriteEngineOwnedEvents(t *testing.T) {
	h := newHarness(t)
	ref := drive(h, engine.StatusRunning, "wf")
	for _, typ := range engineOwned() {
		cmds := map[string]engine.Command{
			"AppendEvents": &engine.AppendEvents{LeaseRef: ref, Events: []engine.NewEvent{{Type: "marker"}, {Type: typ, Name: "s"}}},
			"Wait.Events":  &engine.Wait{LeaseRef: ref, Spec: engine.WaitSpec{Signals: []string{"s"}}, Events: []engine.NewEvent{{Type: typ, Name: "s"}}},
			"CommitStep":   &engine.CommitStep{LeaseRef: ref, Step: "st-" + string(typ), Type: typ},
		}
		for where, cmd := range cmds {
			t.Run(where+"/"+string(typ), func(t *testing.T) {
				before := h.snapshot()
				_, err := h.apply(cmd)
				if !errors.Is(err, engine.ErrInvalidCommand) || !strings.Contains(err.Error(), string(typ)) {
					t.Fatalf("error %v, want ErrInvalidCommand naming %q", err, typ)
				}
				sameStore(t, before, h.snapshot())
			})
		}
	}
	// The attack of the report: a forged cancel_requested, then a Wait,
	// which it would end at once (Woken) with nothing the workflow asked
	// for having happened.
	h.mustFail(&engine.AppendEvents{LeaseRef: ref, Events: []engine.NewEvent{{Type: engine.EventCancelRequested}}}, engine.ErrInvalidCommand)
	w := h.must(&engine.Wait{LeaseRef: ref, Spec: engine.WaitSpec{Signals: []string{"go"}}, SeenSeq: h.job(ref.Job).LastSeq}).(*engine.WaitResult)
	if w.Woken || w.Status != engine.StatusWaiting {
		t.Fatalf("wait after the refused forgery = %+v, want Waiting", w)
	}
	// The SDK's own event types still go through.
	h.must(&engine.Signal{Target: engine.Target{Job: ref.Job}, Name: "go"})
	c := h.claimOne(60_000)
	h.must(&engine.AppendEvents{LeaseRef: c.Lease(), Events: []engine.NewEvent{{Type: "marker_recorded", Step: "1"}}})
	h.must(&engine.CommitStep{LeaseRef: c.Lease(), Step: "2", Type: "activity_completed"})
	h.verify()
}

// A request id names one command. Reused with another body it is refused
// with ErrRequestConflict, naming the id, and nothing is written; repeated
// with the same body it is answered from the record, whatever the time or
// the caller's identity (the header's NowMS and By are not the command's
// body).
func TestRequestIDReuseWithAnotherBodyIsRefused(t *testing.T) {
	h := newHarness(t)
	a := h.must(&engine.CreateJob{Header: engine.Header{RequestID: "rq-a"}, WorkflowID: "A", Type: "t", Queue: "q"}).(*engine.CreateResult)
	h.create("other")

	before := h.snapshot()
	// The first attack of the report: a start of B under A's request id
	// was answered with A's job, and B never existed.
	_, err := h.apply(&engine.CreateJob{Header: engine.Header{RequestID: "rq-a"}, WorkflowID: "B", Type: "t", Queue: "q"})
	var rc *engine.RequestConflictError
	if !errors.Is(err, engine.ErrRequestConflict) || !errors.As(err, &rc) || rc.RequestID != "rq-a" || !strings.Contains(err.Error(), `"rq-a"`) {
		t.Fatalf("start of B under A's id: %v, want a RequestConflictError naming rq-a", err)
	}
	sameStore(t, before, h.snapshot())
	if _, err := h.apply(&engine.Signal{Target: engine.Target{WorkflowID: "B"}, Name: "x"}); !errors.Is(err, engine.ErrUnknownJob) {
		t.Fatalf("B exists after the refused start: %v", err)
	}

	// The second: a signal to another workflow under a used id was
	// dropped in silence.
	h.must(&engine.Signal{Header: engine.Header{RequestID: "rq-s"}, Target: engine.Target{WorkflowID: "A"}, Name: "go"})
	before = h.snapshot()
	if _, err := h.apply(&engine.Signal{Header: engine.Header{RequestID: "rq-s"}, Target: engine.Target{WorkflowID: "other"}, Name: "go"}); !errors.Is(err, engine.ErrRequestConflict) {
		t.Fatalf("signal to another workflow under a used id: %v, want ErrRequestConflict", err)
	}
	if _, err := h.apply(&engine.Signal{Header: engine.Header{RequestID: "rq-s"}, Target: engine.Target{WorkflowID: "A"}, Name: "go", Payload: []byte("1")}); !errors.Is(err, engine.ErrRequestConflict) {
		t.Fatalf("signal with another payload under a used id: %v, want ErrRequestConflict", err)
	}
	// Another kind under a used id is a conflict too, and still the
	// invalid command it always was.
	if _, err := h.apply(&engine.Cancel{Header: engine.Header{RequestID: "rq-s"}, Target: engine.Target{Job: a.Job}}); !errors.Is(err, engine.ErrRequestConflict) || !errors.Is(err, engine.ErrInvalidCommand) {
		t.Fatalf("cancel under a signal's id: %v, want ErrRequestConflict and ErrInvalidCommand", err)
	}
	sameStore(t, before, h.snapshot())

	// The same body later, from someone else, in another span of the
	// caller's trace: the first result.
	h.now += 5000
	again := h.must(&engine.CreateJob{Header: engine.Header{RequestID: "rq-a", By: "someone"}, WorkflowID: "A", Type: "t", Queue: "q",
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
		_, err := h.apply(&engine.CreateJob{Type: "t", Queue: "q", Retry: &engine.RetryPolicy{InitialIntervalMS: 1, BackoffCoefficient: f}})
		if !errors.Is(err, engine.ErrInvalidCommand) || !strings.Contains(err.Error(), "Retry.BackoffCoefficient") {
			t.Fatalf("coefficient %v: %v, want ErrInvalidCommand naming Retry.BackoffCoefficient", f, err)
		}
		sameStore(t, before, h.snapshot())
		if err := (&engine.RetryPolicy{BackoffCoefficient: f}).Validate(); err == nil {
			t.Fatalf("RetryPolicy.Validate accepted %v", f)
		}
	}
	h.must(&engine.CreateJob{Type: "t", Queue: "q", Retry: &engine.RetryPolicy{InitialIntervalMS: 1, BackoffCoefficient: 2}})
	if err := (&engine.RetryPolicy{BackoffCoefficient: 1.5}).Validate(); err != nil {
		t.Fatal(err)
	}
}

// The identity the server puts in a command's header is recorded on the
// events the commands people issue write.
func TestCallerIdentityIsRecorded(t *testing.T) {
	h := newHarness(t)
	by := func(name string) engine.Header { return engine.Header{By: name} }
	id := h.must(&engine.CreateJob{Header: by("alice"), WorkflowID: "wf", Type: "t", Queue: "q"}).(*engine.CreateResult).Job
	h.must(&engine.Signal{Header: by("bob"), Target: engine.Target{Job: id}, Name: "s"})
	h.must(&engine.RequestCancel{Header: by("carol"), Target: engine.Target{Job: id}})
	h.must(&engine.Suspend{Header: by("dave"), Target: engine.Target{Job: id}})
	h.must(&engine.Resume{Header: by("erin"), Target: engine.Target{Job: id}})
	h.must(&engine.Terminate{Header: by("frank"), Target: engine.Target{Job: id}})
	id2 := h.create("wf2")
	h.must(&engine.Cancel{Header: by("grace"), Target: engine.Target{Job: id2}})
	want := map[engine.EventType]string{engine.EventJobCreated: "alice", engine.EventSignalReceived: "bob", engine.EventCancelRequested: "carol",
		engine.EventJobSuspended: "dave", engine.EventJobResumed: "erin", engine.EventJobTerminated: "frank"}
	for _, ev := range h.history(id) {
		if w, ok := want[ev.Type]; ok && ev.By != w {
			t.Errorf("%s recorded by %q, want %q", ev.Type, ev.By, w)
		}
		delete(want, ev.Type)
	}
	if len(want) > 0 {
		t.Errorf("events never written: %v", want)
	}
	if evs := h.history(id2); evs[len(evs)-1].Type != engine.EventJobCancelled || evs[len(evs)-1].By != "grace" {
		t.Errorf("cancel recorded as %+v", evs[len(evs)-1])
	}
	h.verify()
}

// A policy stored before floats were checked, with a coefficient JSON
// cannot hold, still reads as JSON: the coefficient is null.
func TestStoredNonFiniteCoefficientStillReadsAsJSON(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		b, err := json.Marshal(&engine.Job{ID: 1, Retry: &engine.RetryPolicy{InitialIntervalMS: 5, BackoffCoefficient: f, MaximumAttempts: 3}})
		if err != nil {
			t.Fatalf("coefficient %v: %v", f, err)
		}
		if !strings.Contains(string(b), `"retry":{"initial_interval_ms":5,"maximum_attempts":3,"backoff_coefficient":null}`) {
			t.Fatalf("coefficient %v written as %s", f, b)
		}
	}
	b, err := json.Marshal(engine.RetryPolicy{InitialIntervalMS: 5, BackoffCoefficient: 2})
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
	parent := h.must(&engine.CreateJob{WorkflowID: "parent", Type: "p", Queue: "pq"}).(*engine.CreateResult).Job
	c := h.must(&engine.Claim{Queue: "pq", Owner: "w", Max: 1, LeaseMS: 60_000}).(*engine.ClaimResult).Jobs[0]
	ref := engine.LeaseRef{Job: parent, Attempt: c.Attempt}
	child := h.must(&engine.CreateJob{WorkflowID: "child", Type: "c", Queue: "cq", ParentID: parent, ParentStep: "1", ParentLease: &ref}).(*engine.CreateResult).Job
	stranger := h.create("stranger")

	before := h.snapshot()
	for _, bad := range []struct {
		name string
		cmd  *engine.Terminate
		want error
	}{
		{"a job that is not its child", &engine.Terminate{Target: engine.Target{WorkflowID: "stranger"}, ByParent: &ref}, engine.ErrUnknownJob},
		{"a stale lease of the parent", &engine.Terminate{Target: engine.Target{Job: child}, ByParent: &engine.LeaseRef{Job: parent, Attempt: ref.Attempt + 1}}, engine.ErrStaleAttempt},
		{"the child naming itself its parent", &engine.Terminate{Target: engine.Target{Job: child}, ByParent: &engine.LeaseRef{Job: child, Attempt: 1}}, engine.ErrStaleAttempt},
		{"a lease without its attempt", &engine.Terminate{Target: engine.Target{Job: child}, ByParent: &engine.LeaseRef{Job: parent}}, engine.ErrInvalidCommand},
	} {
		if _, err := h.apply(bad.cmd); !errors.Is(err, bad.want) {
			t.Errorf("%s: %v, want %v", bad.name, err, bad.want)
		}
		sameStore(t, before, h.snapshot())
	}
	if s := h.job(stranger).Status; s != engine.StatusQueued {
		t.Fatalf("the stranger is %s", s)
	}
	h.must(&engine.Terminate{Header: engine.Header{By: "wendy"}, Target: engine.Target{WorkflowID: "child"}, Reason: "parent closed", ByParent: &ref})
	if j := h.job(child); j.Status != engine.StatusTerminated {
		t.Fatalf("the child is %s, want Terminated", j.Status)
	}
	if ev := h.lastEvent(child); ev.Type != engine.EventJobTerminated || ev.By != "wendy" {
		t.Fatalf("the child's last event: %+v", ev)
	}
	h.verify()
}
