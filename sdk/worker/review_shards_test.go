package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/raftfsm"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// LetterForReview runs one review task of review job job (Draft, reviewed
// by "lint") and returns its approved output.
func LetterForReview(ctx workflow.Context, job string) (string, error) {
	var out string
	err := workflow.ExecuteReview(ctx, workflow.ReviewOptions{Job: job, Phase: "draft", AutoReview: true, Reviewer: "lint"},
		Draft, "letter").Get(ctx, &out)
	return out, err
}

// TestReviewTaskAcrossShards: a workflow creates a review task whose review
// job routes to another shard than the workflow's, on a cluster of four
// shards (phase 1 failed the step with CrossShard). The create goes through
// the run's shard's outbox; a worker drafts it, a reviewer approves it, a
// person (the test) approves it, and the task's end comes back to the
// workflow as the step's result. The task names the run as its parent, the
// history holds the task once, every shard's store verifies, and no
// delivery is left pending.
func TestReviewTaskAcrossShards(t *testing.T) {
	const shards = 4
	svc, hosts := openShardedCluster(t, shards)
	startWorkerOn(t, svc, "letters", worker.Options{LeaseTTL: 2 * time.Second}, func(w worker.Worker) {
		w.RegisterWorkflow(LetterForReview)
		w.RegisterActivity(Draft)
		w.RegisterReviewer("lint", func(ctx context.Context, r worker.ReviewRequest) (worker.ReviewResult, error) {
			return worker.ReviewResult{Approve: true, Summary: "fine"}, nil
		})
	})
	c := client.New(svc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wf := idOn("letter-wf-", 0, shards)
	job := idOn("letter-job-", 2, shards)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wf, TaskQueue: "letters"}, LetterForReview, job)
	if err != nil {
		t.Fatal(err)
	}
	task := awaitReviewStateOn(ctx, t, hosts, svc, job, "draft", engine.ReviewApprovalRequired)
	desc, err := c.DescribeWorkflow(ctx, wf, "")
	if err != nil {
		t.Fatal(err)
	}
	if task.ParentJob != desc.ID || engine.ShardOfReview(task.ID) != 2 {
		t.Fatalf("task %d (shard %d) has parent %d, want run %d's task on shard 2", task.ID, engine.ShardOfReview(task.ID), task.ParentJob, desc.ID)
	}
	if _, err := svc.ReviewCommand(ctx, engine.ReviewCommand{ReviewTarget: engine.ReviewTarget{ID: task.ID}, Op: engine.ReviewOpApprove, By: "steward"}); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := run.Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if got != "letter v1" {
		t.Fatalf("the workflow got %q, want %q", got, "letter v1")
	}
	hist, err := c.GetWorkflowHistory(ctx, wf, "")
	if err != nil {
		t.Fatal(err)
	}
	types := eventTypes(hist)
	for _, want := range []string{string(engine.EventReviewScheduled), string(engine.EventReviewCompleted)} {
		if n := strings.Count(types, want); n != 1 {
			t.Fatalf("history %s: %d %s, want 1", types, n, want)
		}
	}
	verifyQuietShards(ctx, t, hosts, shards)
}

// awaitReviewStateOn waits until the task of job and phase is in state s,
// reading it again after each commit or change of leader on the hosts.
func awaitReviewStateOn(ctx context.Context, t *testing.T, hosts []*raftfsm.Host, ts engine.ReviewService, job, phase string, s engine.ReviewState) *engine.Review {
	t.Helper()
	for {
		var changed []<-chan struct{}
		for _, h := range hosts {
			changed = append(changed, h.ShardsChanged())
		}
		got, err := ts.DescribeReview(ctx, engine.ReviewTarget{Job: job, Phase: phase})
		if err == nil && got.State == s {
			return got
		}
		select {
		case <-changed[0]:
		case <-changed[1]:
		case <-changed[2]:
		case <-ctx.Done():
			t.Fatalf("task %s/%s: %+v (%v), want %s", job, phase, got, err, s)
		}
	}
}
