package testsuite

import (
	"fmt"
	"time"

	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// TestActivityEnvironment runs activities on their own, for unit tests of
// activity code. Each ExecuteActivity runs one try of the activity in a
// real worker, scheduled by a small workflow of the environment's own, so
// activity.GetInfo, heartbeats and timeouts behave as in production.
type TestActivityEnvironment struct {
	env         *TestWorkflowEnvironment
	registers   []func(*TestWorkflowEnvironment)
	testTimeout time.Duration
	workerOpts  worker.Options
	onHeartbeat func(info *activity.Info, details converter.EncodedValues)
}

// activityTestTimeout is an activity environment's default test timeout
// and StartToCloseTimeout: activity code runs in real time.
const activityTestTimeout = 10 * time.Minute

// RegisterActivity registers an activity function, or a struct's exported
// methods, as TestWorkflowEnvironment.RegisterActivity does.
func (a *TestActivityEnvironment) RegisterActivity(activityFn any) {
	a.RegisterActivityWithOptions(activityFn, activity.RegisterOptions{})
}

// RegisterActivityWithOptions registers an activity function, or a
// struct's exported methods, with options.
func (a *TestActivityEnvironment) RegisterActivityWithOptions(activityFn any, options activity.RegisterOptions) {
	a.env.RegisterActivityWithOptions(activityFn, options) // panics now on a bad registration
	a.registers = append(a.registers, func(env *TestWorkflowEnvironment) { env.RegisterActivityWithOptions(activityFn, options) })
}

// SetTestTimeout sets how long an activity may run, in real time (its
// StartToCloseTimeout); the default is ten minutes.
func (a *TestActivityEnvironment) SetTestTimeout(idleTimeout time.Duration) *TestActivityEnvironment {
	a.testTimeout = idleTimeout
	return a
}

// SetWorkerOptions sets the options of the worker the activity runs in,
// as TestWorkflowEnvironment.SetWorkerOptions does.
func (a *TestActivityEnvironment) SetWorkerOptions(options worker.Options) *TestActivityEnvironment {
	a.workerOpts = options
	return a
}

// SetOnActivityHeartbeatListener sets a function called with the details
// of the activity's heartbeats, as Temporal's worker would send them: see
// TestWorkflowEnvironment.SetOnActivityHeartbeatListener.
func (a *TestActivityEnvironment) SetOnActivityHeartbeatListener(
	listener func(activityInfo *activity.Info, details converter.EncodedValues)) *TestActivityEnvironment {
	a.onHeartbeat = listener
	return a
}

// ExecuteActivity runs one try of activityFn (a function, registered if it
// is not yet, or a registered name) with args and returns its result, or
// the error a workflow would get from it: a *workflow.ActivityError that
// wraps the activity's failure. Failures are not retried.
func (a *TestActivityEnvironment) ExecuteActivity(activityFn any, args ...any) (converter.EncodedValue, error) {
	name, ok := activityFn.(string)
	if !ok {
		name = functionName("activity", activityFn)
		if a.env.activities[name] == nil {
			a.RegisterActivity(activityFn)
		}
	}
	registered(a.env.activities, "activity", name)
	// The arguments travel to the runner workflow as one stored list and on
	// to the activity as its payloads, so each keeps its encoding (a []byte
	// as binary/plain, a protobuf message as json/protobuf).
	input, err := converter.Encode(args...)
	if err != nil {
		return nil, fmt.Errorf("testsuite: ExecuteActivity %s: %w", name, err)
	}
	timeout := a.testTimeout
	if timeout <= 0 {
		timeout = activityTestTimeout
	}
	env := newEnvironment(a.env.logger)
	for _, r := range a.registers {
		r(env)
	}
	env.SetTestTimeout(timeout)
	env.SetWorkerOptions(a.workerOpts)
	env.SetOnActivityHeartbeatListener(a.onHeartbeat)
	var actErr error
	// The runner returns the activity's result as the list bytes it was
	// stored as (nil for no value), which keep its payload's encoding.
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context, name string, input []byte) ([]byte, error) {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: timeout,
			RetryPolicy: &workflow.RetryPolicy{MaximumAttempts: 1}})
		args, err := converter.RawValues(input)
		if err != nil {
			return nil, err
		}
		in := make([]any, len(args))
		for i, arg := range args {
			in[i] = arg
		}
		var out converter.RawValue
		if err := workflow.ExecuteActivity(ctx, name, in...).Get(ctx, &out); err != nil {
			actErr = err
			return nil, err
		}
		if out.Payload() == nil {
			return nil, nil
		}
		return converter.Encode(out)
	}, workflow.RegisterOptions{Name: activityRunner})
	env.ExecuteWorkflow(activityRunner, name, input)
	if actErr != nil {
		return nil, actErr
	}
	var out []byte
	if err := env.GetWorkflowResult(&out); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return converter.NewEncodedValue(nil), nil // no value: HasValue is false
	}
	return converter.NewEncodedValue(out), nil
}

// activityRunner is the workflow type that runs a TestActivityEnvironment's
// activity.
const activityRunner = "testsuite.ActivityRunner"
