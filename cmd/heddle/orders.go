package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/clock"
)

// The order workflow, written by hand against the engine: there is no SDK
// yet, so the "workflow code" is this list of steps plus the gates below,
// and the worker in worker.go drives it.
const (
	orderType  = "order"
	orderQueue = "orders"
)

// orderSteps are the activities of every order, in the order they run.
var orderSteps = []string{"reserve-inventory", "charge-card", "ship"}

// Event types the worker appends for its activities. They are not status
// events, so the engine records them without changing the job's status.
const (
	evActivityStarted   engine.EventType = "activity_started"
	evActivityFailed    engine.EventType = "activity_failed"
	evActivityCompleted engine.EventType = "activity_completed"
)

// order is one order of the demo and what makes it interesting.
type order struct {
	id    string
	input string
	story string
	// gate, if set, makes the order wait for something before one step.
	gate *gate
}

// gate is a wait an order makes before a step: the job releases its lease
// and becomes claimable again only when the wait ends.
type gate struct {
	before string // the step the gate guards
	what   string // how the output names what is awaited
	// spec builds the wait; nowMS lets a timer be set relative to now.
	spec func(nowMS int64) engine.WaitSpec
	// passed reports whether the history already shows the wait is over, so
	// that a later attempt does not wait a second time.
	passed func(hist []engine.Event) bool
}

// signalGate waits for the named signal.
func signalGate(before, name string) *gate {
	return &gate{
		before: before,
		what:   "signal " + name,
		spec:   func(int64) engine.WaitSpec { return engine.WaitSpec{Signals: []string{name}} },
		passed: func(h []engine.Event) bool { return hasEvent(h, engine.EventSignalReceived, name) },
	}
}

// timerGate waits on a durable timer that the engine's scheduler fires.
func timerGate(before, id string, d time.Duration) *gate {
	return &gate{
		before: before,
		what:   fmt.Sprintf("timer %s (%d ms)", id, d.Milliseconds()),
		spec: func(nowMS int64) engine.WaitSpec {
			return engine.WaitSpec{TimerID: id, TimerAtMS: nowMS + d.Milliseconds()}
		},
		passed: func(h []engine.Event) bool { return hasEvent(h, engine.EventTimerFired, id) },
	}
}

// hasEvent reports whether hist holds an event of type t named name.
func hasEvent(hist []engine.Event, t engine.EventType, name string) bool {
	for _, ev := range hist {
		if ev.Type == t && ev.Name == name {
			return true
		}
	}
	return false
}

// demoOrders are the three orders of the demo. Each exercises a different
// part of the engine, so the output tells three short stories.
func demoOrders() []order {
	return []order{
		{id: "order-1", input: `{"sku":"loom-kit","qty":1,"card":"visa-4242"}`,
			story: "its first worker will crash mid-order"},
		{id: "order-2", input: `{"sku":"heddle-frame","qty":20,"card":"amex-0005"}`,
			story: "a large order: a person must send signal approved before the card is charged",
			gate:  signalGate("charge-card", "approved")},
		{id: "order-3", input: `{"sku":"shuttle","qty":2,"card":"mc-5100"}`,
			story: "its card charge fails once; then it waits for the ship-window timer",
			gate:  timerGate("ship", "ship-window", 300*time.Millisecond)},
	}
}

// activities simulates the side effects of the steps: each takes a little
// time and returns a small JSON result, and injected faults make chosen
// steps fail a set number of times. Faults are consumed across workers, as
// a flaky payment network would be.
type activities struct {
	clock  clock.Clock
	delay  time.Duration
	mu     sync.Mutex
	faults map[string]int // "<workflow id>/<step>" -> failures left
}

// run performs step of order wf.
func (a *activities) run(ctx context.Context, wf, step string) ([]byte, error) {
	if err := sleep(ctx, a.clock, a.delay); err != nil {
		return nil, err
	}
	if a.takeFault(wf, step) {
		return nil, errors.New("payment network timeout (transient)")
	}
	return activityResult(wf, step), nil
}

func (a *activities) takeFault(wf, step string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	key := wf + "/" + step
	if a.faults[key] > 0 {
		a.faults[key]--
		return true
	}
	return false
}

// activityResult is the deterministic result of a step, recorded in history.
func activityResult(wf, step string) []byte {
	switch step {
	case "reserve-inventory":
		return fmt.Appendf(nil, `{"reservation":"R-%s"}`, wf)
	case "charge-card":
		return fmt.Appendf(nil, `{"charge":"ch-%s"}`, wf)
	default:
		return fmt.Appendf(nil, `{"tracking":"TRK-%s"}`, wf)
	}
}
