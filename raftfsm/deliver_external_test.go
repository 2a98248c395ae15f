package raftfsm

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/metrics"
	"github.com/heddlewf/heddle/storage"
)

// TestCrossShardSignalAndCancelLandOnce: a run on shard 0 signals a run on
// shard 1, or asks it to cancel, on behalf of a step (engine.SenderStep).
// The command goes through shard 0's outbox, and its outcome comes back as
// the step's effect. Each is run with the source shard's leader killed
// after the target applied the delivery and before the acknowledgement,
// with the target shard's leader killed after it applied the delivery and
// before it answered, and with every delivery between the two leaders
// failing for a while (a partition between them, healed later). Each ends
// with the target having the signal (or the cancel request) once, the
// step's effect recorded once, no entry or sending mark pending, and
// VerifyShard and VerifyAcrossShards clean.
func TestCrossShardSignalAndCancelLandOnce(t *testing.T) {
	crossShardFaults(t, "signal", "cancel")
}

// TestCrossShardScheduleStartsOnce: a schedule on shard 0 starts a run
// whose workflow id routes to shard 1 (TriggerSchedule), under the same
// faults as TestCrossShardSignalAndCancelLandOnce. Each ends with the run
// created once on shard 1, the schedule knowing its job id, and nothing
// pending; completed, the run's end reaches the schedule, which forgets it.
func TestCrossShardScheduleStartsOnce(t *testing.T) {
	crossShardFaults(t, "schedule")
}

func crossShardFaults(t *testing.T, kinds ...string) {
	for _, kind := range kinds {
		for _, fault := range []string{"source", "target", "partition"} {
			t.Run(kind+"/"+fault, func(t *testing.T) { crossShardExternal(t, kind, fault) })
		}
	}
}

func crossShardExternal(t *testing.T, kind, fault string) {
	c := newTestHosts(t, 3, 2)
	c.awaitDesiredLeaders() // n1 leads shard 0, n2 shard 1
	ctx := context.Background()
	senderWF, targetWF := keyOn("sender-", 0, 2), keyOn("target-", 1, 2)
	var target *engine.CreateResult
	c.atLeader(1, func(eng *embedded.Engine) (err error) {
		target, err = eng.Create(ctx, engine.CreateJob{Header: engine.Header{RequestID: "create-target"}, WorkflowID: targetWF, Type: "target", Queue: "targets"})
		return err
	})
	_, eng0 := c.shardLeader(0)
	sender := &engine.SenderStep{LeaseRef: c.runningOn(0, senderWF, "sender", "senders"), Step: "s1"}

	f := c.injectDeliveryFault(fault, func(*engine.Deliver) bool { return true })

	var schedule, runWF string
	if kind == "schedule" {
		// The run of a trigger at the clock's time routes to shard 1.
		schedule = keyOn("sched-", 0, 2)
		nowMS := c.clock.Now().UnixMilli()
		for i := 0; runWF == ""; i++ {
			base := fmt.Sprintf("rep%d", i)
			if id := engine.ScheduleWorkflowID(&engine.Schedule{Action: engine.ScheduleAction{WorkflowID: base}}, nowMS); engine.ShardOfKey(id, 2) == 1 {
				runWF = id
				c.atLeader(0, func(eng *embedded.Engine) error {
					_, err := eng.CreateSchedule(ctx, engine.CreateSchedule{Header: engine.Header{RequestID: "create-" + schedule}, ID: schedule,
						Spec:   engine.ScheduleSpec{Intervals: []engine.ScheduleInterval{{EveryMS: 24 * 3600_000}}},
						Action: engine.ScheduleAction{WorkflowID: base, Type: "report", Queue: "reports"}})
					return err
				})
			}
		}
	}
	propose := func() error {
		var err error
		if kind == "schedule" {
			var res *engine.ScheduleResult
			if res, err = eng0.TriggerSchedule(ctx, engine.TriggerSchedule{ID: schedule}); err == nil &&
				(len(res.Started) != 1 || res.Started[0].WorkflowID != runWF || res.Started[0].Delivery == nil) {
				t.Fatalf("the trigger started %+v, want %q on its way to shard 1", res.Started, runWF)
			}
			return err
		}
		if kind == "signal" {
			_, err = eng0.Signal(ctx, engine.Signal{Target: engine.Target{WorkflowID: targetWF}, Name: "ping", Payload: []byte(`"hi"`), Sender: sender})
		} else {
			_, err = eng0.RequestCancel(ctx, engine.RequestCancel{Target: engine.Target{WorkflowID: targetWF}, Reason: "stop", Sender: sender})
		}
		return err
	}
	if err := propose(); err != nil {
		t.Fatalf("the %s: %v", kind, err)
	}
	switch fault {
	case "source":
		<-f.hit
		c.kill("n1")
		// The sender's worker, not knowing whether its command landed,
		// sends again at the shard's new leader: the sending mark answers,
		// and nothing is sent twice. (A schedule's start is the schedule
		// shard's own: its entry is in the shard's state, and the new
		// leader delivers it.)
		for kind != "schedule" {
			_, eng0 = c.shardLeader(0)
			err := propose()
			if err == nil {
				break
			}
			if !errors.Is(err, engine.ErrNotLeader) {
				t.Fatalf("the %s sent again: %v", kind, err)
			}
		}
	case "target":
		<-f.hit
	case "partition":
		for range 3 {
			<-f.refused // the deliverer tried, and tries again after its backoff
		}
		// The source's leader counts the entry pending for the target.
		if got := c.gather("n1").Value(metrics.EngineOutboxPending, "shard", "0", "target", "1"); got != 1 {
			t.Errorf("n1's pending gauge for shard 0 → 1 is %v while the entry is stuck, want 1", got)
		}
		close(f.heal)
	}

	// The outcome reaches the sender's step, and nothing stays pending.
	c.await("the outcome (the step's effect, or the schedule's run's job id), and no entry or mark pending", func() bool {
		if !c.nothingPending(ctx) {
			return false
		}
		_, e0 := c.shardLeaderNow(0)
		if e0 == nil {
			return false
		}
		if kind == "schedule" {
			// The acknowledgement gave the schedule its run's job id.
			d, err := e0.DescribeSchedule(engine.WithStaleRead(ctx), schedule)
			return err == nil && len(d.Schedule.Running) == 1 && d.Schedule.Running[0].Job != 0
		}
		eff, err := e0.Effect(engine.WithStaleRead(ctx), sender.Job, "s1")
		return err == nil && eff != nil
	})
	if kind == "schedule" {
		scheduleRanOnce(t, c, schedule, runWF)
		return
	}
	_, eng0 = c.shardLeader(0)
	eff, err := eng0.Effect(ctx, sender.Job, "s1")
	if err != nil || eff.Failed {
		t.Fatalf("the sender's effect of s1: %+v %v", eff, err)
	}
	if n := countEvents(t, eng0, sender.Job, engine.EventEffectRecorded); n != 1 {
		t.Fatalf("the sender's history records the effect of s1 %d times, want once", n)
	}
	_, eng1 := c.shardLeader(1)
	want := engine.EventSignalReceived
	if kind == "cancel" {
		want = engine.EventCancelRequested
	}
	if n := countEvents(t, eng1, target.Job, want); n != 1 {
		t.Fatalf("the target's history has %d %s events, want 1", n, want)
	}
	if fault == "partition" {
		// The acknowledgement that drained the pair is counted, and the
		// gauge follows the outbox back to 0 at the next look.
		c.await("n1's pending gauge back to 0", func() bool {
			return c.gather("n1").Value(metrics.EngineOutboxPending, "shard", "0", "target", "1") == 0
		})
		if got := c.gather("n1").Value(metrics.EngineOutboxAcked, "shard", "0", "target", "1"); got != 1 {
			t.Errorf("n1 acknowledged %v entries of shard 0 → 1, want 1", got)
		}
	}
	c.verifyShards()
	c.verifyAcross()
}

// scheduleRanOnce checks that schedule's run runWF exists once on shard 1
// and that the schedule knows its job id; then completes it and waits
// until the schedule forgets it, and verifies both shards.
func scheduleRanOnce(t *testing.T, c *testHosts, schedule, runWF string) {
	t.Helper()
	ctx := context.Background()
	_, eng1 := c.shardLeader(1)
	var runs []uint64
	if err := eng1.View(ctx, func(r *storage.Reader) error {
		return r.Scan(storage.RunsPrefix(runWF), nil, false, func(k, _ []byte) (bool, error) { runs = append(runs, 0); return true, nil })
	}); err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 {
		t.Fatalf("the schedule's run %q has %d runs on shard 1, want 1", runWF, len(runs))
	}
	run, err := eng1.Describe(ctx, engine.Target{WorkflowID: runWF})
	if err != nil {
		t.Fatal(err)
	}
	_, eng0 := c.shardLeader(0)
	d, err := eng0.DescribeSchedule(ctx, schedule)
	if err != nil {
		t.Fatal(err)
	}
	if s := d.Schedule; len(s.Running) != 1 || s.Running[0].Job != run.ID || s.Running[0].Delivery != nil || s.NumActions != 1 {
		t.Fatalf("the schedule runs %+v (%d actions), want run %d of %q once", s.Running, s.NumActions, run.ID, runWF)
	}
	// The run ends on shard 1; its end reaches the schedule.
	var claimed []engine.ClaimedJob
	for len(claimed) == 0 {
		_, eng1 = c.shardLeader(1)
		claimed, err = eng1.Claim(ctx, engine.Claim{Queue: "reports", Owner: "rw", LeaseMS: 600_000, Max: 1})
		if err != nil && !errors.Is(err, engine.ErrNotLeader) {
			t.Fatal(err)
		}
	}
	c.atLeader(1, func(eng *embedded.Engine) error {
		_, err := eng.Complete(ctx, engine.Complete{LeaseRef: engine.LeaseRef{Job: run.ID, Attempt: claimed[0].Attempt, Token: claimed[0].LeaseToken}})
		return err
	})
	c.await("the schedule to forget its ended run", func() bool {
		_, e0 := c.shardLeaderNow(0)
		if e0 == nil {
			return false
		}
		d, err := e0.DescribeSchedule(engine.WithStaleRead(ctx), schedule)
		return err == nil && len(d.Schedule.Running) == 0
	})
	c.verifyShards()
	c.verifyAcross()
}

// countEvents counts the events of type typ in job's history, read at
// eng (a shard's leader).
func countEvents(t *testing.T, eng interface {
	History(context.Context, engine.JobID, uint64, int) (*engine.HistoryPage, error)
}, job engine.JobID, typ engine.EventType) int {
	t.Helper()
	hist, err := eng.History(context.Background(), job, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range hist.Events {
		if ev.Type == typ {
			n++
		}
	}
	return n
}
