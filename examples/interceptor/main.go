// Command interceptor wraps a worker and a client in interceptors, as
// Temporal's interceptor package does: one adds a tenant tag to every log
// line of workflow and activity code, refuses activity types that are not
// on an allow list, and counts the activities it lets run; a client
// interceptor records each workflow the client starts. The program checks
// what the interceptors saw and exits 1 if it is not what it should be.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/interceptor"
	"github.com/heddlewf/heddle/sdk/log"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Charge and Refund are the activities the allow list lets through;
// Wipe is not on it.
func Charge(ctx context.Context, cents int) (string, error) {
	activity.GetLogger(ctx).Info("charging", "cents", cents)
	return fmt.Sprintf("charged %d", cents), nil
}

func Wipe(ctx context.Context) error { return errors.New("wipe must never run") }

// Order charges, then tries Wipe, which the interceptor refuses.
func Order(ctx workflow.Context, cents int) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	workflow.GetLogger(ctx).Info("order started", "cents", cents)
	var charged string
	if err := workflow.ExecuteActivity(ctx, Charge, cents).Get(ctx, &charged); err != nil {
		return "", err
	}
	err := workflow.ExecuteActivity(ctx, Wipe).Get(ctx, nil)
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != "NotAllowed" {
		return "", fmt.Errorf("the guard did not refuse Wipe: %v", err)
	}
	return charged + "; " + app.Error(), nil
}

// guard is the worker interceptor.
type guard struct {
	interceptor.WorkerInterceptorBase
	tenant  string
	allowed []string
	ran     atomic.Int32 // activities the guard let run
}

func (g *guard) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	in := &guardWorkflow{g: g}
	in.Next = next
	return in
}

func (g *guard) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	in := &guardActivity{g: g}
	in.Next = next
	return in
}

type guardWorkflow struct {
	interceptor.WorkflowInboundInterceptorBase
	g *guard
}

// Init wraps the workflow's outbound calls.
func (w *guardWorkflow) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	out := &guardWorkflowOut{g: w.g}
	out.Next = outbound
	return w.Next.Init(out)
}

type guardWorkflowOut struct {
	interceptor.WorkflowOutboundInterceptorBase
	g *guard
}

// ExecuteActivity refuses a type off the allow list with a failed future,
// so the workflow sees an ordinary activity error and nothing is issued.
// It is deterministic, as workflow code must be: a replay refuses the same.
func (o *guardWorkflowOut) ExecuteActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	if !slices.Contains(o.g.allowed, activityType) {
		f, set := workflow.NewFuture(ctx)
		set.SetError(temporal.NewNonRetryableApplicationError("activity "+activityType+" is not allowed", "NotAllowed", nil))
		return f
	}
	return o.Next.ExecuteActivity(ctx, activityType, args...)
}

func (o *guardWorkflowOut) GetLogger(ctx workflow.Context) log.Logger {
	return log.With(o.Next.GetLogger(ctx), "tenant", o.g.tenant)
}

type guardActivity struct {
	interceptor.ActivityInboundInterceptorBase
	g *guard
}

func (a *guardActivity) Init(outbound interceptor.ActivityOutboundInterceptor) error {
	out := &guardActivityOut{g: a.g}
	out.Next = outbound
	return a.Next.Init(out)
}

func (a *guardActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	a.g.ran.Add(1)
	return a.Next.ExecuteActivity(ctx, in)
}

type guardActivityOut struct {
	interceptor.ActivityOutboundInterceptorBase
	g *guard
}

func (o *guardActivityOut) GetLogger(ctx context.Context) log.Logger {
	return log.With(o.Next.GetLogger(ctx), "tenant", o.g.tenant)
}

// starts is the client interceptor: it records the workflows started.
type starts struct {
	interceptor.ClientInterceptorBase
	mu      sync.Mutex
	started []string
}

func (s *starts) InterceptClient(next interceptor.ClientOutboundInterceptor) interceptor.ClientOutboundInterceptor {
	out := &startsOut{s: s}
	out.Next = next
	return out
}

type startsOut struct {
	interceptor.ClientOutboundInterceptorBase
	s *starts
}

func (o *startsOut) ExecuteWorkflow(ctx context.Context, in *interceptor.ClientExecuteWorkflowInput) (client.WorkflowRun, error) {
	o.s.mu.Lock()
	o.s.started = append(o.s.started, in.Options.ID+" "+in.WorkflowType)
	o.s.mu.Unlock()
	return o.Next.ExecuteWorkflow(ctx, in)
}

// lines keeps what is logged, to check the tenant tag.
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) add(level, msg string, kv []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, fmt.Sprint(level, " ", msg, " ", kv))
}

func (l *lines) Debug(msg string, kv ...any) { l.add("DEBUG", msg, kv) }
func (l *lines) Info(msg string, kv ...any)  { l.add("INFO", msg, kv) }
func (l *lines) Warn(msg string, kv ...any)  { l.add("WARN", msg, kv) }
func (l *lines) Error(msg string, kv ...any) { l.add("ERROR", msg, kv) }

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "interceptor:", err)
		os.Exit(1)
	}
}

func run() (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := embedded.Open(embedded.Config{InMemory: true})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, e.Close()) }()

	logged := &lines{}
	g := &guard{tenant: "acme", allowed: []string{"Charge"}}
	st := &starts{}
	c := client.NewWithOptions(e, client.Options{Interceptors: []interceptor.ClientInterceptor{st}})
	w := worker.New(c, "orders", worker.Options{
		Logger:       log.Slog(logged),
		Interceptors: []interceptor.WorkerInterceptor{g},
	})
	w.RegisterWorkflow(Order)
	w.RegisterActivity(Charge)
	w.RegisterActivity(Wipe)
	if err := w.Start(); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, w.Shutdown(context.Background())) }()

	r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "order-5", TaskQueue: "orders"}, Order, 4200)
	if err != nil {
		return err
	}
	var out string
	if err := r.Get(ctx, &out); err != nil {
		return err
	}
	fmt.Println("order-5:", out)
	fmt.Println("started through the client:", st.started)
	fmt.Println("activities the guard let run:", g.ran.Load())
	tagged := 0
	for _, l := range logged.all {
		fmt.Println("log:", l)
		if strings.Contains(l, "tenant acme") {
			tagged++
		}
	}
	switch {
	case !strings.HasPrefix(out, "charged 4200; activity Wipe is not allowed"):
		return fmt.Errorf("unexpected result %q", out)
	case !slices.Equal(st.started, []string{"order-5 Order"}):
		return fmt.Errorf("the client interceptor saw %v", st.started)
	case g.ran.Load() != 1:
		return fmt.Errorf("%d activities ran, want 1 (Charge)", g.ran.Load())
	case tagged < 2:
		return fmt.Errorf("%d log lines carry the tenant, want the workflow's and the activity's", tagged)
	}
	fmt.Println("ok: order-5 charged, Wipe refused, every line tagged with the tenant")
	return nil
}
