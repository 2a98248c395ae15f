package testsuite

import (
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/log"
	"github.com/heddlewf/heddle/sdk/worker"
)

// WorkflowTestSuite makes test environments. Embed it next to testify's
// suite.Suite, as Temporal's tests do, or declare one on its own:
//
//	var ts testsuite.WorkflowTestSuite
//	env := ts.NewTestWorkflowEnvironment()
//
// The zero value is ready to use. Its methods do not clash with
// suite.Suite's, so both can be embedded in one struct.
type WorkflowTestSuite struct {
	logger log.Logger
}

// NewTestWorkflowEnvironment returns a new environment for one workflow run.
func (s *WorkflowTestSuite) NewTestWorkflowEnvironment() *TestWorkflowEnvironment {
	return newEnvironment(log.Slog(s.logger))
}

// NewTestActivityEnvironment returns a new environment for running
// activities on their own.
func (s *WorkflowTestSuite) NewTestActivityEnvironment() *TestActivityEnvironment {
	return &TestActivityEnvironment{env: newEnvironment(log.Slog(s.logger))}
}

// SetLogger sets the logger of the environments made from now on: the
// workers' own messages, and what workflow.GetLogger and
// activity.GetLogger write through. Nil (the default) means no worker
// messages, and slog.Default() for workflow and activity code. It takes
// Temporal's log.Logger: a *slog.Logger, a log.StructuredLogger or any
// other implementation (written to through log.Slog).
func (s *WorkflowTestSuite) SetLogger(logger log.Logger) { s.logger = logger }

// GetLogger returns the logger SetLogger set, or nil.
func (s *WorkflowTestSuite) GetLogger() log.Logger { return s.logger }

// The defaults of a new environment, as in Temporal's test environment.
const (
	// DefaultWorkflowID is the workflow id of the run ExecuteWorkflow starts.
	DefaultWorkflowID = "default-test-workflow-id"
	// DefaultTaskQueue is the task queue of the run ExecuteWorkflow starts.
	DefaultTaskQueue = "default-test-taskqueue"
	// DefaultTestTimeout is how long ExecuteWorkflow waits, in real time,
	// for anything to happen before it gives up (SetTestTimeout).
	DefaultTestTimeout = 3 * time.Second
	// DefaultWorkflowRunTimeout is the run timeout, in workflow time, of
	// a run started without one (SetWorkflowRunTimeout): ten years, as in
	// Temporal. A run that waits for what never comes (a signal no
	// callback sends) so times out, the clock skipping to it, instead of
	// ExecuteWorkflow panicking after the test timeout.
	DefaultWorkflowRunTimeout = 10 * 365 * 24 * time.Hour
)

// leaseTTL is the lease of every job the environment's workers claim: so
// long that no jump of the clock lets a lease expire under a worker that
// holds it (the driver may move the clock while a run's activities run).
const leaseTTL = 100 * 365 * 24 * time.Hour

// workerOptions are the options of the environment's workers: the user's
// (SetWorkerOptions), with the clock, the lease and the retry threshold
// the driver relies on.
func workerOptions(base worker.Options, clk workerClock, onError func(error)) worker.Options {
	o := base
	o.Clock = clk
	o.LeaseTTL = leaseTTL
	// Every activity retry delay becomes a durable timer, which the
	// driver skips, instead of a sleep inside the worker.
	o.RetryInlineThreshold = time.Nanosecond
	user := base.OnError
	o.OnError = func(job engine.JobID, err error) {
		onError(err)
		if user != nil {
			user(job, err)
		}
	}
	return o
}
