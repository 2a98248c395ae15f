package interceptor_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/interceptor"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Same returns its argument.
func Same(_ context.Context, s string) (string, error) { return s, nil }

// Echo returns what Same returns for s.
func Echo(ctx workflow.Context, s string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &workflow.RetryPolicy{MaximumAttempts: 1}})
	var out string
	err := workflow.ExecuteActivity(ctx, Same, s).Get(ctx, &out)
	return out, err
}

// rewriter changes the workflow's input and result and the activity's
// result, or breaks the chain as its fields say.
type rewriter struct {
	interceptor.WorkerInterceptorBase
	initErr error // Init fails with it
	badArg  bool  // the workflow gets an int for its string
}

func (r *rewriter) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	in := &rewriteWorkflow{r: r}
	in.Next = next
	return in
}

func (r *rewriter) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	in := &rewriteActivity{}
	in.Next = next
	return in
}

type rewriteWorkflow struct {
	interceptor.WorkflowInboundInterceptorBase
	r *rewriter
}

func (w *rewriteWorkflow) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	if w.r.initErr != nil {
		return w.r.initErr
	}
	return w.Next.Init(outbound)
}

func (w *rewriteWorkflow) ExecuteWorkflow(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput) (any, error) {
	if w.r.badArg {
		in.Args = []any{42}
	} else {
		in.Args = []any{in.Args[0].(string) + "-in"}
	}
	res, err := w.Next.ExecuteWorkflow(ctx, in)
	if err != nil {
		return nil, err
	}
	return res.(string) + "-out", nil
}

type rewriteActivity struct {
	interceptor.ActivityInboundInterceptorBase
}

func (a *rewriteActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	res, err := a.Next.ExecuteActivity(ctx, in)
	if s, ok := res.(string); ok {
		res = strings.ToUpper(s)
	}
	return res, err
}

// TestRewrite: interceptors change a workflow's input and result and an
// activity's result; a failing Init and an argument of the wrong type fail
// the run with errors that say so.
func TestRewrite(t *testing.T) {
	for _, tc := range []struct {
		name    string
		r       *rewriter
		want    string
		wantErr string
	}{
		{"rewrite", &rewriter{}, "ECHO-IN-out", ""},
		{"init fails", &rewriter{initErr: errors.New("no init today")}, "", "no init today"},
		{"bad argument", &rewriter{badArg: true}, "", "argument 1 is a int, the parameter a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			e, err := embedded.Open(embedded.Config{InMemory: true})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = e.Close() }()
			c := client.New(e)
			w := worker.New(c, "echo", worker.Options{Interceptors: []interceptor.WorkerInterceptor{tc.r}})
			w.RegisterWorkflow(Echo)
			w.RegisterActivity(Same)
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = w.Shutdown(ctx) }()
			run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "echo"}, Echo, "echo")
			if err != nil {
				t.Fatal(err)
			}
			var got string
			err = run.Get(ctx, &got)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %q, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestOptionsRefuseNil: a nil interceptor is refused by Validate.
func TestOptionsRefuseNil(t *testing.T) {
	if err := (worker.Options{Interceptors: []interceptor.WorkerInterceptor{nil}}).Validate(); err == nil ||
		!strings.Contains(err.Error(), "Options.Interceptors[0] is nil") {
		t.Errorf("worker: %v", err)
	}
	if err := (client.Options{Interceptors: []interceptor.ClientInterceptor{nil}}).Validate(); err == nil ||
		!strings.Contains(err.Error(), "Options.Interceptors[0] is nil") {
		t.Errorf("client: %v", err)
	}
}
