// Package workflow is what workflow code imports: deterministic stand-ins
// for goroutines, channels, select, futures and context that block only
// through the workflow's own scheduler.
//
// Workflow code runs as coroutines that take turns in a fixed order, so that
// replaying the same history makes the same decisions. Go's own channels,
// mutexes, select and time.Sleep block outside that order and must not be
// used; the types here behave like them but yield to the dispatcher instead.
// The model is Temporal's Go SDK, and where this package differs from it the
// documentation of the type says so.
package workflow
