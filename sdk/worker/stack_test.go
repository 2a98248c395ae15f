package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Stuck waits in two coroutines: the root for a signal, a second one in a
// timer of an hour. The comments mark the lines the stack trace names.
func Stuck(ctx workflow.Context) (string, error) {
	workflow.GoNamed(ctx, "sleeper", func(ctx workflow.Context) {
		stuckSleep(ctx)
	})
	var v string
	workflow.GetSignalChannel(ctx, "go").Receive(ctx, &v) // stack: root waits here
	return v, nil
}

// stuckSleep is a frame of workflow code below the coroutine's function.
func stuckSleep(ctx workflow.Context) {
	_ = workflow.Sleep(ctx, time.Hour) // stack: sleeper waits here
}

// markedLine returns the line of this file that carries marker.
func markedLine(t *testing.T, marker string) (string, int) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(src), "\n") {
		if strings.Contains(l, "// "+marker) && !strings.Contains(l, "markedLine") {
			return file, i + 1
		}
	}
	t.Fatalf("no line marked %q", marker)
	return "", 0
}

// The __stack_trace query (Temporal's) answers where each coroutine of a
// run waits, in the workflow's own file and line, with the SDK's call it
// blocks in; the SDK's own frames are left out. On today's code it was an
// unknown query.
func TestStackTraceQuery(t *testing.T) {
	e := open(t)
	w := startWorker(t, e, "stack", worker.Options{})
	w.RegisterWorkflow(Stuck)
	c := client.NewWithOptions(service(t, e), client.Options{Querier: querier(t, e, "stack", w)})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "stuck", TaskQueue: "stack"}, Stuck)
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.QueryWorkflow(ctx, "stuck", "", client.QueryTypeStackTrace)
	if err != nil {
		t.Fatalf("__stack_trace: %v", err)
	}
	var trace string
	if err := v.Get(&trace); err != nil {
		t.Fatal(err)
	}
	t.Logf("the stack trace:\n%s", trace)
	file, rootLine := markedLine(t, "stack: root waits here")
	_, sleepLine := markedLine(t, "stack: sleeper waits here")
	root, sleeper, _ := strings.Cut(trace, "\n\n")
	for _, want := range []string{
		"coroutine root [blocked on ",
		"worker_test.Stuck(...)\n\t" + fmt.Sprintf("%s:%d", file, rootLine),
	} {
		if !strings.Contains(root, want) {
			t.Errorf("the root coroutine's trace lacks %q:\n%s", want, root)
		}
	}
	for _, want := range []string{
		"coroutine sleeper [blocked on ",
		"worker_test.stuckSleep(...)\n\t" + fmt.Sprintf("%s:%d", file, sleepLine),
		"worker_test.Stuck.func1(...)\n\t" + file + ":",
	} {
		if !strings.Contains(sleeper, want) {
			t.Errorf("the sleeper's trace lacks %q:\n%s", want, sleeper)
		}
	}
	for _, sdk := range []string{"heddle/replay.", "heddle/sdk/workflow.", "runtime.", filepath.Join("sdk", "workflow") + "/"} {
		if strings.Contains(trace, sdk) {
			t.Errorf("the trace shows the SDK's frame %q:\n%s", sdk, trace)
		}
	}
	// The query changed nothing: the run goes on when signalled.
	if err := c.SignalWorkflow(ctx, "stuck", "", "go", "done"); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "done" {
		t.Fatalf("result %q, %v", got, err)
	}
}

// A wait names the signals the code reads (its signal channels, and
// updates when it has handlers), so that people see what the run waits
// for; a run that reads none names none. Any signal still wakes the run
// (AnySignal), as before.
func TestWaitNamesTheSignalsRead(t *testing.T) {
	e := open(t)
	w := startWorker(t, e, "waits", worker.Options{})
	w.RegisterWorkflow(Stuck)
	w.RegisterWorkflowWithName(func(ctx workflow.Context) error { return workflow.Sleep(ctx, time.Hour) }, "Sleeper")
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		id, typ string
		want    []string
	}{{"reads-go", "Stuck", []string{"go"}}, {"reads-none", "Sleeper", nil}} {
		if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: tc.id, TaskQueue: "waits"}, tc.typ); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, ctx, c, tc.id, engine.StatusWaiting)
		j, err := c.DescribeWorkflow(ctx, tc.id, "")
		if err != nil {
			t.Fatal(err)
		}
		if j.Wait == nil || !j.Wait.AnySignal || !slices.Equal(j.Wait.Signals, tc.want) {
			t.Errorf("%s waits for %+v; want the signals %q and AnySignal", tc.id, j.Wait, tc.want)
		}
	}
}
