// Package replay executes workflow code deterministically from its history:
// a dispatcher that runs the code's coroutines one at a time, the matching of
// what the code does against what the history recorded, typed
// nondeterminism errors, effect catch-up and the cache of live workflows.
//
// It is the layer between the SDK and the engine's contract. sdk/workflow
// issues commands into an Execution from workflow code (ExecuteActivity,
// NewTimer, SideEffect, …); sdk/worker drives the Execution from one
// goroutine, feeding it history events (engine.Event) and carrying out the
// commands it has not seen resolved; sdk/testsuite and the worker's replayer
// use it the same way. Workflow authors never import it: the SDK names its
// types in unexported code and in internal/sdkhook, and shows authors only
// its nondeterminism error, through aliases (workflow.NondeterminismError,
// workflow.ErrNondeterminism), as Temporal's Go SDK shows its internal
// package.
//
// Among heddle's packages it imports only the contract, package engine: the
// event types it matches (engine.EventActivityScheduled, …) are declared
// there once, as the engine stores them, so the two can never drift apart.
// It reads no clock but the dispatcher's deadlock watchdog, and touches no
// storage.
package replay
