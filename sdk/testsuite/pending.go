package testsuite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/converter"
)

// In Temporal's test environment any activity may return
// activity.ErrResultPending and be completed later with CompleteActivity.
// In heddle an activity of its workflow's own task queue runs inline, in
// the workflow's turn, and has no task token, so a worker fails it
// (ResultPendingInline). The environment closes that gap for tests: it
// hands such an activity a token of its own (activity.GetInfo's TaskToken)
// and, when the activity returns ErrResultPending, holds its call until
// CompleteActivity names that token, the activity's context ends or the
// run is over. The held call is idle for the driver, so the clock may skip
// to the delayed callback that completes it.

// inlineTokenPrefix starts the tokens the environment hands to inline
// activities; sdkhook.DecodeTaskToken refuses them, so they are never
// taken for an activity task's.
const inlineTokenPrefix = "heddle-testsuite-inline:"

// pendingCalls are the inline activity calls holding a token, by token.
type pendingCalls struct {
	mu    sync.Mutex
	next  int
	waits map[string]*inlineCall
}

// inlineCall is an inline activity call holding a token.
type inlineCall struct {
	token string
	done  chan completion // CompleteActivity's, buffered
	// call is the call's entry in the environment's parked calls while
	// it waits for its completion; parked says it is there. Guarded by
	// the environment's mu: CompleteActivity takes the call off at once,
	// so that the driver, looking again, sees it running.
	call   parkedCall
	parked bool
}

// completion is what CompleteActivity gave for a token.
type completion struct {
	result any
	err    error
}

// tokenEnv is an inline activity's environment with the token the test
// environment handed it.
type tokenEnv struct {
	activityEnv
	token []byte
}

func (e tokenEnv) Info() activity.Info {
	info := e.activityEnv.Info()
	info.TaskToken = append([]byte(nil), e.token...)
	return info
}

// withInlineToken gives an inline activity's call (args, its context first)
// a token of the environment's. ic is nil when the call takes no context
// or already has a token (an activity task).
func (env *TestWorkflowEnvironment) withInlineToken(args []reflect.Value) ([]reflect.Value, *inlineCall) {
	if len(args) == 0 {
		return args, nil
	}
	ctx, ok := args[0].Interface().(context.Context)
	if !ok || ctx == nil || !activity.IsActivity(ctx) {
		return args, nil
	}
	inner, ok := ctx.Value(sdkhook.ActivityEnvKey{}).(activityEnv)
	if !ok || inner.Info().TaskToken != nil {
		return args, nil
	}
	p := &env.pending
	p.mu.Lock()
	p.next++
	token := fmt.Sprintf("%s%d", inlineTokenPrefix, p.next)
	if p.waits == nil {
		p.waits = map[string]*inlineCall{}
	}
	ic := &inlineCall{token: token, done: make(chan completion, 1)}
	p.waits[token] = ic
	p.mu.Unlock()
	ctx = context.WithValue(ctx, sdkhook.ActivityEnvKey{}, activityEnv(tokenEnv{activityEnv: inner, token: []byte(token)}))
	out := slices.Clone(args)
	out[0] = reflect.ValueOf(&ctx).Elem()
	return out, ic
}

// settleInline ends an inline call that held a token: when it returned
// ErrResultPending it waits for the completion (which may have come
// already) and returns it as the call's results (of the activity's type
// t); the token is then forgotten.
func (env *TestWorkflowEnvironment) settleInline(ctx context.Context, run string, ic *inlineCall, t reflect.Type, out []reflect.Value) []reflect.Value {
	p := &env.pending
	defer func() {
		p.mu.Lock()
		delete(p.waits, ic.token)
		p.mu.Unlock()
	}()
	err, _ := out[len(out)-1].Interface().(error)
	if !errors.Is(err, activity.ErrResultPending) {
		return out
	}
	lr := env.run
	if lr == nil {
		return out
	}
	select {
	case c := <-ic.done: // completed before it returned
		return c.outcome(t)
	default:
	}
	env.mu.Lock()
	ic.call = parkedCall{run: run} // no time of its own: idle until completed
	ic.parked = true
	env.parked = append(env.parked, ic.call)
	env.mu.Unlock()
	env.poke()
	defer func() {
		env.unparkInline(ic)
		env.poke()
	}()
	select {
	case c := <-ic.done:
		return c.outcome(t)
	case <-ctx.Done():
		return failWith(t, ctx.Err())
	case <-lr.closing:
		return out // the run is over: the worker fails the pending call
	}
}

// outcome is the results of an activity of type t that c completed.
func (c completion) outcome(t reflect.Type) []reflect.Value {
	if c.err != nil {
		return failWith(t, c.err)
	}
	return resultOf(t, c.result)
}

// resultOf is the results of an activity of type t that completed with
// result: result itself when it fits, else result re-encoded into the
// result's type.
func resultOf(t reflect.Type, result any) []reflect.Value {
	out := failWith(t, nil)
	if t.NumOut() < 2 || result == nil {
		return out
	}
	rt := t.Out(0)
	if v := reflect.ValueOf(result); v.Type().AssignableTo(rt) {
		out[0] = v.Convert(rt)
		return out
	}
	ptr := reflect.New(rt)
	data, err := converter.Encode(result)
	if err == nil {
		err = converter.Decode(data, ptr.Interface())
	}
	if err != nil {
		return failWith(t, fmt.Errorf("testsuite: CompleteActivity's result %T does not fit the activity's %s: %w", result, rt, err))
	}
	out[0] = ptr.Elem()
	return out
}

// completeInline delivers a completion to the inline call holding token.
func (env *TestWorkflowEnvironment) completeInline(token []byte, result any, err error) error {
	p := &env.pending
	p.mu.Lock()
	ic := p.waits[string(token)]
	delete(p.waits, string(token)) // one completion per token
	p.mu.Unlock()
	if ic == nil {
		return fmt.Errorf("testsuite: CompleteActivity: no activity waits for the task token %q (it ended, or was completed already)", token)
	}
	env.unparkInline(ic)
	ic.done <- completion{result: result, err: err}
	env.poke()
	return nil
}

// unparkInline takes ic's call off the parked calls, if it is there.
func (env *TestWorkflowEnvironment) unparkInline(ic *inlineCall) {
	env.mu.Lock()
	defer env.mu.Unlock()
	if !ic.parked {
		return
	}
	ic.parked = false
	if i := slices.Index(env.parked, ic.call); i >= 0 {
		env.parked = slices.Delete(env.parked, i, i+1)
	}
}

// isInlineToken reports whether token is one the environment handed out.
func isInlineToken(token []byte) bool { return bytes.HasPrefix(token, []byte(inlineTokenPrefix)) }
