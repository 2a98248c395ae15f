package workflow

import (
	"github.com/heddlewf/heddle/internal/replay"
	"github.com/heddlewf/heddle/internal/sdkhook"
)

// testEnvKey carries the sdk/testsuite environment a test run's code runs
// in (sdkhook.TestEnv); production code never has one.
type testEnvKey struct{}

func init() {
	sdkhook.WithTestEnv = func(ctx any, env sdkhook.TestEnv) any {
		return WithValue(ctx.(Context), testEnvKey{}, env)
	}
}

func testEnvOf(ctx Context) sdkhook.TestEnv {
	env, _ := ctx.Value(testEnvKey{}).(sdkhook.TestEnv)
	return env
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
