package interceptor_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/interceptor"
	"github.com/heddlewf/heddle/sdk/worker"
)

var update = flag.Bool("update", false, "rewrite testdata/trace.txt from this run")

// runParent runs Parent to its end on an in-memory engine with a worker
// whose interceptor is tr, queries it, and returns its result and the
// query's answer.
func runParent(t *testing.T, tr *tracer, cacheSize int) (result, state string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := embedded.Open(embedded.Config{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	c := client.New(e)
	w := worker.New(c, "traced", worker.Options{CacheSize: cacheSize, Interceptors: []interceptor.WorkerInterceptor{tr}})
	w.RegisterWorkflow(Parent)
	w.RegisterWorkflow(Child)
	w.RegisterActivity(Greet)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Shutdown(ctx) }()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "parent-1", TaskQueue: "traced"}, Parent, "ada")
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, &result); err != nil {
		t.Fatalf("Parent: %v", err)
	}
	v, err := c.QueryWorkflow(ctx, "parent-1", "", "state")
	if err != nil {
		t.Fatalf("query: %v", err)
	}
	if err := v.Get(&state); err != nil {
		t.Fatal(err)
	}
	return result, state
}

// render lays the traces out as testdata/trace.txt holds them.
func render(tr *tracer, live bool) string {
	var b strings.Builder
	for _, key := range []string{"Parent", "Child", "activity"} {
		b.WriteString("== " + key + "\n")
		for _, l := range tr.trace(key, live) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestTrace runs a workflow with an activity, a child with a local
// activity, signals, a coroutine, a side effect, a version, a timer and a
// query through a tracing interceptor, and compares the ordered trace of
// the calls made live with testdata/trace.txt. The interceptor rewrote the
// activity's argument (ada became ADA) and refused a signal, and the
// result shows both.
func TestTrace(t *testing.T) {
	tr := newTracer()
	result, state := runParent(t, tr, 0)
	const want = "hello ADA from Greet! go refused-seen=false n=7 v=1"
	if result != want || state != want {
		t.Fatalf("result %q, query %q; want %q for both", result, state, want)
	}
	got := render(tr, true)
	path := filepath.Join("testdata", "trace.txt")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wantTrace, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(wantTrace) {
		t.Errorf("trace differs from %s (go test -run TestTrace -update rewrites it):\n%s", path, got)
	}
}

// TestReplayCallsInterceptorsAgain runs the same workflow with the worker's
// cache off, so that every turn replays the run from its start. As in
// Temporal, the interceptors are called again during the replays (marked
// "replay", from workflow.IsReplaying), but the calls made live, the ones
// whose effects an interceptor would see as new, are exactly those of a
// run with the cache on: a replay duplicates none of them.
func TestReplayCallsInterceptorsAgain(t *testing.T) {
	cached := newTracer()
	runParent(t, cached, 0)
	uncached := newTracer()
	runParent(t, uncached, -1)
	if got, want := render(uncached, true), render(cached, true); got != want {
		t.Errorf("live calls without the cache:\n%s\nwith it:\n%s", got, want)
	}
	replays := 0
	for _, l := range uncached.trace("Parent", false) {
		if strings.HasPrefix(l, "replay ") {
			replays++
		}
	}
	if replays == 0 {
		t.Errorf("no replayed call reached the interceptor without the cache:\n%s", render(uncached, false))
	}
}
