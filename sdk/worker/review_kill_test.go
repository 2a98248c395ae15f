//go:build linux

package worker_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
	"github.com/heddlewf/heddle/storage"
)

// Review task kill tests: a child process (this test binary, running
// TestReviewKillChild) starts a workflow with one review task and is
// SIGKILLed while its worker does the task's work, or while its reviewer
// reviews it. The parent opens the same directory with a worker that does
// not block: the dead holder's lease expires, the scheduler gives the task
// back (RUNNING → PENDING, or REVIEWING → REVIEW_REQUIRED, then REVIEWING
// again by auto-review), and the task reaches SUCCESS with no wall-clock
// guess, only the lease.

const (
	reviewKillDirEnv  = "HEDDLE_TASK_KILL_DIR"
	reviewKillModeEnv = "HEDDLE_TASK_KILL_MODE"
	reviewKillReady   = "TASK-KILL-READY"
	reviewKillQueue   = "task-kill"
)

// reviewKillBlock is the side ("work" or "review") that blocks in this
// process, printing reviewKillReady first; "" in the parent.
var reviewKillBlock string

func blockForKill(ctx context.Context, side string) {
	if reviewKillBlock != side {
		return
	}
	fmt.Println(reviewKillReady)
	<-ctx.Done() // until SIGKILL
}

func KillableWork(ctx context.Context, n int) (int, error) {
	blockForKill(ctx, "work")
	return n * 10, nil
}

func killableReviewer(ctx context.Context, r worker.ReviewRequest) (worker.ReviewResult, error) {
	blockForKill(ctx, "review")
	return worker.ReviewResult{Approve: true, Summary: "ok after the kill"}, nil
}

func ReviewKillFlow(ctx workflow.Context) (int, error) {
	var out int
	err := workflow.ExecuteReview(ctx, workflow.ReviewOptions{Job: "kill-task", Phase: "only", AutoReview: true, AutoApprove: true},
		KillableWork, 4).Get(ctx, &out)
	return out, err
}

func newReviewKillWorker(t testing.TB, e *embedded.Engine) worker.Worker {
	w := worker.New(client.New(e), reviewKillQueue, worker.Options{LeaseTTL: time.Second,
		OnError: func(job engine.JobID, err error) { fmt.Fprintf(os.Stderr, "worker error on job %d: %v\n", job, err) }})
	w.RegisterWorkflow(ReviewKillFlow)
	w.RegisterActivity(KillableWork)
	w.RegisterReviewer("any", killableReviewer)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	return w
}

func TestReviewWorkerKilledWhileWorking(t *testing.T) { runReviewKill(t, "work", engine.ReviewRunning) }
func TestReviewerKilledWhileReviewing(t *testing.T) {
	runReviewKill(t, "review", engine.ReviewReviewing)
}

func runReviewKill(t *testing.T, side string, stuck engine.ReviewState) {
	dir := filepath.Join(t.TempDir(), "db")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestReviewKillChild$", "-test.count=1", "-test.timeout=3m")
	cmd.Env = append(os.Environ(), reviewKillDirEnv+"="+dir, reviewKillModeEnv+"="+side)
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
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == reviewKillReady && !killed {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	werr := cmd.Wait()
	var ee *exec.ExitError
	if !killed || !errors.As(werr, &ee) {
		t.Fatalf("the child ended by itself (%v)\nstderr:\n%s", werr, stderr.String())
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the child ended with %v, not by SIGKILL", werr)
	}

	e, err := embedded.Open(embedded.Config{Dir: dir})
	if err != nil {
		t.Fatalf("reopen after SIGKILL: %v", err)
	}
	defer closeOK(t, e)
	before, err := e.DescribeReview(ctx, engine.ReviewTarget{Job: "kill-task", Phase: "only"})
	if err != nil || before.State != stuck || before.LeaseOwner == "" {
		t.Fatalf("after the kill the task is %+v (%v), want %s under the dead holder's lease", before, err, stuck)
	}
	w := newReviewKillWorker(t, e)
	defer stopOK(t, w)
	run := client.New(e).GetWorkflow(ctx, "task-kill", "")
	var got int
	if err := run.Get(ctx, &got); err != nil || got != 40 {
		t.Fatalf("result %d, %v; want 40", got, err)
	}
	hist, err := e.ReviewHistory(ctx, before.ID)
	if err != nil {
		t.Fatal(err)
	}
	var expired []engine.ReviewEvent
	for _, ev := range hist {
		if ev.Type == engine.ReviewEventLeaseExpired {
			expired = append(expired, ev)
		}
	}
	if len(expired) != 1 || expired[0].From != stuck || expired[0].Attempt != before.Attempt {
		t.Fatalf("lease expiries %+v, want one from %s of attempt %d", expired, stuck, before.Attempt)
	}
	// The recovery waited for the lease, not for a guess: it happened no
	// earlier than the dead holder's lease expiry.
	if expired[0].AtMS < before.LeaseExpiryMS {
		t.Fatalf("recovered at %d, before the lease expired at %d", expired[0].AtMS, before.LeaseExpiryMS)
	}
	var errs []error
	if err := e.DB().View(func(r *storage.Reader) error { errs = machine.Verify(r, 20); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, err := range errs {
		t.Error(err)
	}
}

// TestReviewKillChild is the child of the task kill tests; it does nothing
// unless HEDDLE_TASK_KILL_DIR names its directory, and runs until killed.
func TestReviewKillChild(t *testing.T) {
	dir := os.Getenv(reviewKillDirEnv)
	if dir == "" {
		t.Skip("run by the task kill tests only")
	}
	reviewKillBlock = os.Getenv(reviewKillModeEnv)
	e, err := embedded.Open(embedded.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	newReviewKillWorker(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := client.New(e).ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "task-kill", TaskQueue: reviewKillQueue}, ReviewKillFlow); err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
}
