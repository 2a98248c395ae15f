//go:build linux

package worker_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
	"github.com/heddlewf/heddle/storage"
)

// Worker kill tests: a child process (this test binary, running
// TestWorkerKillChild) opens a durable engine, starts a worker with a short
// lease and a workflow of three sequential activities, and reports on its
// stdout when it reached the point the test wants to kill it at. The parent
// SIGKILLs it, opens the same directory with a normal worker, waits for the
// workflow's result, and checks from the activities' own counter file (one
// fsynced line "<idempotencyKey> <attempt>" per execution, written before
// the activity returns) that no finished step ran twice and that the step
// in flight at the kill ran at most twice, under one idempotency key.

const (
	killDirEnv     = "HEDDLE_WORKER_KILL_DIR"
	killCounterEnv = "HEDDLE_WORKER_KILL_COUNTER"
	killModeEnv    = "HEDDLE_WORKER_KILL_MODE"
	killQueue      = "kill"
	killWorkflowID = "kill-seq3"
	killReadyLine  = "KILL-READY"

	// killAfterActivity: the 2nd activity blocks after writing its line, so
	// the kill lands after it ran and before its commit.
	killAfterActivity = "after-activity"
	// killBetweenSteps: the 1st step is committed and the 2nd activity
	// blocks before doing anything, so the kill lands between the steps.
	killBetweenSteps = "between-steps"
)

// killConfig is how KillStep behaves in this process.
var killConfig struct {
	mu          sync.Mutex
	counter     string        // the counter file
	block       int           // the step index that blocks, -1 for none
	blockBefore bool          // block before writing the line (else after)
	blocked     chan struct{} // closed when the blocking activity blocks
}

func setKillConfig(counter string, block int, blockBefore bool) chan struct{} {
	killConfig.mu.Lock()
	defer killConfig.mu.Unlock()
	killConfig.counter, killConfig.block, killConfig.blockBefore = counter, block, blockBefore
	killConfig.blocked = make(chan struct{})
	return killConfig.blocked
}

// KillStep is activity i of KillSeq3: it appends "<idempotencyKey>
// <attempt>" to the counter file, fsynced, and returns its key.
func KillStep(ctx context.Context, i int) (string, error) {
	info := activity.GetInfo(ctx)
	killConfig.mu.Lock()
	counter, block, before, blocked := killConfig.counter, killConfig.block, killConfig.blockBefore, killConfig.blocked
	if i == block && before {
		close(blocked)
		killConfig.mu.Unlock()
		select {} // until the process is killed
	}
	err := appendCounterLine(counter, fmt.Sprintf("%s %d\n", info.IdempotencyKey, info.Attempt))
	if err == nil && i == block {
		close(blocked)
		killConfig.mu.Unlock()
		select {} // ran, never committed: until the process is killed
	}
	killConfig.mu.Unlock()
	if err != nil {
		return "", err
	}
	return info.IdempotencyKey, nil
}

func appendCounterLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line); err != nil {
		return errors.Join(err, f.Close())
	}
	if err := f.Sync(); err != nil {
		return errors.Join(err, f.Close())
	}
	return f.Close()
}

// KillSeq3 runs three activities in sequence and returns their keys.
func KillSeq3(ctx workflow.Context) ([]string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	keys := make([]string, 0, 3)
	for i := range 3 {
		var k string
		if err := workflow.ExecuteActivity(ctx, KillStep, i).Get(ctx, &k); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

func newKillWorker(t testing.TB, e *embedded.Engine, onError func(engine.JobID, error)) (worker.Worker, error) {
	w := worker.New(client.New(service(t, e)), killQueue, worker.Options{LeaseTTL: time.Second, OnError: onError})
	w.RegisterWorkflow(KillSeq3)
	w.RegisterActivity(KillStep)
	return w, w.Start()
}

func TestWorkerKilledAfterActivityBeforeCommit(t *testing.T) {
	runKillScenario(t, killAfterActivity, 1)
}

func TestWorkerKilledBetweenSteps(t *testing.T) {
	runKillScenario(t, killBetweenSteps, -1)
}

// runKillScenario kills a child in mode, recovers in this process, and
// checks the counter file; inFlight is the index of the step that may have
// run twice (-1: none).
func runKillScenario(t *testing.T, mode string, inFlight int) {
	base := t.TempDir()
	dir, counter := filepath.Join(base, "db"), filepath.Join(base, "counter.log")
	killChildAtReady(t, mode, dir, counter)

	setKillConfig(counter, -1, false)
	e, err := embedded.Open(embedded.Config{Dir: dir, OnSchedulerError: func(err error) { t.Logf("scheduler: %v", err) }})
	if err != nil {
		t.Fatalf("reopen after SIGKILL: %v", err)
	}
	defer closeOK(t, e)
	w, err := newKillWorker(t, e, func(job engine.JobID, err error) { t.Logf("worker error on job %d: %v", job, err) })
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped { // Stop may be called once only
			stopOK(t, w)
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := client.New(service(t, e))
	run := c.GetWorkflow(ctx, killWorkflowID, "")
	var keys []string
	if err := run.Get(ctx, &keys); err != nil {
		t.Fatalf("the workflow did not finish after the kill: %v", err)
	}
	if len(keys) != 3 {
		t.Fatalf("result %q, want three keys", keys)
	}

	runs, order := readCounter(t, counter)
	t.Logf("counter file: %v (order %q)", runs, order)
	if len(runs) != 3 {
		t.Errorf("the counter file has %d distinct keys %q, want the three of the result %q", len(runs), order, keys)
	}
	for i, k := range keys {
		n := runs[k]
		switch {
		case n == 0:
			t.Errorf("step %d (key %q) never ran", i, k)
		case i == inFlight && n > 2:
			t.Errorf("step %d (key %q, in flight at the kill) ran %d times, want at most 2", i, k, n)
		case i != inFlight && n != 1:
			t.Errorf("step %d (key %q) ran %d times, want exactly once", i, k, n)
		}
	}
	stopped = true
	if err := w.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	var errs []error
	if err := e.DB().View(func(r *storage.Reader) error { errs = machine.Verify(r, 20); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, err := range errs {
		t.Error(err)
	}
}

// readCounter returns how often each key ran, and the keys in the order
// they first ran.
func readCounter(t *testing.T, path string) (map[string]int, []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]int{}
	var order []string
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) != 2 || !strings.HasSuffix(line, "\n") {
			t.Fatalf("malformed counter line %q", line)
		}
		if a, err := strconv.Atoi(f[1]); err != nil || a < 1 {
			t.Fatalf("counter line %q: bad attempt", line)
		}
		if runs[f[0]] == 0 {
			order = append(order, f[0])
		}
		runs[f[0]]++
	}
	return runs, order
}

// killChildAtReady runs the child in mode on dir and SIGKILLs it as soon as
// it prints its readiness line.
func killChildAtReady(t *testing.T, mode, dir, counter string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestWorkerKillChild$", "-test.count=1", "-test.timeout=3m")
	cmd.Env = append(os.Environ(), killDirEnv+"="+dir, killCounterEnv+"="+counter, killModeEnv+"="+mode)
	var stderr crashLog
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	r := bufio.NewReader(stdout)
	var readErr error
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			if err != io.EOF {
				readErr = err
			}
			break
		}
		if strings.TrimSpace(line) == killReadyLine && !killed {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatalf("kill: %v", err)
			}
			killed = true
		}
	}
	werr := cmd.Wait()
	if strings.Contains(stderr.String(), "WARNING: DATA RACE") {
		t.Errorf("the child reported a data race:\n%s", stderr.String())
	}
	if readErr != nil {
		t.Fatalf("reading the child's output: %v\nstderr:\n%s", readErr, stderr.String())
	}
	var ee *exec.ExitError
	if !killed || !errors.As(werr, &ee) {
		t.Fatalf("the child (%s) ended by itself (%v)\nstderr:\n%s", mode, werr, stderr.String())
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the child ended with %v, not by SIGKILL\nstderr:\n%s", werr, stderr.String())
	}
}

// TestWorkerKillChild is the child of the kill tests; it does nothing
// unless HEDDLE_WORKER_KILL_DIR names its directory. It runs until killed
// (or, should the parent vanish, for two minutes).
func TestWorkerKillChild(t *testing.T) {
	dir := os.Getenv(killDirEnv)
	if dir == "" {
		t.Skip("run by the worker kill tests only")
	}
	mode := os.Getenv(killModeEnv)
	var blocked chan struct{}
	switch mode {
	case killAfterActivity:
		blocked = setKillConfig(os.Getenv(killCounterEnv), 1, false)
	case killBetweenSteps:
		blocked = setKillConfig(os.Getenv(killCounterEnv), 1, true)
	default:
		t.Fatalf("unknown mode %q", mode)
	}
	e, err := embedded.Open(embedded.Config{Dir: dir, OnSchedulerError: func(err error) { fmt.Fprintf(os.Stderr, "scheduler: %v\n", err) }})
	if err != nil {
		t.Fatal(err)
	}
	w, err := newKillWorker(t, e, func(job engine.JobID, err error) { fmt.Fprintf(os.Stderr, "worker error on job %d: %v\n", job, err) })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := client.New(service(t, e))
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: killWorkflowID, TaskQueue: killQueue}, KillSeq3); err != nil {
		t.Fatal(err)
	}
	if mode == killBetweenSteps {
		// The 1st step's commit is durable before the kill.
		for committed := false; !committed; {
			changed := e.Committed()
			hist, err := c.GetWorkflowHistory(ctx, killWorkflowID, "")
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range hist {
				committed = committed || ev.Commit
			}
			if !committed {
				select {
				case <-changed:
				case <-ctx.Done():
					t.Fatal("the 1st step was never committed")
				}
			}
		}
	}
	select {
	case <-blocked:
	case <-ctx.Done():
		t.Fatal("the 2nd activity never started")
	}
	if _, err := os.Stdout.WriteString(killReadyLine + "\n"); err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
	// The blocked activity never returns: no graceful stop, just leave.
	_ = w
	t.Fatal("not killed")
}

// crashLog is a buffer safe for the exec copier and the test.
type crashLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *crashLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *crashLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
