package raftfsm

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
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
	for _, kind := range []string{"signal", "cancel"} {
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
	_, eng1 := c.shardLeader(1)
	target, err := eng1.Create(ctx, engine.CreateJob{WorkflowID: targetWF, Type: "target", Queue: "targets"})
	if err != nil {
		t.Fatal(err)
	}
	_, eng0 := c.shardLeader(0)
	s, err := eng0.Create(ctx, engine.CreateJob{WorkflowID: senderWF, Type: "sender", Queue: "senders"})
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := eng0.Claim(ctx, engine.Claim{Queue: "senders", Owner: "sw", LeaseMS: 600_000, Max: 1})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim the sender: %v %v", claimed, err)
	}
	sender := &engine.SenderStep{LeaseRef: engine.LeaseRef{Job: s.Job, Attempt: claimed[0].Attempt, Token: claimed[0].LeaseToken}, Step: "s1"}

	var once sync.Once
	hit := make(chan struct{})
	heal := make(chan struct{})
	refused := make(chan struct{}, 64)
	c.mu.Lock()
	c.deliverHook = func(from, to string, d *engine.Deliver) (*engine.DeliverResult, error, bool) {
		if fault == "partition" {
			select {
			case <-heal:
				return nil, nil, false
			default:
			}
			select {
			case refused <- struct{}{}:
			default:
			}
			return nil, errors.New("connect: no route to host " + to), true
		}
		first := false
		once.Do(func() { first = true })
		if !first {
			return nil, nil, false
		}
		_, aerr := c.applyDeliver(ctx, to, d)
		if aerr != nil {
			t.Errorf("the first delivery: %v", aerr)
		}
		switch fault {
		case "source":
			// Applied on the target; its answer never comes back: the
			// source's leader dies before it can acknowledge.
			close(hit)
			<-c.live()[from].ctx.Done() // until the test kills the node
		case "target":
			// The target's leader applied it and dies before it answers.
			c.kill(to)
			close(hit)
		}
		return nil, errors.New("connection reset by peer"), true
	}
	c.mu.Unlock()

	propose := func() error {
		var err error
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
		<-hit
		c.kill("n1")
		// The sender's worker, not knowing whether its command landed,
		// sends again at the shard's new leader: the sending mark answers,
		// and nothing is sent twice.
		for {
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
		<-hit
	case "partition":
		for range 3 {
			<-refused // the deliverer tried, and tries again after its backoff
		}
		// The source's leader counts the entry pending for the target.
		if got := c.gather("n1").Value(metrics.EngineOutboxPending, "shard", "0", "target", "1"); got != 1 {
			t.Errorf("n1's pending gauge for shard 0 → 1 is %v while the entry is stuck, want 1", got)
		}
		close(heal)
	}

	// The outcome reaches the sender's step, and nothing stays pending.
	c.await("the step's effect, and no entry or mark pending", func() bool {
		for _, h := range c.live() {
			for k := range c.shards {
				n := h.Shard(k)
				if n == nil {
					continue
				}
				pending := 0
				_ = n.Engine().View(engine.WithStaleRead(ctx), func(r *storage.Reader) error {
					es, err := machine.PendingEntries(r, 0)
					pending = len(es)
					if err != nil {
						return err
					}
					return r.Scan(storage.SendingPrefix, nil, true, func([]byte, []byte) (bool, error) { pending++; return true, nil })
				})
				if pending > 0 {
					return false
				}
			}
		}
		_, e0 := c.shardLeaderNow(0)
		if e0 == nil {
			return false
		}
		eff, err := e0.Effect(engine.WithStaleRead(ctx), s.Job, "s1")
		return err == nil && eff != nil
	})
	_, eng0 = c.shardLeader(0)
	eff, err := eng0.Effect(ctx, s.Job, "s1")
	if err != nil || eff.Failed {
		t.Fatalf("the sender's effect of s1: %+v %v", eff, err)
	}
	if n := countEvents(t, eng0, s.Job, engine.EventEffectRecorded); n != 1 {
		t.Fatalf("the sender's history records the effect of s1 %d times, want once", n)
	}
	_, eng1 = c.shardLeader(1)
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
