package interceptor_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/interceptor"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// calls records, in order, which named interceptor was asked for a
// workflow's or an activity's chain.
type calls struct {
	mu    sync.Mutex
	lines []string
}

func (c *calls) add(line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, line)
}

func (c *calls) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.lines, "\n")
}

// both is a client and worker interceptor (interceptor.Interceptor) that
// records the chains it is asked for.
type both struct {
	interceptor.InterceptorBase
	name string
	log  *calls
}

func (b *both) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	if !workflow.IsReplaying(ctx) {
		b.log.add(b.name + " workflow")
	}
	return next
}

func (b *both) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	b.log.add(b.name + " activity")
	return next
}

// clientOnly is a client interceptor and nothing else: it must not reach
// the worker.
type clientOnly struct {
	interceptor.ClientInterceptorBase
}

// GreetOnce runs Greet once.
func GreetOnce(ctx workflow.Context) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var s string
	err := workflow.ExecuteActivity(ctx, Greet, "ada").Get(ctx, &s)
	return s, err
}

// TestClientInterceptorsReachWorkers gives a client two interceptors, one
// of which is also a worker interceptor, and a worker made from it one of
// its own: as in Temporal, the client's worker interceptor wraps the
// worker's runs and tries, outside the worker's own.
func TestClientInterceptorsReachWorkers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := embedded.Open(embedded.Config{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	log := &calls{}
	c := client.NewWithOptions(e, client.Options{Interceptors: []interceptor.ClientInterceptor{
		&clientOnly{}, &both{name: "client's", log: log}}})
	w := worker.New(c, "from-client", worker.Options{Interceptors: []interceptor.WorkerInterceptor{&both{name: "worker's", log: log}}})
	w.RegisterWorkflow(GreetOnce)
	w.RegisterActivity(Greet)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Shutdown(ctx) }()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "greet-once", TaskQueue: "from-client"}, GreetOnce)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "hello ada from Greet" {
		t.Fatalf("GreetOnce: %q, %v", got, err)
	}
	// The chains are built innermost first: the worker's own, then the
	// client's around it.
	const want = "worker's workflow\nclient's workflow\nworker's activity\nclient's activity"
	if log.String() != want {
		t.Fatalf("chains asked for:\n%s\nwant:\n%s", log, want)
	}
}
