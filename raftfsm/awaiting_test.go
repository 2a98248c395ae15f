package raftfsm

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
)

// approvalReview moves a new task of job to APPROVAL_REQUIRED through the
// leader, as a worker, a reviewer and a person would.
func approvalReview(t *testing.T, c *testCluster, job string) engine.ReviewID {
	t.Helper()
	ctx := context.Background()
	var id engine.ReviewID
	queue := "q-" + job
	steps := []func(e *embedded.Engine) error{
		func(e *embedded.Engine) error {
			r, err := e.CreateReview(ctx, engine.CreateReview{Header: engine.Header{RequestID: "create-" + job}, Job: job, Phase: "p", Queue: queue, Type: "w", AutoReview: true})
			if err == nil {
				id = r.Review
			}
			return err
		},
		func(e *embedded.Engine) error {
			w, err := e.ClaimReviews(ctx, engine.ClaimReviews{Header: engine.Header{RequestID: "work-" + job}, Queue: queue, Owner: "w", Max: 1, LeaseMS: 600_000})
			if err == nil && len(w) != 1 {
				return fmt.Errorf("work claim on %s: %+v", queue, w)
			}
			if err == nil {
				_, err = e.ReviewReport(ctx, engine.ReviewReport{Header: engine.Header{RequestID: "out-" + job}, ReviewLeaseRef: w[0].Lease(),
					Op: engine.ReviewReportOutput, Output: []byte("x")})
			}
			return err
		},
		func(e *embedded.Engine) error {
			r, err := e.ClaimReviews(ctx, engine.ClaimReviews{Header: engine.Header{RequestID: "review-" + job}, Role: engine.ReviewRoleReview, Queue: queue, Owner: "r", Max: 1, LeaseMS: 600_000})
			if err == nil && len(r) != 1 {
				return fmt.Errorf("review claim on %s: %+v", queue, r)
			}
			if err == nil {
				_, err = e.ReviewReport(ctx, engine.ReviewReport{Header: engine.Header{RequestID: "verdict-" + job}, ReviewLeaseRef: r[0].Lease(),
					Op: engine.ReviewReportVerdict, Assessment: &engine.Assessment{Verdict: engine.VerdictApprove}})
			}
			return err
		},
	}
	for _, s := range steps {
		if err := c.do(s); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

func awaitingOn(t *testing.T, n *Node) []engine.ReviewID {
	t.Helper()
	p, err := n.Engine().ListAwaitingReviews(engine.WithStaleRead(context.Background()), engine.AwaitingQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []engine.ReviewID
	for _, tk := range p.Reviews {
		ids = append(ids, tk.ID)
	}
	return ids
}

// A follower wiped and rebuilt from the leader's snapshot has the index
// of tasks awaiting a person as the others do: Verify passes on every
// node, the follower lists the same tasks, and an approval applied after
// the snapshot takes its task off the follower's list too.
func TestAwaitingIndexAfterSnapshotRestore(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.TrailingLogs = 5 })
	first := approvalReview(t, c, "letter-1")
	l := c.leader()
	var wiped string
	for id := range c.live() {
		if id != l.ID() {
			wiped = id
			break
		}
	}
	c.waitConverged()
	c.kill(wiped)
	if err := os.RemoveAll(c.dirs[wiped]); err != nil {
		t.Fatal(err)
	}
	second := approvalReview(t, c, "letter-2")
	createJobs(t, c, 0, 10) // more entries than the log keeps after the snapshot
	if err := l.raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	n := c.start(wiped, false)
	c.assertSameState()
	if n.fsm.state.generation() == 0 {
		t.Fatalf("the wiped follower caught up without installing a snapshot")
	}
	c.verifyAll()
	if got := awaitingOn(t, n); len(got) != 2 || got[0] != first || got[1] != second {
		t.Fatalf("the restored follower lists %v awaiting, want [%d %d]", got, first, second)
	}
	if err := c.do(func(e *embedded.Engine) error {
		_, err := e.ReviewCommand(context.Background(), engine.ReviewCommand{Header: engine.Header{RequestID: "approve"},
			ReviewTarget: engine.ReviewTarget{ID: first}, Op: engine.ReviewOpApprove, By: "ann"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	c.assertSameState()
	c.verifyAll()
	if got := awaitingOn(t, n); len(got) != 1 || got[0] != second {
		t.Fatalf("after the approval the restored follower lists %v, want [%d]", got, second)
	}
}
