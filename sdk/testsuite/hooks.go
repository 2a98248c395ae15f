package testsuite

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync"

	"github.com/stretchr/testify/mock"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// testHooks is what the environment lends workflow code through
// sdkhook.TestEnv: mocked versions and the last completion result.
type testHooks struct {
	mu         sync.Mutex
	lastResult []byte
	hasLast    bool
}

// mockMethodGetVersion names the mock method of OnGetVersion for a change
// id, as Temporal's does; mock.Anything as the change id mocks them all.
func mockMethodGetVersion(changeID string) string { return "workflow.GetVersion_" + changeID }

// OnGetVersion sets up a mock of workflow.GetVersion for changeID (or for
// every change id, with mock.Anything; a mock of the id itself is tried
// first). Return gives the workflow.Version a new run records, or a
// func(changeID string, minSupported, maxSupported workflow.Version)
// workflow.Version. Without a mock GetVersion records maxSupported, as in
// Temporal, so this is how a test reaches the code of an older version.
// The mock is asked once per change id and run, when the version is
// recorded; a replay of the run sees the recorded version.
func (env *TestWorkflowEnvironment) OnGetVersion(changeID string, minSupported, maxSupported workflow.Version) *MockCallWrapper {
	method := mockMethodGetVersion(changeID)
	env.mocks.expect(true, method)
	w := &MockCallWrapper{call: env.workflowMock.On(method, changeID, minSupported, maxSupported), env: env}
	w.call.Run(func(args mock.Arguments) {
		if w.runFn != nil {
			w.runFn(args)
		}
	})
	return w
}

// SetLastCompletionResult sets what workflow.GetLastCompletionResult
// returns to the workflow ExecuteWorkflow runs (and HasLastCompletionResult
// reports true), as if an earlier run of its cron chain had completed with
// result. It panics when result does not encode.
func (env *TestWorkflowEnvironment) SetLastCompletionResult(result any) {
	data, err := converter.Encode(result)
	if err != nil {
		panic(fmt.Sprintf("testsuite: SetLastCompletionResult: %v", err))
	}
	env.hooks.mu.Lock()
	defer env.hooks.mu.Unlock()
	env.hooks.lastResult, env.hooks.hasLast = data, true
}

// envHooks implements sdkhook.TestEnv for an environment.
type envHooks struct{ env *TestWorkflowEnvironment }

func (h envHooks) GetVersion(changeID string, minSupported, maxSupported int) (int, bool) {
	env := h.env
	for _, method := range []string{mockMethodGetVersion(changeID), mockMethodGetVersion(mock.Anything)} {
		if !env.mocks.has(true, method) {
			continue
		}
		minV, maxV := workflow.Version(minSupported), workflow.Version(maxSupported)
		args := []reflect.Value{reflect.ValueOf(changeID), reflect.ValueOf(minV), reflect.ValueOf(maxV)}
		ret, err := methodCalled(&env.workflowMock, method, args)
		if err != nil {
			panic(fmt.Sprintf("testsuite: the mock of GetVersion %q: %v", changeID, err))
		}
		if len(ret) == 1 {
			switch v := ret[0].(type) {
			case workflow.Version:
				return int(v), true
			case func(string, workflow.Version, workflow.Version) workflow.Version:
				return int(v(changeID, minV, maxV)), true
			}
		}
		panic(fmt.Sprintf("testsuite: the mock of GetVersion %q returns %v, not one workflow.Version or a func(string, workflow.Version, workflow.Version) workflow.Version", changeID, ret))
	}
	return 0, false
}

func (h envHooks) LastCompletionResult(workflowID string) ([]byte, bool) {
	env := h.env
	root := env.startOpts.ID
	if root == "" {
		root = DefaultWorkflowID
	}
	env.hooks.mu.Lock()
	defer env.hooks.mu.Unlock()
	if workflowID != root || !env.hooks.hasLast {
		return nil, false
	}
	return env.hooks.lastResult, true
}

// withTestEnv gives a workflow function's context the environment's hooks.
func (env *TestWorkflowEnvironment) withTestEnv(args []reflect.Value) []reflect.Value {
	if len(args) == 0 {
		return args
	}
	ctx, ok := args[0].Interface().(workflow.Context)
	if !ok {
		return args
	}
	out := slices.Clone(args)
	out[0] = reflect.ValueOf(sdkhook.WithTestEnv(ctx, envHooks{env: env}).(workflow.Context))
	return out
}

// The mock methods of external signals and cancel requests, as Temporal
// names them.
const (
	mockMethodSignalExternal = "workflow.SignalExternalWorkflow"
	mockMethodCancelExternal = "workflow.RequestCancelExternalWorkflow"
)

// OnSignalExternalWorkflow sets up a mock of workflow.SignalExternalWorkflow
// to workflows that do not run in the environment (a signal to one that
// does, a child say, is delivered). The arguments are matched as testify
// matches them: namespace (heddle's is "default"), workflow id, run id,
// signal name and the signal's argument. Return gives the send's error
// (nil: sent), or a func(namespace, workflowID, runID, signalName string,
// arg any) error. A signal no expectation matches fails with type
// MockErrorType. The mock is asked once per send; replays see the recorded
// outcome.
func (env *TestWorkflowEnvironment) OnSignalExternalWorkflow(namespace, workflowID, runID, signalName, arg any) *MockCallWrapper {
	return env.onExternal(mockMethodSignalExternal, namespace, workflowID, runID, signalName, arg)
}

// OnRequestCancelExternalWorkflow is OnSignalExternalWorkflow for
// workflow.RequestCancelExternalWorkflow: it matches namespace, workflow
// id and run id, and Return gives an error or a func(namespace, workflowID,
// runID string) error.
func (env *TestWorkflowEnvironment) OnRequestCancelExternalWorkflow(namespace, workflowID, runID string) *MockCallWrapper {
	return env.onExternal(mockMethodCancelExternal, namespace, workflowID, runID)
}

func (env *TestWorkflowEnvironment) onExternal(method string, args ...any) *MockCallWrapper {
	env.mocks.expect(true, method)
	w := &MockCallWrapper{call: env.workflowMock.On(method, args...), env: env}
	w.call.Run(func(args mock.Arguments) {
		if w.runFn != nil {
			w.runFn(args)
		}
	})
	return w
}

func (h envHooks) MocksExternal(signal bool) bool {
	if signal {
		return h.env.mocks.has(true, mockMethodSignalExternal)
	}
	return h.env.mocks.has(true, mockMethodCancelExternal)
}

// External sends to the engine what targets an open run of the
// environment and asks the mock about the rest, as Temporal's environment
// does.
func (h envHooks) External(signal bool, workflowID, runID, signalName string, arg any) (bool, error) {
	env := h.env
	if env.runsWorkflow(workflowID, runID) {
		return false, nil
	}
	const namespace = "default"
	method := mockMethodCancelExternal
	args := []reflect.Value{reflect.ValueOf(namespace), reflect.ValueOf(workflowID), reflect.ValueOf(runID)}
	if signal {
		method = mockMethodSignalExternal
		args = append(args, reflect.ValueOf(signalName), reflect.ValueOf(&arg).Elem())
	}
	ret, err := methodCalled(&env.workflowMock, method, args)
	if err != nil {
		return true, err
	}
	if len(ret) != 1 {
		return true, mockError("the mock of %s returns %d values, want one error or function", method, len(ret))
	}
	switch r := ret[0].(type) {
	case nil:
		return true, nil
	case error:
		return true, r
	case func(string, string, string, string, any) error:
		return true, r(namespace, workflowID, runID, signalName, arg)
	case func(string, string, string) error:
		return true, r(namespace, workflowID, runID)
	}
	return true, mockError("the mock of %s returns a %T, not an error or a function of the call", method, ret[0])
}

// runsWorkflow reports whether an open run of workflowID (runID "" for any)
// is in the environment's engine.
func (env *TestWorkflowEnvironment) runsWorkflow(workflowID, runID string) bool {
	env.mu.Lock()
	lr := env.run
	env.mu.Unlock()
	if lr == nil {
		return false
	}
	t := engine.Target{WorkflowID: workflowID}
	if id, err := strconv.ParseUint(runID, 10, 64); err == nil && id > 0 {
		t = engine.Target{Job: engine.JobID(id)}
	}
	j, err := lr.eng.Describe(context.Background(), t)
	return err == nil && !j.Status.Terminal()
}
