package raftfsm

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/metrics"
	"github.com/heddlewf/heddle/storage"
)

// TestCrossShardReviewLandsOnce: a run on shard 0 creates a review task of
// one of its steps whose review job routes to shard 1. The create goes
// through shard 0's outbox and answers the task's id; the task is worked,
// reviewed and approved on shard 1, and its end comes back through shard
// 1's outbox as the step's effect. Each of the two deliveries (the create,
// then the end) is run with its source shard's leader killed after the
// target applied it and before the acknowledgement, with its target
// shard's leader killed after it applied it and before it answered, and
// with every delivery failing for a while (a partition between the two
// leaders, healed later). Each ends with the task existing once, naming
// the run, the step's effect (the task's output) recorded once, no entry
// pending, and VerifyShard and VerifyAcrossShards clean.
func TestCrossShardReviewLandsOnce(t *testing.T) {
	for _, leg := range []engine.CommandKind{engine.KindCreateReview, engine.KindReviewClosed} {
		for _, fault := range []string{"source", "target", "partition"} {
			t.Run(leg.String()+"/"+fault, func(t *testing.T) { crossShardReview(t, leg, fault) })
		}
	}
}

func crossShardReview(t *testing.T, leg engine.CommandKind, fault string) {
	c := newTestHosts(t, 3, 2)
	c.awaitDesiredLeaders() // n1 leads shard 0, n2 shard 1
	ctx := context.Background()
	parentWF, job := keyOn("author-", 0, 2), keyOn("letter-", 1, 2)
	leaseRef := c.runningOn(0, parentWF, "author", "authors")
	lease := &leaseRef

	// The fault meets the first delivery of kind leg; a partition fails
	// every delivery from when it is armed until it heals.
	armed := make(chan struct{})
	f := c.injectDeliveryFault(fault, func(d *engine.Deliver) bool {
		if fault == "partition" {
			select {
			case <-armed:
				return true
			default:
				return false
			}
		}
		cmd, err := machine.DecodeCommand(d.Command)
		return err == nil && cmd.Kind() == leg
	})
	// strike waits for the fault armed for the delivery now on its way,
	// and plays the test's part in it. The wait is bounded, and cut short
	// by an answer to the create (which must wait for the delivery): a
	// delivery that never comes fails the test rather than hanging it.
	type answer struct {
		res *engine.ReviewResult
		err error
	}
	created := make(chan answer, 1)
	bound, cancelBound := context.WithTimeout(ctx, 60*time.Second)
	defer cancelBound()
	await := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case a := <-created:
			t.Fatalf("the create answered %+v (%v) before %s", a.res, a.err, what)
		case <-bound.Done():
			t.Fatalf("no %s", what)
		}
	}
	strike := func(source int) {
		t.Helper()
		switch fault {
		case "source", "target":
			await(f.hit, "delivery of the "+leg.String()+" met its fault")
		case "partition":
			for range 3 {
				await(f.refused, "delivery of the "+leg.String()+" refused") // the deliverer tried, and tries again after its backoff
			}
			id, _ := c.shardLeader(source)
			if got := c.gather(id).Value(metrics.EngineOutboxPending, "shard", strconv.Itoa(source), "target", strconv.Itoa(1-source)); got != 1 {
				t.Errorf("%s's pending gauge for shard %d → %d is %v while the entry is stuck, want 1", id, source, 1-source, got)
			}
			close(f.heal)
		}
		if fault == "source" {
			id, _ := c.shardLeader(source)
			c.kill(id)
		}
	}

	if leg == engine.KindCreateReview {
		close(armed)
	}
	create := engine.CreateReview{Header: engine.Header{RequestID: "letter-task"}, Job: job, Phase: "draft", Queue: "writers", Type: "write",
		AutoReview: true, AutoApprove: true, ParentJob: lease.Job, ParentStep: "s1", ParentLease: lease}
	go func() {
		// The caller, not knowing whether its create landed, retries it
		// with the same request id at the shard's leader, whichever node
		// that is.
		var res *engine.ReviewResult
		err := c.onShard(0, func(e *embedded.Engine) error {
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			var err error
			res, err = e.CreateReview(cctx, create)
			return err
		})
		created <- answer{res, err}
	}()
	if leg == engine.KindCreateReview {
		strike(0)
	}
	a := <-created
	if a.err != nil {
		t.Fatalf("the create: %v", a.err)
	}
	id := a.res.Review
	if id == 0 || engine.ShardOfReview(id) != 1 || a.res.Delivery != nil {
		t.Fatalf("the create answered %+v, want a task of shard 1", a.res)
	}

	// The task is worked, reviewed (and approved by its auto-approval) on
	// shard 1: its SUCCESS sends its output to the run's step.
	if leg == engine.KindReviewClosed {
		close(armed)
	}
	var work, review []engine.ClaimedReview
	steps := []func(e *embedded.Engine) error{
		func(e *embedded.Engine) (err error) {
			work, err = e.ClaimReviews(ctx, engine.ClaimReviews{Header: engine.Header{RequestID: "work"}, Queue: "writers", Owner: "w", Max: 1, LeaseMS: 600_000})
			if err == nil && (len(work) != 1 || work[0].Review != id) {
				t.Fatalf("the work claim took %+v, want task %d", work, id)
			}
			return err
		},
		func(e *embedded.Engine) error {
			_, err := e.ReviewReport(ctx, engine.ReviewReport{Header: engine.Header{RequestID: "output"}, ReviewLeaseRef: work[0].Lease(),
				Op: engine.ReviewReportOutput, Output: []byte(`"dear reader"`)})
			return err
		},
		func(e *embedded.Engine) (err error) {
			review, err = e.ClaimReviews(ctx, engine.ClaimReviews{Header: engine.Header{RequestID: "review"}, Role: engine.ReviewRoleReview, Queue: "writers",
				Owner: "r", Max: 1, LeaseMS: 600_000})
			if err == nil && (len(review) != 1 || review[0].Review != id) {
				t.Fatalf("the review claim took %+v, want task %d", review, id)
			}
			return err
		},
		func(e *embedded.Engine) error {
			res, err := e.ReviewReport(ctx, engine.ReviewReport{Header: engine.Header{RequestID: "verdict"}, ReviewLeaseRef: review[0].Lease(),
				Op: engine.ReviewReportVerdict, Assessment: &engine.Assessment{Verdict: engine.VerdictApprove}})
			if err == nil && res.State != engine.ReviewSuccess {
				t.Fatalf("the verdict left task %d %s, want SUCCESS", id, res.State)
			}
			return err
		},
	}
	for _, step := range steps {
		if err := c.onShard(1, step); err != nil {
			t.Fatal(err)
		}
	}
	if leg == engine.KindReviewClosed {
		strike(1)
	}

	c.await("the task's output on its run's step, and no entry pending", func() bool {
		if !c.nothingPending(ctx) {
			return false
		}
		_, e0 := c.shardLeaderNow(0)
		if e0 == nil {
			return false
		}
		eff, err := e0.Effect(engine.WithStaleRead(ctx), lease.Job, "s1")
		return err == nil && eff != nil
	})
	// Read at each shard's leader, whichever node that is now (a kill
	// above may have moved it, and a read meets the move).
	var eff *engine.Effect
	var hist *engine.HistoryPage
	var link *engine.RemoteReview
	if err := c.onShard(0, func(e *embedded.Engine) (err error) {
		if eff, err = e.Effect(ctx, lease.Job, "s1"); err != nil {
			return err
		}
		if hist, err = e.History(ctx, lease.Job, 0, 1000); err != nil {
			return err
		}
		return e.View(ctx, func(r *storage.Reader) error {
			link, err = machine.ReadRemoteReview(r, lease.Job, "s1")
			return err
		})
	}); err != nil {
		t.Fatal(err)
	}
	if eff == nil || eff.Failed || string(eff.Payload) != `"dear reader"` {
		t.Fatalf("the run's effect of s1: %+v", eff)
	}
	recorded := 0
	for _, ev := range hist.Events {
		if ev.Type == engine.EventEffectRecorded && ev.Step == "s1" {
			recorded++
		}
	}
	if recorded != 1 {
		t.Fatalf("the run's history records the effect of s1 %d times, want once", recorded)
	}
	if link == nil || link.Review != id || !link.Closed {
		t.Fatalf("the step's link is %+v, want task %d, closed", link, id)
	}
	var tasks []engine.ReviewID
	var task *engine.Review
	if err := c.onShard(1, func(e *embedded.Engine) (err error) {
		tasks = nil
		if err := e.View(ctx, func(r *storage.Reader) error {
			return r.Scan(storage.ReviewJobPrefix(job), nil, false, func(k, _ []byte) (bool, error) {
				n, err := storage.LastU64(k)
				tasks = append(tasks, engine.ReviewID(n))
				return err == nil, err
			})
		}); err != nil {
			return err
		}
		task, err = e.DescribeReview(ctx, engine.ReviewTarget{ID: id})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 || tasks[0] != id {
		t.Fatalf("review job %q holds tasks %v on shard 1, want task %d once", job, tasks, id)
	}
	if task.ParentJob != lease.Job || task.ParentStep != "s1" || task.State != engine.ReviewSuccess {
		t.Fatalf("task %d: %+v, want SUCCESS of job %d step s1", id, task, lease.Job)
	}
	c.verifyShards()
	c.verifyAcross()
}
