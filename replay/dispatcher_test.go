package replay

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Coroutines take turns in creation order, and a coroutine runs until it
// blocks: the trace is the same on every run.
func TestDispatcherInterleavingIsFixed(t *testing.T) {
	run := func() []string {
		var trace []string
		step := 0
		var d *Dispatcher
		d = NewDispatcher(func() {
			trace = append(trace, "root start")
			d.Go("a", func() {
				trace = append(trace, "a waits for step 1")
				d.Block(func() bool { return step >= 1 })
				trace = append(trace, "a runs")
				step = 2
			})
			d.Go("b", func() {
				trace = append(trace, "b waits for step 2")
				d.Block(func() bool { return step >= 2 })
				trace = append(trace, "b runs")
			})
			step = 1
			d.Block(func() bool { return step >= 2 })
			trace = append(trace, "root sees step 2")
		})
		if err := d.ExecuteUntilAllBlocked(); err != nil {
			t.Fatal(err)
		}
		if !d.Done() || !d.RootDone() {
			t.Fatal("coroutines left unfinished")
		}
		return trace
	}
	first := run()
	want := []string{"root start", "a waits for step 1", "a runs", "b waits for step 2", "b runs", "root sees step 2"}
	if !reflect.DeepEqual(first, want) {
		t.Fatalf("trace %q, want %q", first, want)
	}
	for i := 0; i < 50; i++ {
		if again := run(); !reflect.DeepEqual(again, first) {
			t.Fatalf("run %d trace %q differs from %q", i, again, first)
		}
	}
}

// ExecuteUntilAllBlocked returns when nothing can progress, and resumes the
// blocked coroutines once the state they wait for changes.
func TestDispatcherStopsWhenAllBlocked(t *testing.T) {
	ready := false
	finished := false
	var d *Dispatcher
	d = NewDispatcher(func() {
		d.Block(func() bool { return ready })
		finished = true
	})
	defer d.Close()
	if err := d.ExecuteUntilAllBlocked(); err != nil {
		t.Fatal(err)
	}
	if finished || d.Done() {
		t.Fatal("ran past an unmet Block")
	}
	ready = true // what delivering a history event does
	if err := d.ExecuteUntilAllBlocked(); err != nil {
		t.Fatal(err)
	}
	if !finished || !d.Done() {
		t.Fatal("did not resume after the condition held")
	}
}

func TestDispatcherReportsPanic(t *testing.T) {
	d := NewDispatcher(func() { panic("boom") })
	err := d.ExecuteUntilAllBlocked()
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Value != "boom" || pe.Code() != PanicCode || !strings.Contains(pe.Stack, "dispatcher_test.go") {
		t.Fatalf("error %v, want a PanicError with the stack", err)
	}
}

// Workflow code that blocks outside the SDK is reported as a deadlock.
func TestDispatcherDetectsBlockingOutsideSDK(t *testing.T) {
	never := make(chan struct{})
	defer close(never)
	d := NewDispatcher(func() { <-never })
	d.DeadlockTimeout = 20 * time.Millisecond
	err := d.ExecuteUntilAllBlocked()
	var de *DeadlockError
	if !errors.As(err, &de) || de.Coroutine != "root" || de.Code() != DeadlockCode {
		t.Fatalf("error %v, want a DeadlockError naming root", err)
	}
	d.Close()
}

// Close unwinds blocked coroutines so their deferred functions run.
func TestDispatcherCloseUnwinds(t *testing.T) {
	cleaned := 0
	var d *Dispatcher
	d = NewDispatcher(func() {
		d.Go("child", func() {
			defer func() { cleaned++ }()
			d.Block(func() bool { return false })
		})
		defer func() { cleaned++ }()
		d.Block(func() bool { return false })
	})
	if err := d.ExecuteUntilAllBlocked(); err != nil {
		t.Fatal(err)
	}
	d.Close()
	if cleaned != 2 {
		t.Fatalf("%d deferred clean-ups ran, want 2", cleaned)
	}
	if err := d.ExecuteUntilAllBlocked(); err == nil {
		t.Fatal("a closed dispatcher ran again")
	}
}

// After a deadlock the dispatcher refuses to run again, and Close returns
// even though the stuck coroutine never yields.
func TestDispatcherAfterDeadlock(t *testing.T) {
	never := make(chan struct{})
	defer close(never)
	d := NewDispatcher(func() { <-never })
	d.DeadlockTimeout = 20 * time.Millisecond
	first := d.ExecuteUntilAllBlocked()
	if second := d.ExecuteUntilAllBlocked(); second == nil || second != first {
		t.Fatalf("second run = %v, want the first deadlock %v again", second, first)
	}
	d.Close()
	if c := d.Go("late", func() { t.Error("ran after Close") }); !c.done.Load() {
		t.Fatal("Go after Close started a coroutine")
	}
}
