package workflow

import (
	"strings"
	"testing"
)

// Two coroutines take turns under a Mutex: the second waits until the
// first unlocks; TryLock fails while it is held.
func TestMutexOrdersCoroutines(t *testing.T) {
	runTrace(t, "a locks; a tries again: false; a sleeps; b waits; a unlocks; b locks; b unlocks; unlocked: true",
		func(ctx Context, tr *trace) {
			m := NewMutex(ctx)
			wg := NewWaitGroup(ctx)
			bWaits := false
			wg.Go(ctx, func(ctx Context) {
				_ = m.Lock(ctx)
				tr.add("a locks")
				tr.add("a tries again: %v", m.TryLock(ctx))
				tr.add("a sleeps")
				_ = Await(ctx, func() bool { return bWaits }) // b runs, and must keep waiting
				tr.add("a unlocks")
				m.Unlock()
			})
			wg.Go(ctx, func(ctx Context) {
				tr.add("b waits")
				bWaits = true
				if err := m.Lock(ctx); err != nil {
					tr.add("b: %v", err)
					return
				}
				tr.add("b locks")
				tr.add("b unlocks")
				m.Unlock()
			})
			wg.Wait(ctx)
			tr.add("unlocked: %v", !m.IsLocked())
		})
}

// A Lock waiting on a held mutex ends with the cancellation, not the lock.
func TestMutexLockCancelled(t *testing.T) {
	runTrace(t, "held; cancel; lock: canceled, still held by the first: true", func(ctx Context, tr *trace) {
		m := NewMutex(ctx)
		if !m.TryLock(ctx) {
			tr.add("TryLock of a free mutex failed")
		}
		tr.add("held")
		child, cancel := WithCancel(ctx)
		Go(ctx, func(ctx Context) { tr.add("cancel"); cancel() })
		err := m.Lock(child)
		tr.add("lock: %v, still held by the first: %v", err, m.IsLocked())
	})
}

func TestMutexUnlockOfUnlockedPanics(t *testing.T) {
	defer func() {
		if p := recover(); p == nil || !strings.Contains(p.(string), "unlocked") {
			t.Fatalf("recovered %v, want a panic about an unlocked mutex", p)
		}
	}()
	(&mutex{}).Unlock()
}

// A Semaphore of 3 lets units be taken up to its size; an Acquire of more
// than is free waits for a Release.
func TestSemaphore(t *testing.T) {
	runTrace(t, "take 2: true; take 2 more: false; take 1: true; waiter wants 2; release 2; waiter got 2; free after: true",
		func(ctx Context, tr *trace) {
			s := NewSemaphore(ctx, 3)
			tr.add("take 2: %v", s.TryAcquire(ctx, 2))
			tr.add("take 2 more: %v", s.TryAcquire(ctx, 2))
			tr.add("take 1: %v", s.TryAcquire(ctx, 1))
			wg := NewWaitGroup(ctx)
			waiting := false
			wg.Go(ctx, func(ctx Context) {
				tr.add("waiter wants 2")
				waiting = true
				if err := s.Acquire(ctx, 2); err != nil {
					tr.add("waiter: %v", err)
					return
				}
				tr.add("waiter got 2")
			})
			_ = Await(ctx, func() bool { return waiting })
			tr.add("release 2")
			s.Release(2)
			wg.Wait(ctx)
			s.Release(3)
			tr.add("free after: %v", s.TryAcquire(ctx, 3))
		})
	defer func() {
		if recover() == nil {
			t.Fatal("releasing more than is held did not panic")
		}
	}()
	(&semaphore{size: 2, held: 1}).Release(2)
}

// Wait returns once every counted coroutine is done; a counter below zero
// panics.
func TestWaitGroup(t *testing.T) {
	runTrace(t, "wait; one done; two done; waited, done before: 2", func(ctx Context, tr *trace) {
		wg := NewWaitGroup(ctx)
		done := 0
		wg.Add(2)
		for _, name := range []string{"one", "two"} {
			Go(ctx, func(ctx Context) {
				defer wg.Done()
				done++
				tr.add("%s done", name)
			})
		}
		tr.add("wait")
		wg.Wait(ctx)
		tr.add("waited, done before: %d", done)
	})
	defer func() {
		if recover() == nil {
			t.Fatal("a negative counter did not panic")
		}
	}()
	(&waitGroup{}).Done()
}

func TestDeterministicKeys(t *testing.T) {
	m := map[string]int{"b": 2, "c": 3, "a": 1}
	for range 5 {
		if got := strings.Join(DeterministicKeys(m), ","); got != "a,b,c" {
			t.Fatalf("DeterministicKeys = %s, want a,b,c", got)
		}
	}
	byLen := map[string]bool{"ccc": true, "a": true, "bb": true}
	got := DeterministicKeysFunc(byLen, func(a, b string) int { return len(b) - len(a) })
	if strings.Join(got, ",") != "ccc,bb,a" {
		t.Fatalf("DeterministicKeysFunc = %v, want longest first", got)
	}
	if len(DeterministicKeys(map[int]bool{})) != 0 {
		t.Fatal("keys of an empty map")
	}
}
