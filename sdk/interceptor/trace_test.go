package interceptor_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/interceptor"
	"github.com/heddlewf/heddle/sdk/log"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// tracer is a WorkerInterceptor that writes every inbound and outbound call
// it sees to a trace per workflow type (and one for activities), marking
// the calls made while the run replays. It also changes what passes
// through: it upper-cases the argument of the Greet activity and refuses
// the signal "forbidden", as the workflow-security sample refuses child
// types.
type tracer struct {
	interceptor.WorkerInterceptorBase
	mu     sync.Mutex
	traces map[string][]string
}

func newTracer() *tracer { return &tracer{traces: map[string][]string{}} }

func (t *tracer) add(key, line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.traces[key] = append(t.traces[key], line)
}

// trace returns key's lines; live drops those made during a replay.
func (t *tracer) trace(key string, live bool) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, l := range t.traces[key] {
		if live && strings.HasPrefix(l, "replay ") {
			continue
		}
		out = append(out, l)
	}
	return out
}

func (t *tracer) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	// GetInfo before Init goes straight to the run: the chain is not built.
	in := &wfIn{t: t, key: workflow.GetInfo(ctx).WorkflowType.Name}
	in.Next = next
	line := "InterceptWorkflow"
	if workflow.IsReplaying(ctx) {
		line = "replay " + line
	}
	t.add(in.key, line)
	return in
}

func (t *tracer) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	in := &actIn{t: t}
	in.Next = next
	return in
}

type wfIn struct {
	interceptor.WorkflowInboundInterceptorBase
	t   *tracer
	key string
	out *wfOut
}

// log writes a line, marked when the run replays; it asks the next
// outbound interceptor, so that the question is not itself traced.
func (w *wfIn) log(ctx workflow.Context, format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if w.out != nil && w.out.Next.IsReplaying(ctx) {
		line = "replay " + line
	}
	w.t.add(w.key, line)
}

func (w *wfIn) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	w.out = &wfOut{in: w}
	w.out.Next = outbound
	return w.Next.Init(w.out)
}

func (w *wfIn) ExecuteWorkflow(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput) (any, error) {
	w.log(ctx, "in ExecuteWorkflow %v", in.Args)
	res, err := w.Next.ExecuteWorkflow(ctx, in)
	w.log(ctx, "in ExecuteWorkflow returned %v %v", res, err)
	return res, err
}

func (w *wfIn) HandleSignal(ctx workflow.Context, in *interceptor.HandleSignalInput) error {
	var arg string
	_ = in.Arg.Get(&arg)
	w.log(ctx, "in HandleSignal %s %q", in.SignalName, arg)
	if in.SignalName == "forbidden" {
		return nil // refused: the workflow never sees it
	}
	return w.Next.HandleSignal(ctx, in)
}

func (w *wfIn) HandleQuery(ctx workflow.Context, in *interceptor.HandleQueryInput) (any, error) {
	res, err := w.Next.HandleQuery(ctx, in)
	w.log(ctx, "in HandleQuery %s -> %v %v", in.QueryType, res, err)
	return res, err
}

func (w *wfIn) ValidateUpdate(ctx workflow.Context, in *interceptor.UpdateInput) error {
	w.log(ctx, "in ValidateUpdate %s %v", in.Name, in.Args)
	if len(in.Args) == 1 && in.Args[0] == 13 {
		return errors.New("13 is refused by the interceptor")
	}
	return w.Next.ValidateUpdate(ctx, in)
}

func (w *wfIn) ExecuteUpdate(ctx workflow.Context, in *interceptor.UpdateInput) (any, error) {
	w.log(ctx, "in ExecuteUpdate %s %v", in.Name, in.Args)
	return w.Next.ExecuteUpdate(ctx, in)
}

type wfOut struct {
	interceptor.WorkflowOutboundInterceptorBase
	in *wfIn
}

func (o *wfOut) ExecuteActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	if activityType == "Greet" && len(args) == 1 {
		if s, ok := args[0].(string); ok {
			args = []any{strings.ToUpper(s)}
		}
	}
	o.in.log(ctx, "out ExecuteActivity %s %v", activityType, args)
	return o.Next.ExecuteActivity(ctx, activityType, args...)
}

func (o *wfOut) ExecuteLocalActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	o.in.log(ctx, "out ExecuteLocalActivity %s %v", activityType, args)
	return o.Next.ExecuteLocalActivity(ctx, activityType, args...)
}

func (o *wfOut) ExecuteChildWorkflow(ctx workflow.Context, childWorkflowType string, args ...any) workflow.ChildWorkflowFuture {
	o.in.log(ctx, "out ExecuteChildWorkflow %s %v", childWorkflowType, args)
	return o.Next.ExecuteChildWorkflow(ctx, childWorkflowType, args...)
}

func (o *wfOut) Go(ctx workflow.Context, name string, f func(ctx workflow.Context)) workflow.Context {
	o.in.log(ctx, "out Go %q", name)
	return o.Next.Go(ctx, name, f)
}

func (o *wfOut) Sleep(ctx workflow.Context, d time.Duration) error {
	o.in.log(ctx, "out Sleep %v", d)
	return o.Next.Sleep(ctx, d)
}

func (o *wfOut) NewTimer(ctx workflow.Context, d time.Duration) workflow.Future {
	o.in.log(ctx, "out NewTimer %v", d)
	return o.Next.NewTimer(ctx, d)
}

func (o *wfOut) GetSignalChannel(ctx workflow.Context, name string) workflow.ReceiveChannel {
	o.in.log(ctx, "out GetSignalChannel %s", name)
	return o.Next.GetSignalChannel(ctx, name)
}

func (o *wfOut) SignalExternalWorkflow(ctx workflow.Context, workflowID, runID, signalName string, arg any) workflow.Future {
	o.in.log(ctx, "out SignalExternalWorkflow %s %s %v", workflowID, signalName, arg)
	return o.Next.SignalExternalWorkflow(ctx, workflowID, runID, signalName, arg)
}

func (o *wfOut) SignalChildWorkflow(ctx workflow.Context, workflowID, signalName string, arg any) workflow.Future {
	o.in.log(ctx, "out SignalChildWorkflow %s %s %v", workflowID, signalName, arg)
	return o.Next.SignalChildWorkflow(ctx, workflowID, signalName, arg)
}

func (o *wfOut) SetQueryHandler(ctx workflow.Context, queryType string, handler any) error {
	o.in.log(ctx, "out SetQueryHandler %s", queryType)
	return o.Next.SetQueryHandler(ctx, queryType, handler)
}

func (o *wfOut) SetUpdateHandler(ctx workflow.Context, name string, handler any, opts workflow.UpdateHandlerOptions) error {
	o.in.log(ctx, "out SetUpdateHandler %s", name)
	return o.Next.SetUpdateHandler(ctx, name, handler, opts)
}

func (o *wfOut) SideEffect(ctx workflow.Context, f func(ctx workflow.Context) any) converter.EncodedValue {
	o.in.log(ctx, "out SideEffect")
	return o.Next.SideEffect(ctx, f)
}

func (o *wfOut) GetVersion(ctx workflow.Context, changeID string, minSupported, maxSupported workflow.Version) workflow.Version {
	v := o.Next.GetVersion(ctx, changeID, minSupported, maxSupported)
	o.in.log(ctx, "out GetVersion %s -> %d", changeID, v)
	return v
}

func (o *wfOut) GetInfo(ctx workflow.Context) *workflow.Info {
	o.in.log(ctx, "out GetInfo")
	return o.Next.GetInfo(ctx)
}

func (o *wfOut) GetLogger(ctx workflow.Context) log.Logger {
	o.in.log(ctx, "out GetLogger")
	return log.With(o.Next.GetLogger(ctx), "traced", true)
}

func (o *wfOut) Now(ctx workflow.Context) time.Time {
	o.in.log(ctx, "out Now")
	return o.Next.Now(ctx)
}

type actIn struct {
	interceptor.ActivityInboundInterceptorBase
	t *tracer
}

func (a *actIn) Init(outbound interceptor.ActivityOutboundInterceptor) error {
	out := &actOut{t: a.t}
	out.Next = outbound
	a.t.add("activity", "Init")
	return a.Next.Init(out)
}

func (a *actIn) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	a.t.add("activity", fmt.Sprintf("in ExecuteActivity %v", in.Args))
	res, err := a.Next.ExecuteActivity(ctx, in)
	a.t.add("activity", fmt.Sprintf("in ExecuteActivity returned %v %v", res, err))
	return res, err
}

type actOut struct {
	interceptor.ActivityOutboundInterceptorBase
	t *tracer
}

func (a *actOut) GetInfo(ctx context.Context) activity.Info {
	info := a.Next.GetInfo(ctx)
	a.t.add("activity", "out GetInfo "+info.ActivityType.Name)
	return info
}

func (a *actOut) GetLogger(ctx context.Context) log.Logger {
	a.t.add("activity", "out GetLogger")
	return a.Next.GetLogger(ctx)
}

func (a *actOut) RecordHeartbeat(ctx context.Context, details ...any) {
	a.t.add("activity", fmt.Sprintf("out RecordHeartbeat %v", details))
	a.Next.RecordHeartbeat(ctx, details...)
}
