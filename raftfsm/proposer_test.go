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
	l.prop.flying.Add(1)
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

// heldFuture is a Raft future answered when its channel closes: an entry
// a test keeps in flight as long as it likes.
type heldFuture struct{ done chan struct{} }

func (f heldFuture) Error() error { <-f.done; return nil }
func (f heldFuture) Response() any {
	return &entryOutcome{errs: []error{nil}, results: []engine.Result{nil}}
}
func (f heldFuture) Index() uint64 { return 0 }

// packerTrace records what the packer does, through its hooks, in order.
type packerTrace struct{ events chan packerEvent }

// packerEvent is a held-back batch of n (held), or an entry of n commands
// sent to Raft.
type packerEvent struct {
	held bool
	n    int
}

func tracePacker(p *proposer) *packerTrace {
	tr := &packerTrace{events: make(chan packerEvent, 256)}
	p.hooks.Store(&proposerHooks{
		held: func(n int) { tr.events <- packerEvent{held: true, n: n} },
		sent: func(n int) { tr.events <- packerEvent{n: n} },
	})
	return tr
}

// next returns the packer's next event, or fails the test once ctx ends.
func (tr *packerTrace) next(ctx context.Context, t *testing.T) packerEvent {
	t.Helper()
	select {
	case e := <-tr.events:
		return e
	case <-ctx.Done():
		t.Fatalf("waiting for the packer: %v", ctx.Err())
		return packerEvent{}
	}
}

// awaitHeld waits until the packer holds back a batch of n, and fails the
// test if it sends an entry first.
func (tr *packerTrace) awaitHeld(ctx context.Context, t *testing.T, n int) {
	t.Helper()
	for {
		e := tr.next(ctx, t)
		if !e.held {
			t.Fatalf("an entry of %d commands went to Raft while another was in flight; want a batch of %d held", e.n, n)
		}
		if e.n == n {
			return
		}
	}
}

// awaitSent waits for the next entry sent to Raft and returns its command
// count. Batches held meanwhile are skipped when skipHeld is set, and
// fail the test otherwise.
func (tr *packerTrace) awaitSent(ctx context.Context, t *testing.T, skipHeld bool) int {
	t.Helper()
	for {
		e := tr.next(ctx, t)
		if !e.held {
			return e.n
		}
		if !skipHeld {
			t.Fatalf("a batch of %d was held back; want an entry sent at once", e.n)
		}
	}
}

// inFlight puts an entry in l's proposer's flight, answered once the
// returned channel is closed.
func inFlight(l *Node) chan struct{} {
	f := heldFuture{done: make(chan struct{})}
	earlier := &proposal{cmd: &engine.CreateJob{Type: "t", Queue: "q"}, reply: make(chan struct{})}
	l.prop.flying.Add(1)
	l.prop.inflight <- &flight{fut: f, ps: []*proposal{earlier}}
	return f.done
}

// While an entry is in flight, the leader holds back a batch that is not
// full: proposals arriving meanwhile wait, and all go in one entry once
// the entry in flight has settled, so a Raft round carries what arrived
// during the one before (each round costs the same whatever it carries).
// Sent the moment they came, they would have made three entries.
func TestProposerHoldsABatchWhileAnEntryIsInFlight(t *testing.T) {
	var clk *clock.Manual
	c := newTestCluster(t, 1, func(cfg *Config) {
		clk = cfg.Clock.(*clock.Manual)
		cfg.DisableScheduler = true // no proposals but the test's
	})
	l := c.leader()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tr := tracePacker(l.prop)

	release := inFlight(l)
	before := l.raft.LastIndex()
	var prs []*proposal
	var cmds []*engine.CreateJob
	var proposedMS []int64
	for i := range 3 {
		// Time passes while the batch is held: each command must still be
		// stamped no earlier than it was proposed.
		clk.Advance(time.Second)
		cmd := &engine.CreateJob{WorkflowID: fmt.Sprintf("held-%d", i), Type: "t", Queue: "q"}
		proposedMS = append(proposedMS, clk.Now().UnixMilli())
		pr, err := l.prop.submit(ctx, cmd)
		if err != nil {
			t.Fatal(err)
		}
		prs, cmds = append(prs, pr), append(cmds, cmd)
		tr.awaitHeld(ctx, t, i+1) // the packer has it, held with the ones before
	}
	close(release)
	if n := tr.awaitSent(ctx, t, true); n != 3 {
		t.Fatalf("the held batch went as an entry of %d commands, want 3", n)
	}
	for i, pr := range prs {
		if _, err := l.prop.wait(ctx, pr); err != nil {
			t.Fatalf("held-%d: %v", i, err)
		}
		if cmds[i].NowMS < proposedMS[i] {
			t.Errorf("held-%d was stamped %d, %d ms before it was proposed", i, cmds[i].NowMS, proposedMS[i]-cmds[i].NowMS)
		}
	}
	if got := l.raft.LastIndex() - before; got != 1 {
		t.Fatalf("%d log entries for the three proposals, want 1", got)
	}
}

// A full batch is not held back: with an entry in flight, a batch that
// reaches the entry's command limit goes at once, and so do the commands
// that did not fit into the entry before theirs, so under a load that one
// round cannot carry, replication stays pipelined. A proposal at an idle
// leader is not held either.
func TestProposerSendsAFullBatchWhileAnEntryIsInFlight(t *testing.T) {
	c := newTestCluster(t, 1, func(cfg *Config) {
		cfg.MaxEntryCommands = 2
		cfg.DisableScheduler = true
	})
	l := c.leader()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tr := tracePacker(l.prop)

	if _, err := l.prop.Propose(ctx, &engine.CreateJob{WorkflowID: "alone", Type: "t", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	if n := tr.awaitSent(ctx, t, false); n != 1 {
		t.Fatalf("the lone proposal went as an entry of %d commands, want 1", n)
	}

	// Full by count: the second proposal fills the batch.
	release := inFlight(l)
	defer close(release)
	for i := range 2 {
		if _, err := l.prop.submit(ctx, &engine.CreateJob{WorkflowID: fmt.Sprintf("full-%d", i), Type: "t", Queue: "q"}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			tr.awaitHeld(ctx, t, 1)
		}
	}
	if n := tr.awaitSent(ctx, t, true); n != 2 {
		t.Fatalf("the full batch went as an entry of %d commands, want 2", n)
	}

	// Full by bytes: of three big commands held together, two fill an
	// entry, and the third goes next without being held.
	c2 := newTestCluster(t, 1, func(cfg *Config) {
		cfg.MaxEntryBytes = 4096
		cfg.DisableScheduler = true
	})
	l2 := c2.leader()
	tr2 := tracePacker(l2.prop)
	release2 := inFlight(l2)
	for i := range 3 {
		if _, err := l2.prop.submit(ctx, &engine.CreateJob{WorkflowID: fmt.Sprintf("big-%d", i), Type: "t", Queue: "q", Input: make([]byte, 1500)}); err != nil {
			t.Fatal(err)
		}
		tr2.awaitHeld(ctx, t, i+1)
	}
	close(release2)
	if n := tr2.awaitSent(ctx, t, true); n != 2 {
		t.Fatalf("the first entry of the big commands has %d, want 2", n)
	}
	if n := tr2.awaitSent(ctx, t, false); n != 1 {
		t.Fatalf("the second entry of the big commands has %d, want 1", n)
	}
}

// Closing the node answers a batch it holds back, behind an entry Raft
// never answers: the close ends the node's context, so the entry in
// flight settles with an unknown outcome, the hold ends, and the held
// proposal learns that the node closed instead of waiting for ever. (The
// packer also stops holding once its input is closed; a close ends the
// context first, so this test does not reach that branch.)
func TestProposerAnswersAHeldBatchAtClose(t *testing.T) {
	c := newTestCluster(t, 1, func(cfg *Config) { cfg.DisableScheduler = true })
	l := c.leader()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tr := tracePacker(l.prop)
	release := inFlight(l) // never answered: the close must not wait for it
	defer close(release)
	pr, err := l.prop.submit(ctx, &engine.CreateJob{WorkflowID: "held", Type: "t", Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	tr.awaitHeld(ctx, t, 1)
	c.kill(l.ID())
	if _, err := l.prop.wait(ctx, pr); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the held proposal after the node closed: %v, want the close's error", err)
	}
}
