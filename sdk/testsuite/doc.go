// Package testsuite runs workflows and activities in unit tests on heddle's
// real in-memory engine and worker, with mocked activities and child
// workflows and a clock that skips ahead while everything waits.
//
// It is shaped like Temporal's go.temporal.io/sdk/testsuite, so a Temporal
// test file ports by swapping imports:
//
//	type UnitTestSuite struct {
//		suite.Suite
//		testsuite.WorkflowTestSuite
//		env *testsuite.TestWorkflowEnvironment
//	}
//
//	func (s *UnitTestSuite) SetupTest()                   { s.env = s.NewTestWorkflowEnvironment() }
//	func (s *UnitTestSuite) AfterTest(suiteName, testName string) { s.env.AssertExpectations(s.T()) }
//
//	func (s *UnitTestSuite) TestOrder() {
//		s.env.OnActivity(Charge, mock.Anything, 42).Return("C-42", nil)
//		s.env.ExecuteWorkflow(OrderWorkflow, 42)
//		s.True(s.env.IsWorkflowCompleted())
//		s.NoError(s.env.GetWorkflowError())
//	}
//
// Each TestWorkflowEnvironment runs one workflow. ExecuteWorkflow opens an
// in-memory engine, starts the run and a worker for each task queue it
// needs, and drives it until the run ends; then it closes the engine, and
// what the test reads afterwards (results, queries) comes from the run's
// recorded histories. Nothing is simulated: timers are the engine's
// durable timers, signals and cancel requests are the engine's commands,
// and activities run in the worker under their real timeouts and retry
// policies.
//
// Time is a manual clock that starts at the real time (or SetStartTime)
// and moves only in two ways:
//   - when every run is idle — waiting for a timer, a retry delay, a
//     deadline, a delayed callback or a mocked call's After, with no
//     activity code running and nothing left to claim — it jumps to the
//     earliest of those, so a workflow that sleeps for a day finishes in
//     milliseconds;
//   - while activity code runs, the next of those falls due after as much
//     real time, as in Temporal's test environment.
//
// Workflow time (workflow.Now) is the clock's time when each history event
// was written, so it does not move while activities or workflow code run.
package testsuite
