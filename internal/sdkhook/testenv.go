package sdkhook

import "time"

// TestEnv is what sdk/testsuite lends the workflow code it runs: answers
// to the calls Temporal's test environment lets a test mock. The testsuite
// owns it; sdk/workflow calls it from workflow code (one coroutine at a
// time per run, but runs of one environment concurrently), and records
// what it answers, so replays see the same without asking again.
type TestEnv interface {
	// GetVersion returns the version a test set for changeID
	// (OnGetVersion); ok is false when no mock applies.
	GetVersion(changeID string, minSupported, maxSupported int) (version int, ok bool)
	// LastCompletionResult returns the payload a test set
	// (SetLastCompletionResult) for the workflow id; ok is false when none.
	LastCompletionResult(workflowID string) (payload []byte, ok bool)
	// MocksExternal reports whether the test mocks signals (signal true)
	// or cancel requests to other workflows at all
	// (OnSignalExternalWorkflow, OnRequestCancelExternalWorkflow).
	MocksExternal(signal bool) bool
	// External answers a signal or cancel request to another workflow:
	// handled false sends it to the engine (the target runs in the
	// environment); otherwise err is its outcome, nil for sent.
	External(signal bool, workflowID, runID, signalName string, arg any) (handled bool, err error)
	// Timer tells the test of a new event of a workflow timer (never of
	// one a replay re-runs): its scheduling, with its duration, its firing
	// or its cancellation. timerID is the timer's step.
	Timer(event TimerEvent, timerID string, duration time.Duration)
	// UpdateCompleted hands the test the value an update handler of run
	// runID returned for updateID, before its completion is recorded, so
	// the test's update callbacks see the handler's own Go value rather
	// than its encoding. A replay of the run may hand the same value again.
	UpdateCompleted(runID, updateID string, result any)
}

// TimerEvent is what happened to a workflow timer (TestEnv.Timer).
type TimerEvent int

// The events of a workflow timer.
const (
	TimerScheduled TimerEvent = iota + 1
	TimerFired
	TimerCanceled
)

// WithTestEnv returns the workflow.Context ctx carrying env; set by
// sdk/workflow's init, read by sdk/testsuite (which imports it). ctx and
// the result are any because workflow.Context is declared in
// sdk/workflow, which imports this package.
var WithTestEnv func(ctx any, env TestEnv) any
