package worker_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Draft does a phase's work: it reports a cost and says which run it is
// and what feedback it had.
func Draft(ctx context.Context, what string) (string, error) {
	info, ok := activity.GetReviewInfo(ctx)
	if !ok {
		return "", fmt.Errorf("not a task")
	}
	activity.ReportCost(ctx, 2)
	activity.ReportSummary(ctx, "drafted "+what)
	if info.Feedback != "" {
		return fmt.Sprintf("%s v%d (%s)", what, info.Run, info.Feedback), nil
	}
	return fmt.Sprintf("%s v%d", what, info.Run), nil
}

// ReviewDAG runs requirements → implementation → tests as review tasks of
// one job, all issued at once: the engine holds each until the one before
// it succeeds.
func ReviewDAG(ctx workflow.Context) (string, error) {
	opts := func(phase string, deps ...string) workflow.ReviewOptions {
		return workflow.ReviewOptions{Job: "email", Phase: phase, DependsOn: deps, AutoReview: true,
			Reviewer: "lint", JobDescription: "validate e-mail addresses"}
	}
	req := workflow.ExecuteReview(ctx, opts("requirements"), Draft, "requirements")
	impl := workflow.ExecuteReview(ctx, opts("implementation", "requirements"), Draft, "implementation")
	tests := workflow.ExecuteReview(ctx, opts("tests", "implementation"), Draft, "tests")
	var out []string
	for _, f := range []workflow.Future{req, impl, tests} {
		var s string
		if err := f.Get(ctx, &s); err != nil {
			return "", err
		}
		out = append(out, s)
	}
	return strings.Join(out, "; "), nil
}

// waitReviewState waits until the task of job and phase is in state s.
func waitReviewState(t *testing.T, ts engine.ReviewService, job, phase string, s engine.ReviewState) *engine.Review {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := ts.DescribeReview(context.Background(), engine.ReviewTarget{Job: job, Phase: phase})
		if err == nil && got.State == s {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s/%s: %+v (%v), want %s", job, phase, got, err, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A workflow's DAG of review tasks through workers and a reviewer, with a
// person (the test) approving, rejecting with feedback, and approving the
// rework; the dependants start only after each approval, and the workflow
// gets the approved outputs.
func TestExecuteReviewDAG(t *testing.T) {
	e := open(t)
	var mu sync.Mutex
	var reviewed []string
	startWorker(t, e, "main", worker.Options{LeaseTTL: 2 * time.Second}, func(w worker.Worker) {
		w.RegisterWorkflow(ReviewDAG)
		w.RegisterActivity(Draft)
		w.RegisterReviewer("lint", func(ctx context.Context, r worker.ReviewRequest) (worker.ReviewResult, error) {
			mu.Lock()
			reviewed = append(reviewed, r.Phase)
			mu.Unlock()
			return worker.ReviewResult{Approve: true, Summary: "reviewed " + r.Phase, Recommendations: []string{"fine"}}, nil
		})
	})
	svc := service(t, e)
	ts := svc.(engine.ReviewService)
	c := client.New(svc)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "dag", TaskQueue: "main"}, ReviewDAG)
	if err != nil {
		t.Fatal(err)
	}
	decide := func(phase string, op engine.ReviewOp, reason string) {
		t.Helper()
		if _, err := ts.ReviewCommand(ctx, engine.ReviewCommand{ReviewTarget: engine.ReviewTarget{Job: "email", Phase: phase}, Op: op, By: "steward", Reason: reason}); err != nil {
			t.Fatalf("%s %s: %v", op, phase, err)
		}
	}
	waitReviewState(t, ts, "email", "requirements", engine.ReviewApprovalRequired)
	if impl := waitReviewState(t, ts, "email", "implementation", engine.ReviewPending); impl.Runs != 0 {
		t.Fatalf("the implementation ran before the requirements were approved: %+v", impl)
	}
	decide("requirements", engine.ReviewOpApprove, "")
	waitReviewState(t, ts, "email", "implementation", engine.ReviewApprovalRequired)
	decide("implementation", engine.ReviewOpReject, "handle IDN")
	impl := waitReviewState(t, ts, "email", "implementation", engine.ReviewApprovalRequired)
	if impl.Runs != 2 {
		t.Fatalf("implementation runs = %d, want 2", impl.Runs)
	}
	if tests := waitReviewState(t, ts, "email", "tests", engine.ReviewPending); tests.Runs != 0 {
		t.Fatalf("the tests ran before the implementation was approved")
	}
	decide("implementation", engine.ReviewOpApprove, "")
	waitReviewState(t, ts, "email", "tests", engine.ReviewApprovalRequired)
	decide("tests", engine.ReviewOpApprove, "")
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if want := "requirements v1; implementation v2 (handle IDN); tests v1"; got != want {
		t.Fatalf("result %q, want %q", got, want)
	}
	m, err := ts.ReviewManifest(ctx, "email")
	if err != nil {
		t.Fatal(err)
	}
	// Four runs at a cost of 2 each.
	if m.Status != engine.ReviewSuccess || m.Metrics.CumulativeCost != 8 || len(m.History) != 3 || m.History[1].Summary != "reviewed implementation" {
		t.Fatalf("manifest = %+v", m)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reviewed) != 4 {
		t.Fatalf("reviews %v, want four", reviewed)
	}
	verify(t, e)
}

// Approvals across leader changes (HEDDLE_SDK_BACKEND=cluster only): the
// leader is moved before each approval, and once while a task's work runs
// under its lease. Every approval is applied exactly once (the client
// retries with the same request id) and the workflow gets every output.
func TestReviewApprovalsUnderLeaderFailover(t *testing.T) {
	if !overCluster() {
		t.Skip("runs against a three-node cluster: HEDDLE_SDK_BACKEND=cluster")
	}
	e := open(t)
	cl := remote(t, e)
	startWorker(t, e, "main", worker.Options{LeaseTTL: 10 * time.Second}, func(w worker.Worker) {
		w.RegisterWorkflow(ReviewDAG)
		w.RegisterActivity(Draft)
		w.RegisterReviewer("lint", func(ctx context.Context, r worker.ReviewRequest) (worker.ReviewResult, error) {
			return worker.ReviewResult{Approve: true, Summary: "reviewed " + r.Phase}, nil
		})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	run, err := client.New(cl).ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "dag-failover", TaskQueue: "main"}, ReviewDAG)
	if err != nil {
		t.Fatal(err)
	}
	transfer := func() {
		t.Helper()
		before, _ := cl.Status(ctx)
		if err := cl.TransferLeader(ctx); err != nil {
			t.Fatalf("transfer the leadership: %v", err)
		}
		for {
			st, err := cl.Status(ctx)
			if err == nil && st.LeaderID != "" && st.LeaderID != before.LeaderID {
				t.Logf("leader %s → %s", before.LeaderID, st.LeaderID)
				return
			}
			if ctx.Err() != nil {
				t.Fatal("no new leader")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, phase := range []string{"requirements", "implementation", "tests"} {
		waitReviewState(t, cl, "email", phase, engine.ReviewApprovalRequired)
		transfer()
		if _, err := cl.ReviewCommand(ctx, engine.ReviewCommand{ReviewTarget: engine.ReviewTarget{Job: "email", Phase: phase},
			Op: engine.ReviewOpApprove, By: "steward"}); err != nil {
			t.Fatalf("approve %s after a failover: %v", phase, err)
		}
	}
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^requirements v\d+; implementation v\d+; tests v\d+$`).MatchString(got) {
		t.Fatalf("result %q, want each phase's output", got)
	}
	reviews, err := cl.ListReviews(ctx, "email")
	if err != nil || len(reviews) != 3 {
		t.Fatalf("tasks = %+v, %v", reviews, err)
	}
	for _, review := range reviews {
		hist, err := cl.ReviewHistory(ctx, review.ID)
		if err != nil {
			t.Fatal(err)
		}
		approved, expired := 0, 0
		for _, ev := range hist {
			switch ev.Type {
			case engine.ReviewEventApproved:
				approved++
			case engine.ReviewEventLeaseExpired:
				expired++
			}
		}
		if review.State != engine.ReviewSuccess || approved != 1 {
			t.Errorf("task %s: %s with %d approvals; want SUCCESS with exactly 1", review.Phase, review.State, approved)
		}
		// A lease may expire when an election outlasts it on a loaded
		// machine; the task then ran again, which the result shows.
		t.Logf("task %s: %d runs, %d lease expiries", review.Phase, review.Runs, expired)
	}
}

// Throttled waits out a rate limit once, in PAUSED, before it answers.
func Throttled(ctx context.Context) (string, error) {
	if err := activity.RateLimited(ctx, 50*time.Millisecond); err != nil {
		return "", err
	}
	return "after the pause", nil
}

func ThrottledFlow(ctx workflow.Context) (string, error) {
	var out string
	err := workflow.ExecuteReview(ctx, workflow.ReviewOptions{Job: "throttle", Phase: "p", AutoReview: true, AutoApprove: true}, Throttled).Get(ctx, &out)
	return out, err
}

// A rate-limited task goes RUNNING → PAUSED → RUNNING under the same lease
// and then on through its review; outside a task, RateLimited refuses.
func TestReviewRateLimitPauses(t *testing.T) {
	e := open(t)
	startWorker(t, e, "main", worker.Options{}, func(w worker.Worker) {
		w.RegisterWorkflow(ThrottledFlow)
		w.RegisterActivity(Throttled)
		w.RegisterReviewer("any", func(context.Context, worker.ReviewRequest) (worker.ReviewResult, error) {
			return worker.ReviewResult{Approve: true}, nil
		})
	})
	svc := service(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err := client.New(svc).ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "throttle", TaskQueue: "main"}, ThrottledFlow)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "after the pause" {
		t.Fatalf("result %q, %v", got, err)
	}
	ts := svc.(engine.ReviewService)
	review, err := ts.DescribeReview(ctx, engine.ReviewTarget{Job: "throttle", Phase: "p"})
	if err != nil {
		t.Fatal(err)
	}
	hist, err := ts.ReviewHistory(ctx, review.ID)
	if err != nil {
		t.Fatal(err)
	}
	var moves []string
	for _, ev := range hist {
		moves = append(moves, ev.To.String())
	}
	want := "PENDING RUNNING PAUSED RUNNING REVIEW_REQUIRED REVIEWING REVIEWING APPROVAL_REQUIRED SUCCESS"
	if strings.Join(moves, " ") != want {
		t.Fatalf("moves %v, want %s", moves, want)
	}
	if hist[2].Attempt != hist[1].Attempt || hist[3].Type != engine.ReviewEventResumed {
		t.Fatalf("the pause changed the lease: %+v", hist[1:4])
	}
	if err := activity.RateLimited(context.Background(), time.Millisecond); err == nil {
		t.Fatal("RateLimited outside a task succeeded")
	}
	verify(t, e)
}

// Echo returns its input, to show which one a run got.
func Echo(ctx workflow.Context, s string) (string, error) { return s, nil }

// A workflow created as a Draft and configured before its activation runs
// with the configured input; configuring it once active is refused.
func TestDraftWorkflowConfigured(t *testing.T) {
	e := open(t)
	startWorker(t, e, "main", worker.Options{}, func(w worker.Worker) { w.RegisterWorkflow(Echo) })
	svc := service(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	first, _ := converter.Encode("first")
	if _, err := svc.Create(ctx, engine.CreateJob{WorkflowID: "draft-echo", Type: "Echo", Queue: "main", Draft: true, Input: first}); err != nil {
		t.Fatal(err)
	}
	cf := svc.(interface {
		ConfigureJob(context.Context, engine.ConfigureJob) (*engine.StatusResult, error)
	})
	second, _ := converter.Encode("second")
	if _, err := cf.ConfigureJob(ctx, engine.ConfigureJob{Target: engine.Target{WorkflowID: "draft-echo"}, Input: second}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Activate(ctx, engine.Activate{Target: engine.Target{WorkflowID: "draft-echo"}}); err != nil {
		t.Fatal(err)
	}
	run := client.New(svc).GetWorkflow(ctx, "draft-echo", "")
	var got string
	if err := run.Get(ctx, &got); err != nil || got != "second" {
		t.Fatalf("result %q, %v; want the configured input", got, err)
	}
	if _, err := cf.ConfigureJob(ctx, engine.ConfigureJob{Target: engine.Target{WorkflowID: "draft-echo"}, Input: first}); !errors.Is(err, engine.ErrIllegalTransition) {
		t.Fatalf("configuring a closed job: %v", err)
	}
	verify(t, e)
}
