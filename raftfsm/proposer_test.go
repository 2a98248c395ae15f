package raftfsm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/clock"
)

// lateClock is a manual clock whose reading can arrive late: once armed,
// the next Now takes its reading and then runs the armed function before
// it returns, so whatever that function does happens after the time the
// caller gets back.
type lateClock struct {
	*clock.Manual
	mu     sync.Mutex
	onRead func()
}

func (c *lateClock) Now() time.Time {
	now := c.Manual.Now()
	c.mu.Lock()
	f := c.onRead
	c.onRead = nil
	c.mu.Unlock()
	if f != nil {
		f()
	}
	return now
}

func (c *lateClock) arm(f func()) {
	c.mu.Lock()
	c.onRead = f
	c.mu.Unlock()
}

// The leader stamps a log entry's commands with a reading of its clock
// taken after it collected them, so no command is stamped earlier than it
// was proposed. The clock here reads late: while the leader reads it for an
// entry's first proposal, 5 ms pass and a second proposal arrives. Stamped
// with that reading, the second would carry a time from before it existed
// (under load, a soak saw an activity's completion stamped before its
// start).
func TestProposerStampsAfterCollecting(t *testing.T) {
	lc := &lateClock{}
	c := newTestCluster(t, 1, func(cfg *Config) {
		lc.Manual = cfg.Clock.(*clock.Manual)
		cfg.Clock = lc
		cfg.DisableScheduler = true // nothing else reads the clock
	})
	l := c.leader()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	first := &engine.CreateJob{WorkflowID: "first", Type: "t", Queue: "q"}
	second := &engine.CreateJob{WorkflowID: "second", Type: "t", Queue: "q"}
	var secondProposedMS int64
	var secondIn *proposal
	var submitErr error
	lc.arm(func() {
		lc.Advance(5 * time.Millisecond)
		secondProposedMS = lc.Manual.Now().UnixMilli()
		secondIn, submitErr = l.prop.submit(ctx, second)
	})
	firstProposedMS := lc.Manual.Now().UnixMilli()
	if _, err := l.prop.Propose(ctx, first); err != nil {
		t.Fatal(err)
	}
	if submitErr != nil || secondIn == nil {
		t.Fatalf("the second proposal was not made while the clock was read: %v", submitErr)
	}
	if _, err := l.prop.wait(ctx, secondIn); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		name       string
		cmd        *engine.CreateJob
		proposedMS int64
	}{{"first", first, firstProposedMS}, {"second", second, secondProposedMS}} {
		if p.cmd.NowMS < p.proposedMS {
			t.Errorf("the %s command was stamped %d, %d ms before it was proposed", p.name, p.cmd.NowMS, p.proposedMS-p.cmd.NowMS)
		}
		j, err := l.Engine().Describe(ctx, engine.Target{WorkflowID: p.cmd.WorkflowID})
		if err != nil {
			t.Fatal(err)
		}
		if j.CreatedMS < p.proposedMS {
			t.Errorf("run %q was created at %d, %d ms before it was proposed", p.cmd.WorkflowID, j.CreatedMS, p.proposedMS-j.CreatedMS)
		}
	}
}

// Proposals collected together but too big for one entry go into the
// entries after it, in the order they came, each under its own entry's
// stamp; a command too big for any entry is refused alone.
func TestProposerSplitsCollectedProposalsByBytes(t *testing.T) {
	lc := &lateClock{}
	c := newTestCluster(t, 1, func(cfg *Config) {
		lc.Manual = cfg.Clock.(*clock.Manual)
		cfg.Clock = lc
		cfg.DisableScheduler = true
		cfg.MaxEntryBytes = 4096 // two of the commands below fit, three do not
	})
	l := c.leader()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// While the packer reads the clock for the first entry, eleven more
	// proposals arrive; the packer collects them all at once after it.
	var cmds []*engine.CreateJob
	var prs []*proposal
	var tooBig *proposal
	var submitErr error
	lc.arm(func() {
		for i := range 10 {
			cmd := &engine.CreateJob{WorkflowID: fmt.Sprintf("w%d", i), Type: "t", Queue: "q", Input: make([]byte, 1500)}
			pr, err := l.prop.submit(ctx, cmd)
			if err != nil {
				submitErr = err
				return
			}
			cmds, prs = append(cmds, cmd), append(prs, pr)
			lc.Advance(time.Millisecond)
		}
		tooBig, submitErr = l.prop.submit(ctx, &engine.CreateJob{WorkflowID: "big", Type: "t", Queue: "q", Input: make([]byte, 5000)})
	})
	before := l.raft.LastIndex()
	if _, err := l.prop.Propose(ctx, &engine.CreateJob{WorkflowID: "trigger", Type: "t", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	if submitErr != nil || tooBig == nil {
		t.Fatalf("submitting while the clock was read: %v", submitErr)
	}
	var last engine.JobID
	for i, pr := range prs {
		res, err := l.prop.wait(ctx, pr)
		if err != nil {
			t.Fatalf("w%d: %v", i, err)
		}
		id := res.(*engine.CreateResult).Job
		if id <= last {
			t.Fatalf("w%d became job %d after job %d: the proposals were reordered", i, id, last)
		}
		last = id
		if cmds[i].NowMS < lc.Manual.Now().UnixMilli()-int64(10-i) {
			t.Errorf("w%d was stamped %d, before it was proposed", i, cmds[i].NowMS)
		}
	}
	if _, err := l.prop.wait(ctx, tooBig); !errors.Is(err, engine.ErrPayloadTooLarge) {
		t.Fatalf("a command bigger than an entry: %v, want ErrPayloadTooLarge", err)
	}
	// The trigger's entry, then five of two commands each.
	if got := l.raft.LastIndex() - before; got != 6 {
		t.Fatalf("%d log entries, want 6", got)
	}
}

// LeaderChanged wakes its waiters on every node when the leadership
// moves: the old leader's, the new one's and the bystander's.
func TestLeaderChangedWakesEveryNodeOnTransfer(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l := c.leader()
	changed := map[string]<-chan struct{}{}
	for id, n := range c.live() {
		changed[id] = n.LeaderChanged()
	}
	if err := l.TransferLeader(ctx); err != nil {
		t.Fatal(err)
	}
	for id, ch := range changed {
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("%s: LeaderChanged did not wake when %s handed the leadership on", id, l.ID())
		}
	}
}

// stuckFuture is a Raft future that is never answered, as hashicorp/raft
// leaves one still queued in its apply channel when it shuts down.
type stuckFuture struct{}

func (stuckFuture) Error() error  { select {} }
func (stuckFuture) Response() any { return nil }
func (stuckFuture) Index() uint64 { return 0 }

// Closing a node does not wait for ever on a log entry Raft will never
// answer: its proposers learn that its outcome is unknown, and Close
// returns.
func TestCloseDoesNotWaitForUnansweredEntries(t *testing.T) {
	c := newTestCluster(t, 1, nil)
	l := c.leader()
	pr := &proposal{cmd: &engine.CreateJob{Type: "t", Queue: "q"}, reply: make(chan struct{})}
	l.prop.inflight <- &flight{fut: stuckFuture{}, ps: []*proposal{pr}}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		c.kill(l.ID())
	}()
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	select {
	case <-closed:
	case <-timer.C:
		t.Fatal("Close still waits for an entry Raft never answers")
	}
	<-pr.reply
	if !errors.Is(pr.err, engine.ErrUnknownOutcome) {
		t.Fatalf("the proposer of the unanswered entry got %v, want ErrUnknownOutcome", pr.err)
	}
}
