package workflow

import (
	"time"

	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/replay"
)

// testEnvKey carries the sdk/testsuite environment a test run's code runs
// in (sdkhook.TestEnv); production code never has one.
type testEnvKey struct{}

func init() {
	sdkhook.WithTestEnv = func(ctx any, env sdkhook.TestEnv) any {
		wctx := ctx.(Context)
		// The coroutines of update handlers start from the root context,
		// not from the workflow function's, so the run keeps the env too.
		if st, ok := wctx.Value(stateKey{}).(*state); ok {
			st.testEnv = env
		}
		return WithValue(wctx, testEnvKey{}, env)
	}
}

func testEnvOf(ctx Context) sdkhook.TestEnv {
	if env, ok := ctx.Value(testEnvKey{}).(sdkhook.TestEnv); ok {
		return env
	}
	if st, ok := ctx.Value(stateKey{}).(*state); ok {
		return st.testEnv
	}
	return nil
}

// externalOutcome is what a test environment answered for a signal or
// cancel request to another workflow, recorded as a side effect.
type externalOutcome struct {
	Handled bool   `json:"handled"`
	Failure []byte `json:"failure,omitempty"`
}

// mockedExternal asks the test environment about an external signal or
// cancel request once, recording the answer as a side effect so that a
// replay takes the same path. ok is false when the command goes to the
// engine as in production.
func mockedExternal(ctx Context, te sdkhook.TestEnv, kind replay.CommandKind, workflowID, runID, name string, args []any) (Future, bool) {
	signal := kind == replay.KindSignalExternal
	if !te.MocksExternal(signal) {
		return nil, false
	}
	var o externalOutcome
	err := sideEffect(ctx, func(Context) any {
		var arg any
		if len(args) > 0 {
			arg = args[0]
		}
		handled, err := te.External(signal, workflowID, runID, name, arg)
		out := externalOutcome{Handled: handled}
		if handled && err != nil {
			out.Failure = sdkhook.EncodeFailure(err)
		}
		return out
	}).Get(&o)
	if err == nil && !o.Handled {
		return nil, false
	}
	f, set := newCommandFuture()
	switch {
	case err != nil:
		set(nil, err)
	case o.Failure != nil:
		set(nil, sdkhook.DecodeFailure(o.Failure))
	default:
		set(nil, nil)
	}
	return f, true
}

// testMaximumAttempts is the MaximumAttempts an activity's retry policy
// gets in a test environment when it sets none.
const testMaximumAttempts = 10

// testRetryPolicy is the retry policy an activity runs with in a test
// environment, as in Temporal's: the fields p leaves zero get an initial
// interval of a second, a maximum interval equal to the initial one, a
// coefficient of 2 and, above all, ten attempts rather than unlimited
// ones, because the test clock skips every retry delay and an activity
// that always fails would otherwise retry without end. p is not changed.
func testRetryPolicy(p *RetryPolicy) *RetryPolicy {
	var rp RetryPolicy
	if p != nil {
		rp = *p
	}
	if rp.InitialInterval <= 0 {
		rp.InitialInterval = time.Second
	}
	if rp.MaximumInterval <= 0 {
		rp.MaximumInterval = rp.InitialInterval
	}
	if rp.BackoffCoefficient == 0 {
		rp.BackoffCoefficient = 2
	}
	if rp.MaximumAttempts == 0 {
		rp.MaximumAttempts = testMaximumAttempts
	}
	return &rp
}
