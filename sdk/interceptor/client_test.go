package interceptor_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/interceptor"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Counter adds the updates "add" (its validator refuses n <= 0) until the
// signal "note" comes, and answers the query "total".
func Counter(ctx workflow.Context) (string, error) {
	total := 0
	err := workflow.SetUpdateHandlerWithOptions(ctx, "add", func(ctx workflow.Context, n int) (int, error) {
		total += n
		return total, nil
	}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, n int) error {
		if n <= 0 {
			return errors.New("not positive")
		}
		return nil
	}})
	if err != nil {
		return "", err
	}
	if err := workflow.SetQueryHandler(ctx, "total", func() (int, error) { return total, nil }); err != nil {
		return "", err
	}
	var note string
	workflow.GetSignalChannel(ctx, "note").Receive(ctx, &note)
	return fmt.Sprintf("%d %s", total, note), nil
}

// clientTracer records each call of a client and upper-cases the argument
// of every signal.
type clientTracer struct {
	interceptor.ClientInterceptorBase
	mu    sync.Mutex
	calls []string
}

func (c *clientTracer) add(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, fmt.Sprintf(format, args...))
}

func (c *clientTracer) InterceptClient(next interceptor.ClientOutboundInterceptor) interceptor.ClientOutboundInterceptor {
	o := &clientOut{t: c}
	o.Next = next
	return o
}

type clientOut struct {
	interceptor.ClientOutboundInterceptorBase
	t *clientTracer
}

func (o *clientOut) ExecuteWorkflow(ctx context.Context, in *interceptor.ClientExecuteWorkflowInput) (client.WorkflowRun, error) {
	o.t.add("ExecuteWorkflow %s %s %v", in.Options.ID, in.WorkflowType, in.Args)
	return o.Next.ExecuteWorkflow(ctx, in)
}

func (o *clientOut) SignalWorkflow(ctx context.Context, in *interceptor.ClientSignalWorkflowInput) error {
	if s, ok := in.Arg.(string); ok {
		in.Arg = strings.ToUpper(s)
	}
	o.t.add("SignalWorkflow %s %s %v", in.WorkflowID, in.SignalName, in.Arg)
	return o.Next.SignalWorkflow(ctx, in)
}

func (o *clientOut) SignalWithStartWorkflow(ctx context.Context, in *interceptor.ClientSignalWithStartWorkflowInput) (client.WorkflowRun, error) {
	o.t.add("SignalWithStartWorkflow %s %s %s %v", in.Options.ID, in.WorkflowType, in.SignalName, in.SignalArg)
	return o.Next.SignalWithStartWorkflow(ctx, in)
}

func (o *clientOut) CancelWorkflow(ctx context.Context, in *interceptor.ClientCancelWorkflowInput) error {
	o.t.add("CancelWorkflow %s", in.WorkflowID)
	return o.Next.CancelWorkflow(ctx, in)
}

func (o *clientOut) TerminateWorkflow(ctx context.Context, in *interceptor.ClientTerminateWorkflowInput) error {
	o.t.add("TerminateWorkflow %s %q", in.WorkflowID, in.Reason)
	return o.Next.TerminateWorkflow(ctx, in)
}

func (o *clientOut) QueryWorkflow(ctx context.Context, in *interceptor.ClientQueryWorkflowInput) (converter.EncodedValue, error) {
	o.t.add("QueryWorkflow %s %s", in.WorkflowID, in.QueryType)
	return o.Next.QueryWorkflow(ctx, in)
}

func (o *clientOut) UpdateWorkflow(ctx context.Context, in *interceptor.ClientUpdateWorkflowInput) (client.WorkflowUpdateHandle, error) {
	o.t.add("UpdateWorkflow %s %s %v", in.WorkflowID, in.UpdateName, in.Args)
	return o.Next.UpdateWorkflow(ctx, in)
}

// TestClientAndUpdates sends every kind of client call through a client
// interceptor (which upper-cases signal arguments) to a worker whose
// interceptor refuses the update argument 13, and checks both traces.
func TestClientAndUpdates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := embedded.Open(embedded.Config{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Close() }()
	ct := &clientTracer{}
	c := client.NewWithOptions(e, client.Options{Interceptors: []interceptor.ClientInterceptor{ct}})
	tr := newTracer()
	w := worker.New(c, "counter", worker.Options{Interceptors: []interceptor.WorkerInterceptor{tr}})
	w.RegisterWorkflow(Counter)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Shutdown(ctx) }()

	opts := client.StartWorkflowOptions{ID: "c-1", TaskQueue: "counter"}
	run, err := c.ExecuteWorkflow(ctx, opts, Counter)
	if err != nil {
		t.Fatal(err)
	}
	update := func(n int) (int, error) {
		h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: "c-1", UpdateName: "add", Args: []any{n},
			WaitForStage: client.WorkflowUpdateStageCompleted})
		if err != nil {
			return 0, err
		}
		var total int
		err = h.Get(ctx, &total)
		return total, err
	}
	if total, err := update(2); err != nil || total != 2 {
		t.Fatalf("add 2: %d, %v", total, err)
	}
	if _, err := update(13); err == nil || !strings.Contains(err.Error(), "refused by the interceptor") {
		t.Fatalf("add 13: %v, want the interceptor's refusal", err)
	}
	if _, err := update(-5); err == nil || !strings.Contains(err.Error(), "not positive") {
		t.Fatalf("add -5: %v, want the validator's refusal", err)
	}
	v, err := c.QueryWorkflow(ctx, "c-1", "", "total")
	if err != nil {
		t.Fatal(err)
	}
	var total int
	if err := v.Get(&total); err != nil || total != 2 {
		t.Fatalf("query: %d, %v", total, err)
	}
	if err := c.SignalWorkflow(ctx, "c-1", "", "note", "hi"); err != nil {
		t.Fatal(err)
	}
	var result string
	if err := run.Get(ctx, &result); err != nil || result != "2 HI" {
		t.Fatalf("Counter: %q, %v; want \"2 HI\" (the client interceptor upper-cases signals)", result, err)
	}
	if _, err := c.SignalWithStartWorkflow(ctx, "c-2", "note", "bye", opts, Counter); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "c-3", TaskQueue: "counter"}, "Counter"); err != nil {
		t.Fatal(err)
	}
	if err := c.CancelWorkflow(ctx, "c-3", ""); err != nil {
		t.Fatal(err)
	}
	if err := c.TerminateWorkflow(ctx, "c-3", "", "enough"); err != nil {
		t.Fatal(err)
	}

	wantClient := []string{
		"ExecuteWorkflow c-1 Counter []",
		"UpdateWorkflow c-1 add [2]",
		"UpdateWorkflow c-1 add [13]",
		"UpdateWorkflow c-1 add [-5]",
		"QueryWorkflow c-1 total",
		"SignalWorkflow c-1 note HI",
		"SignalWithStartWorkflow c-2 Counter note bye",
		"ExecuteWorkflow c-3 Counter []",
		"CancelWorkflow c-3",
		"TerminateWorkflow c-3 \"enough\"",
	}
	if got := strings.Join(ct.calls, "\n"); got != strings.Join(wantClient, "\n") {
		t.Errorf("client calls:\n%s\nwant:\n%s", got, strings.Join(wantClient, "\n"))
	}
	// The first run's trace: c-2 and c-3 add theirs after it, so only its
	// first lines are compared. Each update is validated first, before it
	// is admitted, by a worker on a replay of the run (whose calls are
	// replay calls), at a time of its own against the run's turns: the
	// validations are compared on their own. An accepted update is
	// validated again when the run takes it.
	wantRun := []string{
		"InterceptWorkflow",
		"in ExecuteWorkflow []",
		"out SetUpdateHandler add",
		"out SetQueryHandler total",
		"out GetSignalChannel note",
		"in ExecuteUpdate add [2]",
		"in HandleQuery total -> 2 <nil>",
		"in HandleSignal note \"HI\"",
		"in ExecuteWorkflow returned 2 HI <nil>",
	}
	wantValidations := []string{
		"in ValidateUpdate add [2]", // before its admission
		"in ValidateUpdate add [2]", // when the run takes it
		"in ValidateUpdate add [13]",
		"in ValidateUpdate add [-5]",
	}
	var got, validations []string
	for _, l := range tr.trace("Counter", true) {
		if strings.HasPrefix(l, "in ValidateUpdate ") {
			validations = append(validations, l)
		} else {
			got = append(got, l)
		}
	}
	if len(got) < len(wantRun) || strings.Join(got[:len(wantRun)], "\n") != strings.Join(wantRun, "\n") {
		t.Errorf("Counter's calls:\n%s\nwant them to start with:\n%s", strings.Join(got, "\n"), strings.Join(wantRun, "\n"))
	}
	if strings.Join(validations, "\n") != strings.Join(wantValidations, "\n") {
		t.Errorf("Counter's validations:\n%s\nwant:\n%s", strings.Join(validations, "\n"), strings.Join(wantValidations, "\n"))
	}
}
