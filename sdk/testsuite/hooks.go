package testsuite

import (
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/stretchr/testify/mock"

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
