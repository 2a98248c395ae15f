package workflow

import (
	"cmp"
	"slices"
)

// Mutex is a lock for the coroutines of one workflow run (Temporal's
// workflow.Mutex). It holds no state outside the run: every coroutine
// runs on the workflow's own dispatcher, one at a time, so the lock only
// orders the points where they block, and a replay takes it in the same
// order.
type Mutex interface {
	// Lock blocks until the mutex is free and takes it, or returns the
	// context's cancellation error without it.
	Lock(ctx Context) error
	// TryLock takes the mutex if it is free and reports whether it did.
	TryLock(ctx Context) bool
	// Unlock frees the mutex; it panics if the mutex is not locked.
	Unlock()
	// IsLocked reports whether the mutex is held.
	IsLocked() bool
}

// Semaphore is a counting semaphore for the coroutines of one workflow run
// (Temporal's workflow.Semaphore), deterministic as Mutex is.
type Semaphore interface {
	// Acquire blocks until n units are free and takes them, or returns the
	// context's cancellation error without them.
	Acquire(ctx Context, n int64) error
	// TryAcquire takes n units if they are free and reports whether it
	// did.
	TryAcquire(ctx Context, n int64) bool
	// Release frees n units; it panics if that frees more than are held.
	Release(n int64)
}

// WaitGroup waits for a number of coroutines of one workflow run to finish
// (Temporal's workflow.WaitGroup, the workflow's sync.WaitGroup).
type WaitGroup interface {
	// Add adds delta, which may be negative, to the counter; it panics if
	// the counter goes below zero.
	Add(delta int)
	// Done takes one from the counter.
	Done()
	// Wait blocks until the counter is zero.
	Wait(ctx Context)
	// Go runs f in a new coroutine counted by the group.
	Go(ctx Context, f func(ctx Context))
}

// NewMutex returns an unlocked Mutex.
func NewMutex(ctx Context) Mutex { return &mutex{} }

type mutex struct{ locked bool }

func (m *mutex) Lock(ctx Context) error {
	if err := Await(ctx, func() bool { return !m.locked }); err != nil {
		return err
	}
	m.locked = true
	return nil
}

func (m *mutex) TryLock(ctx Context) bool {
	if m.locked {
		return false
	}
	m.locked = true
	return true
}

func (m *mutex) Unlock() {
	if !m.locked {
		panic("workflow: Mutex.Unlock of an unlocked mutex")
	}
	m.locked = false
}

func (m *mutex) IsLocked() bool { return m.locked }

// NewSemaphore returns a Semaphore of size units, all free.
func NewSemaphore(ctx Context, size int64) Semaphore { return &semaphore{size: size} }

type semaphore struct{ size, held int64 }

func (s *semaphore) Acquire(ctx Context, n int64) error {
	if err := Await(ctx, func() bool { return s.size-s.held >= n }); err != nil {
		return err
	}
	s.held += n
	return nil
}

func (s *semaphore) TryAcquire(ctx Context, n int64) bool {
	if s.size-s.held < n {
		return false
	}
	s.held += n
	return true
}

func (s *semaphore) Release(n int64) {
	if n > s.held {
		panic("workflow: Semaphore.Release of more than is held")
	}
	s.held -= n
}

// NewWaitGroup returns a WaitGroup whose counter is zero.
func NewWaitGroup(ctx Context) WaitGroup { return &waitGroup{} }

type waitGroup struct{ n int }

func (wg *waitGroup) Add(delta int) {
	if wg.n+delta < 0 {
		panic("workflow: WaitGroup counter below zero")
	}
	wg.n += delta
}

func (wg *waitGroup) Done() { wg.Add(-1) }

// Wait blocks until the counter is zero; as in Temporal it does not end on
// cancellation, since the coroutines it waits for see the cancellation and
// finish.
func (wg *waitGroup) Wait(ctx Context) {
	waitCtx, _ := NewDisconnectedContext(ctx)
	_ = Await(waitCtx, func() bool { return wg.n == 0 })
}

func (wg *waitGroup) Go(ctx Context, f func(ctx Context)) {
	wg.Add(1)
	Go(ctx, func(ctx Context) {
		defer wg.Done()
		f(ctx)
	})
}

// DeterministicKeys returns m's keys in ascending order: ranging over a Go
// map is in random order, which workflow code must not depend on.
func DeterministicKeys[K cmp.Ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// DeterministicKeysFunc returns m's keys in the order of compare (negative
// when a comes before b).
func DeterministicKeysFunc[K comparable, V any](m map[K]V, compare func(a, b K) int) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compare)
	return keys
}
