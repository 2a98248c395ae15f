package testsuite

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/stretchr/testify/mock"
)

// MockCallWrapper is one expectation set with OnActivity or OnWorkflow: a
// testify mock.Call whose After waits on the environment's clock (so it
// is skipped like a timer) instead of the real one.
type MockCallWrapper struct {
	call         *mock.Call
	env          *TestWorkflowEnvironment
	runFn        func(args mock.Arguments)
	waitDuration func() time.Duration
}

// mockTable is what the wrappers ask of the mocks: which names have
// expectations, and the outcomes of mocked workflow calls, which the
// workflow records in its history by handle so that a replay gives the
// same outcome without calling the mock again.
type mockTable struct {
	mu         sync.Mutex
	workflows  map[string]bool
	activities map[string]bool
	next       int
	outcomes   map[int]mockOutcome

	// call serializes mocked workflow calls, so that matched is the
	// expectation of the call in progress.
	call    sync.Mutex
	matched *MockCallWrapper
}

// mockOutcome is what one mocked workflow call returned.
type mockOutcome struct {
	ret   mock.Arguments
	after time.Duration
	err   error // the call matched nothing, or panicked
}

func (m *mockTable) has(workflow bool, name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if workflow {
		return m.workflows[name]
	}
	return m.activities[name]
}

func (m *mockTable) expect(workflow bool, name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if workflow {
		m.workflows[name] = true
	} else {
		m.activities[name] = true
	}
}

func (m *mockTable) keep(o mockOutcome) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.next++
	m.outcomes[m.next] = o
	return m.next
}

func (m *mockTable) outcome(handle int) (mockOutcome, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.outcomes[handle]
	return o, ok
}

// OnActivity sets up a mock of an activity, given as a function (which is
// registered if it is not yet) or a registered name. args are matched
// against the call's arguments as testify's mock.On matches them — the
// context first, when the activity takes one, so usually mock.Anything —
// and Return gives either the values the activity returns or a function of
// the activity's own type to call in its place:
//
//	env.OnActivity(Charge, mock.Anything, 42).Return("C-42", nil)
//	env.OnActivity(Charge, mock.Anything, mock.Anything).Return(
//		func(ctx context.Context, amount int) (string, error) { return fmt.Sprint("C-", amount), nil })
//
// Once an activity has an expectation, every call of it must match one:
// a call that matches none fails the activity (not retried, with type
// MockErrorType). An activity with no expectation runs its real code.
func (env *TestWorkflowEnvironment) OnActivity(activity any, args ...any) *MockCallWrapper {
	var name string
	if s, ok := activity.(string); ok {
		name = registered(env.activities, "activity", s).name
	} else {
		env.mustNotHaveStarted("OnActivity with a function")
		name = env.registerQuietly(env.activities, "activity", activity, env.wrapActivity)
	}
	env.mocks.expect(false, name)
	w := &MockCallWrapper{call: env.activityMock.On(name, args...), env: env}
	w.call.Run(func(args mock.Arguments) {
		if d := w.wait(); d > 0 {
			ctx, _ := first(args).(context.Context)
			env.sleepOnClock(ctx, d)
		}
		if w.runFn != nil {
			w.runFn(args)
		}
	})
	return w
}

// OnWorkflow sets up a mock of a child workflow (or of the workflow
// itself), given as a function (registered if it is not yet) or a
// registered name. It works as OnActivity does, with a workflow.Context
// first among the arguments: Return gives the workflow's result values or a
// function of its type, which then runs as the workflow's code. The mock is
// called once per run; the outcome is recorded in the run's history, so a
// replay (a query, a cache miss) gives it again without a second call.
func (env *TestWorkflowEnvironment) OnWorkflow(workflow any, args ...any) *MockCallWrapper {
	var name string
	if s, ok := workflow.(string); ok {
		name = registered(env.workflows, "workflow", s).name
	} else {
		env.mustNotHaveStarted("OnWorkflow with a function")
		name = env.registerQuietly(env.workflows, "workflow", workflow, env.wrapWorkflow)
	}
	env.mocks.expect(true, name)
	w := &MockCallWrapper{call: env.workflowMock.On(name, args...), env: env}
	w.call.Run(func(args mock.Arguments) {
		env.mocks.matched = w
		if w.runFn != nil {
			w.runFn(args)
		}
	})
	return w
}

func first(args mock.Arguments) any {
	if len(args) == 0 {
		return nil
	}
	return args[0]
}

func (c *MockCallWrapper) wait() time.Duration {
	if c.waitDuration == nil {
		return 0
	}
	return c.waitDuration()
}

// Once makes the expectation match one call only.
func (c *MockCallWrapper) Once() *MockCallWrapper { return c.Times(1) }

// Twice makes the expectation match two calls only.
func (c *MockCallWrapper) Twice() *MockCallWrapper { return c.Times(2) }

// Times makes the expectation match i calls only; AssertExpectations
// fails if fewer happened.
func (c *MockCallWrapper) Times(i int) *MockCallWrapper {
	c.call.Times(i)
	return c
}

// Never makes a call that matches the expectation fail (and the
// expectation optional for AssertExpectations).
func (c *MockCallWrapper) Never() *MockCallWrapper {
	c.call.Maybe()
	c.call.Panic(fmt.Sprintf("unexpected call: %s(%s)", c.call.Method, c.call.Arguments.String()))
	return c
}

// Maybe makes the expectation optional: AssertExpectations does not fail
// when it was never called.
func (c *MockCallWrapper) Maybe() *MockCallWrapper {
	c.call.Maybe()
	return c
}

// Run sets a function called with the call's arguments before the mock
// returns (after the After wait).
func (c *MockCallWrapper) Run(fn func(args mock.Arguments)) *MockCallWrapper {
	c.runFn = fn
	return c
}

// After makes the mock return d later on the environment's clock: a mocked
// activity waits as if it ran that long (and the clock skips the wait when
// nothing else is going on); a mocked workflow sleeps d first.
func (c *MockCallWrapper) After(d time.Duration) *MockCallWrapper {
	c.waitDuration = func() time.Duration { return d }
	return c
}

// AfterFn is After with the wait computed at each call.
func (c *MockCallWrapper) AfterFn(fn func() time.Duration) *MockCallWrapper {
	c.waitDuration = fn
	return c
}

// Return sets what the mock returns: the function's result values (a
// result and an error, or just an error), or one function of the mocked
// function's type, called in its place with the same arguments.
func (c *MockCallWrapper) Return(returnArguments ...any) *MockCallWrapper {
	c.call.Return(returnArguments...)
	return c
}

// Panic makes a call that matches fail with msg (not retried).
func (c *MockCallWrapper) Panic(msg string) *MockCallWrapper {
	c.call.Panic(msg)
	return c
}

// NotBefore makes the expectation match only after the given ones have
// been called as expected.
func (c *MockCallWrapper) NotBefore(calls ...*MockCallWrapper) *MockCallWrapper {
	wrapped := make([]*mock.Call, 0, len(calls))
	for _, call := range calls {
		wrapped = append(wrapped, call.call)
	}
	c.call.NotBefore(wrapped...)
	return c
}

// InOrderMockCalls makes the given expectations match only in this order.
func (env *TestWorkflowEnvironment) InOrderMockCalls(calls ...*MockCallWrapper) {
	for i := 1; i < len(calls); i++ {
		calls[i].NotBefore(calls[i-1])
	}
}

// AssertExpectations asserts that every expectation set with OnActivity and
// OnWorkflow was met: each called (as many times as Times said), unless it
// is optional (Maybe, Never). It reports through t, which *testing.T and
// testify's suite.T() are.
func (env *TestWorkflowEnvironment) AssertExpectations(t mock.TestingT) bool {
	// Both are asserted, so that one failing does not hide the other's.
	wf := env.workflowMock.AssertExpectations(t)
	act := env.activityMock.AssertExpectations(t)
	return wf && act
}

// AssertCalled asserts that a workflow or an activity with expectations
// was called with arguments (the context first, usually mock.Anything).
func (env *TestWorkflowEnvironment) AssertCalled(t mock.TestingT, methodName string, arguments ...any) bool {
	if env.mocks.has(true, methodName) {
		return env.workflowMock.AssertCalled(t, methodName, arguments...)
	}
	return env.activityMock.AssertCalled(t, methodName, arguments...)
}

// AssertNotCalled asserts that a workflow or an activity with expectations
// was not called with arguments.
func (env *TestWorkflowEnvironment) AssertNotCalled(t mock.TestingT, methodName string, arguments ...any) bool {
	if env.mocks.has(true, methodName) {
		return env.workflowMock.AssertNotCalled(t, methodName, arguments...)
	}
	return env.activityMock.AssertNotCalled(t, methodName, arguments...)
}

// AssertNumberOfCalls asserts how often a workflow or an activity with
// expectations was called.
func (env *TestWorkflowEnvironment) AssertNumberOfCalls(t mock.TestingT, methodName string, expectedCalls int) bool {
	if env.mocks.has(true, methodName) {
		return env.workflowMock.AssertNumberOfCalls(t, methodName, expectedCalls)
	}
	return env.activityMock.AssertNumberOfCalls(t, methodName, expectedCalls)
}

// AssertActivityCalled is AssertCalled for activities only.
func (env *TestWorkflowEnvironment) AssertActivityCalled(t mock.TestingT, methodName string, arguments ...any) bool {
	return env.activityMock.AssertCalled(t, methodName, arguments...)
}

// AssertActivityNotCalled is AssertNotCalled for activities only.
func (env *TestWorkflowEnvironment) AssertActivityNotCalled(t mock.TestingT, methodName string, arguments ...any) bool {
	return env.activityMock.AssertNotCalled(t, methodName, arguments...)
}

// AssertActivityNumberOfCalls is AssertNumberOfCalls for activities only.
func (env *TestWorkflowEnvironment) AssertActivityNumberOfCalls(t mock.TestingT, methodName string, expectedCalls int) bool {
	return env.activityMock.AssertNumberOfCalls(t, methodName, expectedCalls)
}

// AssertWorkflowCalled is AssertCalled for workflows only.
func (env *TestWorkflowEnvironment) AssertWorkflowCalled(t mock.TestingT, methodName string, arguments ...any) bool {
	return env.workflowMock.AssertCalled(t, methodName, arguments...)
}

// AssertWorkflowNotCalled is AssertNotCalled for workflows only.
func (env *TestWorkflowEnvironment) AssertWorkflowNotCalled(t mock.TestingT, methodName string, arguments ...any) bool {
	return env.workflowMock.AssertNotCalled(t, methodName, arguments...)
}

// AssertWorkflowNumberOfCalls is AssertNumberOfCalls for workflows only.
func (env *TestWorkflowEnvironment) AssertWorkflowNumberOfCalls(t mock.TestingT, methodName string, expectedCalls int) bool {
	return env.workflowMock.AssertNumberOfCalls(t, methodName, expectedCalls)
}
