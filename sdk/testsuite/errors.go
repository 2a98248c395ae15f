package testsuite

import "errors"

// Sentinel errors of the test environment, matched with errors.Is.
var (
	// ErrNotCompleted: the workflow has not completed, so it has no result
	// or error yet (ExecuteWorkflow was not called, or did not finish).
	ErrNotCompleted = errors.New("testsuite: the workflow is not completed")
	// ErrUnknownWorkflow: no run of the workflow id was started in this
	// environment.
	ErrUnknownWorkflow = errors.New("testsuite: no such workflow in this environment")
)

// MockErrorType is the ApplicationError type of an activity or workflow
// failure that a mock caused rather than the code under test: a call that
// matched no OnActivity or OnWorkflow expectation, a Panic or Never
// expectation that was called, or a Return whose values do not fit the
// function. Such failures are not retried.
const MockErrorType = "MockError"
