package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/internal/metricstest"
	"github.com/heddlewf/heddle/metrics"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// tries counts the tries of each step, so that each workflow's first step
// fails once.
var tries struct {
	sync.Mutex
	n map[string]int
}

func Step(ctx context.Context, i int) (int, error) {
	key := activity.GetInfo(ctx).IdempotencyKey
	tries.Lock()
	tries.n[key]++
	n := tries.n[key]
	tries.Unlock()
	if i == 0 && n == 1 {
		return 0, errors.New("the first try of the first step fails")
	}
	return i + 1, nil
}

func Three(ctx workflow.Context) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second,
		RetryPolicy: &workflow.RetryPolicy{InitialInterval: time.Millisecond}})
	sum := 0
	for i := range 3 {
		var v int
		if err := workflow.ExecuteActivity(ctx, Step, i).Get(ctx, &v); err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

// One registry holds the metrics of an engine, its HTTP API and a worker
// that reaches it over HTTP. Running workflows moves the counters by what
// the work was, and /metrics stays an exposition the Prometheus text parser
// reads.
func TestCountersMoveWithTheWork(t *testing.T) {
	tries.Lock()
	tries.n = map[string]int{}
	tries.Unlock()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	e, err := embedded.Open(embedded.Config{Dir: filepath.Join(t.TempDir(), "db"), Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	}()
	api, err := httpapi.NewServer(httpapi.ServerConfig{Service: e, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	defer srv.Close()
	defer api.Close()
	remote, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{srv.URL}, PollWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	scrape := func() metricstest.Families {
		t.Helper()
		fs, err := metricstest.Scrape(srv.Client(), srv.URL+"/metrics")
		if err != nil {
			t.Fatal(err)
		}
		return fs
	}

	const n = 4
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := client.New(remote)
	before := scrape()
	var runs []client.WorkflowRun
	for i := range n {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("three-%d", i), TaskQueue: "q"}, Three)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run)
	}
	// Nothing runs them yet: they wait in the queue.
	if got := scrape().Value(metrics.EngineJobs, "status", "Queued", "queue", "q"); got != n {
		t.Fatalf("%v jobs Queued before a worker ran, want %d", got, n)
	}
	w := worker.New(client.New(remote), "q", worker.Options{Metrics: m})
	w.RegisterWorkflow(Three)
	w.RegisterActivity(Step)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := w.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	for _, run := range runs {
		var sum int
		if err := run.Get(ctx, &sum); err != nil || sum != 6 {
			t.Fatalf("run %s: %d, %v", run.GetID(), sum, err)
		}
	}
	// A run's result is out before its worker records the turn that
	// produced it: wait for the last turn's record.
	after := scrape()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if after.Value(metrics.WorkerTurnSeconds, "queue", "q", "workflow_type", "Three")-before.Value(metrics.WorkerTurnSeconds, "queue", "q", "workflow_type", "Three") >= n {
			break
		}
		after = scrape()
	}
	moved := func(name string, labels ...string) float64 {
		return after.Value(name, labels...) - before.Value(name, labels...)
	}
	checks := []struct {
		what      string
		got, want float64
	}{
		{"starts applied", moved(metrics.EngineCommands, "kind", "CreateJob", "outcome", "ok"), n},
		{"runs completed", moved(metrics.EngineJobsClosed, "status", "Completed", "queue", "q"), n},
		{"open jobs left", after.Value(metrics.EngineJobs, "queue", "q"), 0},
		{"activity tries completed", moved(metrics.WorkerActivities, "queue", "q", "activity_type", "Step", "outcome", "completed"), 3 * n},
		{"activity tries failed", moved(metrics.WorkerActivities, "queue", "q", "activity_type", "Step", "outcome", "failed"), n},
		{"activity tries timed", moved(metrics.WorkerActivitySecs, "queue", "q", "activity_type", "Step"), 4 * n},
		{"workflow turns, one per run", moved(metrics.WorkerTurnSeconds, "queue", "q", "workflow_type", "Three"), n},
		{"cache lookups, one per turn", moved(metrics.WorkerCacheHits, "queue", "q") + moved(metrics.WorkerCacheMisses, "queue", "q"), n},
		{"starts over HTTP", moved(metrics.HTTPRequests, "route", "POST /v1/jobs", "code", "200"), n},
		{"syncs, one per commit", moved(metrics.EngineSyncs), moved(metrics.EngineCommits)},
		{"commits measured", moved(metrics.EngineCommitSeconds), moved(metrics.EngineCommits)},
		{"steps ended", moved(metrics.WorkerStepSeconds, "capability", "none", "status", "succeeded"), 3 * n},
		{"step retries", moved(metrics.WorkerStepRetries, "capability", "none"), n},
		{"steps that succeeded", moved(metrics.EngineStepTransitions, "from_state", "RUNNING", "to_state", "SUCCEEDED"), 3 * n},
		{"steps retried", moved(metrics.EngineStepTransitions, "from_state", "RETRYING", "to_state", "RUNNING"), n},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: moved by %v, want %v", c.what, c.got, c.want)
		}
	}
	if moved(metrics.EngineCommits) == 0 || moved(metrics.EngineApplySeconds, "kind", "CommitStep") < 3*n {
		t.Errorf("commits %v, step commits timed %v", moved(metrics.EngineCommits), moved(metrics.EngineApplySeconds, "kind", "CommitStep"))
	}
	// Routes are the patterns, never raw paths with ids in them.
	pattern := regexp.MustCompile(`^(GET|POST|DELETE) /[a-z0-9/{}.\-]*$|^/$`)
	for _, r := range after.LabelValues(metrics.HTTPRequests, "route") {
		if !pattern.MatchString(r) || regexp.MustCompile(`/\d`).MatchString(r) {
			t.Errorf("route label %q is not a route pattern", r)
		}
	}
}
