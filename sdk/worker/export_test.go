package worker

import "sync"

// Every test of this package checks that the events a worker rebuilds after
// its own writes are exactly the ones the engine stored. Benchmarks turn the
// check off (it reads the history back, which is what rebuilding saves).
func init() { verifyOwnEvents = true }

// SetVerifyOwnEvents turns the check on or off and returns the old setting.
func SetVerifyOwnEvents(on bool) bool {
	old := verifyOwnEvents
	verifyOwnEvents = on
	return old
}

// HoldCompletedSessions makes every session creation activity that sees its
// session completed wait, before it returns, until the function returned is
// called.
func HoldCompletedSessions() (release func()) {
	hold := make(chan struct{})
	wait := func() { <-hold }
	afterSessionDone.Store(&wait)
	return sync.OnceFunc(func() {
		afterSessionDone.Store(nil)
		close(hold)
	})
}
