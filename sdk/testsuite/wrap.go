package testsuite

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/stretchr/testify/mock"

	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// The workers run wrappers of the registered functions, of the same types
// (reflect.MakeFunc), so that the worker decodes and validates arguments
// exactly as it does for the functions themselves. A wrapper calls the
// mock when the name has expectations and the function otherwise; an
// activity's wrapper also tells the driver while activity code runs, since
// the clock must not skip ahead of running code.

// wrapActivity returns the function the workers run for activity name.
func (env *TestWorkflowEnvironment) wrapActivity(name string, fn any) any {
	v := reflect.ValueOf(fn)
	t := v.Type()
	return reflect.MakeFunc(t, func(args []reflect.Value) []reflect.Value {
		run := runOf(args)
		env.activityStarted(run)
		defer env.activityEnded(run)
		args, inline := env.withInlineToken(args)
		call, args := env.startActivityCall(args)
		out := env.callActivity(name, v, args)
		if inline != nil {
			out = env.settleInline(args[0].Interface().(context.Context), run, inline, t, out)
		}
		call.end(out)
		return out
	}).Interface()
}

// callActivity calls activity name's mock when it has expectations, and
// its function v otherwise.
func (env *TestWorkflowEnvironment) callActivity(name string, v reflect.Value, args []reflect.Value) []reflect.Value {
	t := v.Type()
	if !env.mocks.has(false, name) {
		return v.Call(args)
	}
	ret, err := methodCalled(&env.activityMock, name, args)
	if err != nil {
		return failWith(t, err)
	}
	return mockResults(name, t, ret, args)
}

// wrapWorkflow returns the function the workers run for workflow name. A
// mocked call runs the mock inside workflow.SideEffect, so it is called
// once per run and a replay returns the recorded outcome.
func (env *TestWorkflowEnvironment) wrapWorkflow(name string, fn any) any {
	v := reflect.ValueOf(fn)
	t := v.Type()
	return reflect.MakeFunc(t, func(args []reflect.Value) []reflect.Value {
		args = env.withTestEnv(args)
		if !env.mocks.has(true, name) || len(args) == 0 {
			return v.Call(args)
		}
		ctx, ok := args[0].Interface().(workflow.Context)
		if !ok {
			return v.Call(args) // not a workflow function: the worker says so
		}
		var handle int
		err := workflow.SideEffect(ctx, func(workflow.Context) any { return env.callWorkflowMock(name, args) }).Get(&handle)
		if err != nil {
			return failWith(t, err)
		}
		o, ok := env.mocks.outcome(handle)
		if !ok {
			return failWith(t, mockError("the recorded outcome %d of the mock of %s is not in this environment", handle, name))
		}
		if o.after > 0 {
			if err := workflow.Sleep(ctx, o.after); err != nil {
				return failWith(t, err)
			}
		}
		if o.err != nil {
			return failWith(t, o.err)
		}
		return mockResults(name, t, o.ret, args)
	}).Interface()
}

// callWorkflowMock calls the workflow mock and keeps its outcome under a
// handle, which the workflow records.
func (env *TestWorkflowEnvironment) callWorkflowMock(name string, args []reflect.Value) int {
	m := &env.mocks
	m.call.Lock()
	defer m.call.Unlock()
	m.matched = nil
	ret, err := methodCalled(&env.workflowMock, name, args)
	o := mockOutcome{ret: ret, err: err}
	if m.matched != nil {
		o.after = m.matched.wait()
	}
	return m.keep(o)
}

// methodCalled calls the mock, turning its panics (a call that matches no
// expectation, Panic, Never) into an error.
func methodCalled(m *mock.Mock, name string, args []reflect.Value) (ret mock.Arguments, err error) {
	in := make([]any, len(args))
	for i, a := range args {
		in[i] = a.Interface()
	}
	defer func() {
		if p := recover(); p != nil {
			ret, err = nil, mockError("%v", p)
		}
	}()
	return m.MethodCalled(name, in...), nil
}

// mockResults turns what a mock returned into the results of a function of
// type t: a replacement function of type t is called with args; values are
// checked against t's results.
func mockResults(name string, t reflect.Type, ret mock.Arguments, args []reflect.Value) []reflect.Value {
	if len(ret) == 1 {
		if fn := reflect.ValueOf(ret[0]); fn.IsValid() && fn.Kind() == reflect.Func {
			if fn.Type() != t {
				return failWith(t, mockError("the mock of %s returns a function of type %s, not of the mocked type %s", name, fn.Type(), t))
			}
			return fn.Call(args)
		}
	}
	out, err := mockValues(name, t, ret)
	if err != nil {
		return failWith(t, err)
	}
	return out
}

// mockValues checks the values a mock returned against t's results.
func mockValues(name string, t reflect.Type, ret mock.Arguments) ([]reflect.Value, error) {
	n := t.NumOut()
	if len(ret) != n {
		return nil, mockError("the mock of %s returns %d values; %s returns %d", name, len(ret), t, n)
	}
	out := make([]reflect.Value, n)
	switch e := ret[n-1].(type) {
	case nil:
		out[n-1] = reflect.Zero(errorType)
	case error:
		out[n-1] = reflect.ValueOf(&e).Elem()
	default:
		return nil, mockError("the mock of %s returns %T (%v) where %s returns an error", name, e, e, t)
	}
	if n == 2 {
		want := t.Out(0)
		switch r := ret[0]; {
		case r == nil:
			switch want.Kind() {
			case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice:
				out[0] = reflect.Zero(want)
			default:
				return nil, mockError("the mock of %s returns nil where %s returns a %s", name, t, want)
			}
		case reflect.TypeOf(r).AssignableTo(want):
			v := reflect.New(want).Elem()
			v.Set(reflect.ValueOf(r))
			out[0] = v
		default:
			return nil, mockError("the mock of %s returns %T (%v) where %s returns a %s", name, r, r, t, want)
		}
	}
	return out, nil
}

// failWith returns t's zero results with err.
func failWith(t reflect.Type, err error) []reflect.Value {
	out := make([]reflect.Value, t.NumOut())
	for i := range out {
		out[i] = reflect.Zero(t.Out(i))
	}
	out[len(out)-1] = reflect.ValueOf(&err).Elem()
	return out
}

// mockError is the failure a mock causes: not retried, with type
// MockErrorType.
func mockError(format string, args ...any) error {
	return workflow.NewApplicationError(fmt.Sprintf("testsuite: "+format, args...), MockErrorType, true)
}

// runOf returns the id of the job running the call whose arguments are
// args (jobOf), or "" when the function takes no context.
func runOf(args []reflect.Value) string {
	if len(args) == 0 {
		return ""
	}
	ctx, ok := args[0].Interface().(context.Context)
	if !ok || ctx == nil {
		return ""
	}
	return jobOf(ctx)
}

// jobOf returns the id of the job running the activity of ctx: its
// workflow's run for an inline activity, the activity task's own job for
// one on another task queue (activity.Info.RunID names the calling
// workflow's run there, as in Temporal; the task token names the task).
func jobOf(ctx context.Context) string {
	info := activity.GetInfo(ctx)
	if info.TaskToken != nil {
		if t, err := sdkhook.DecodeTaskToken(info.TaskToken); err == nil {
			return runID(t.Job)
		}
	}
	return info.RunID
}

// activityStarted and activityEnded bracket activity code (real or mocked)
// running in a worker for run.
func (env *TestWorkflowEnvironment) activityStarted(run string) {
	env.mu.Lock()
	env.running[run]++
	env.mu.Unlock()
	env.poke()
}

func (env *TestWorkflowEnvironment) activityEnded(run string) {
	env.mu.Lock()
	if env.running[run]--; env.running[run] == 0 {
		delete(env.running, run)
	}
	env.mu.Unlock()
	env.poke()
}

// sleepOnClock waits until the environment's clock has moved d, ctx ends
// or the run is over: a mocked activity's After. The driver counts the
// wait as idle, so it may skip to its end.
func (env *TestWorkflowEnvironment) sleepOnClock(ctx context.Context, d time.Duration) {
	lr := env.run
	if lr == nil {
		return
	}
	var done <-chan struct{}
	run := ""
	if ctx != nil {
		done = ctx.Done()
		run = jobOf(ctx)
	}
	env.mu.Lock()
	call := parkedCall{at: env.tl.Now().Add(d), run: run}
	t := env.tl.NewTimer(d)
	env.parked = append(env.parked, call)
	env.mu.Unlock()
	defer t.Stop()
	env.poke()
	defer func() {
		env.mu.Lock()
		if i := slices.Index(env.parked, call); i >= 0 {
			env.parked = slices.Delete(env.parked, i, i+1)
		}
		env.mu.Unlock()
		env.poke()
	}()
	select {
	case <-t.C():
	case <-done:
	case <-lr.closing:
	}
}
