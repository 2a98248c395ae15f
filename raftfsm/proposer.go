package raftfsm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/clock"
	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/machine"
)

// proposer is the cluster's embedded.Log. On the leader it packs the
// proposals waiting at one moment into one log entry (the Raft counterpart
// of the embedded group commit) and stamps them with a reading of the
// leader's clock taken after it collected them. While entries are in
// flight, it holds the next batch back until they have settled or the
// batch is full, and proposals arriving meanwhile join it (see pack).
// Elsewhere it refuses with engine.NotLeaderError.
//
// Apply keeps Now monotonic from the stored last Now, so a new leader whose
// clock is behind the old one's cannot move time backwards.
type proposer struct {
	n        *Node
	clock    clock.Clock
	maxCmds  int
	maxBytes int
	timeout  time.Duration

	in       chan *proposal
	inflight chan *flight
	done     chan struct{}
	// flying counts the entries handed to Raft and not yet settled, and
	// settled is signalled (without blocking) each time one is, so a
	// packer holding a batch back looks again (see pack).
	flying  atomic.Int64
	settled chan struct{}

	// hooks, nil outside tests, is read by the packer (see proposerHooks).
	hooks atomic.Pointer[proposerHooks]
	wg    sync.WaitGroup

	mu     sync.RWMutex
	closed bool

	// commands counts the commands handed to Raft, for tests and stats.
	commands atomic.Uint64
}

// proposerHooks let a test follow the packer: held is called each time a
// held-back batch (of waiting commands) waits for more proposals or for
// the entries in flight, and sent with the number of commands each time
// an entry goes to Raft. Both run on the packer's goroutine.
type proposerHooks struct {
	held func(waiting int)
	sent func(cmds int)
}

type proposal struct {
	cmd   engine.Command
	data  []byte
	res   engine.Result
	err   error
	reply chan struct{}
}

// flight is one log entry on its way through Raft.
type flight struct {
	fut raft.ApplyFuture
	ps  []*proposal
}

var _ embedded.Log = (*proposer)(nil)

func newProposer(n *Node, clk clock.Clock, maxCmds, maxBytes int, timeout time.Duration) *proposer {
	p := &proposer{n: n, clock: clk, maxCmds: maxCmds, maxBytes: maxBytes, timeout: timeout,
		in: make(chan *proposal, 4096), inflight: make(chan *flight, 64), done: make(chan struct{}),
		settled: make(chan struct{}, 1)}
	p.wg.Add(2)
	go p.pack()
	go p.settle()
	return p
}

// Propose implements embedded.Log.
func (p *proposer) Propose(ctx context.Context, cmd engine.Command) (engine.Result, error) {
	pr, err := p.submit(ctx, cmd)
	if err != nil {
		return nil, err
	}
	return p.wait(ctx, pr)
}

// submit hands cmd to the packer and returns its proposal without waiting
// for the answer (see wait).
func (p *proposer) submit(ctx context.Context, cmd engine.Command) (*proposal, error) {
	if p.n.raft.State() != raft.Leader {
		return nil, p.n.notLeader()
	}
	// Every node applies every entry and cannot refuse one, so the leader
	// refuses proposals while its own disk is under the reserve. (Each
	// node enforces the reserve only as leader; see docs/operations.md.)
	if err := p.n.fsm.checkSpace(); err != nil {
		return nil, machine.MarkStorageError(err)
	}
	pr := &proposal{cmd: cmd, reply: make(chan struct{})}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return nil, engine.ErrClosed
	}
	select {
	case p.in <- pr:
		return pr, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// wait returns the answer to a submitted proposal.
func (p *proposer) wait(ctx context.Context, pr *proposal) (engine.Result, error) {
	select {
	case <-pr.reply:
		// A storage error of the entry's application matches the
		// contract's sentinel too.
		return pr.res, machine.MarkStorageError(pr.err)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *proposer) close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.in)
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// pack turns waiting proposals into log entries. It collects every
// proposal waiting at one moment (up to maxCmds) first, and only then reads
// the clock and stamps them: a proposal that arrives while the clock is
// read or while the entry is encoded goes into the next entry, under a
// later reading, so no command is ever stamped earlier than it was
// proposed. Collected proposals that do not fit into the entry's bytes
// stay, in order, for the next one.
//
// While an entry is in flight, a batch that is not full is held back,
// and collects what arrives, until the entries in flight have settled
// (Nagle's rule, and what etcd-io/raft's users get by proposing between
// Ready cycles). Each Raft round costs the same fixed work whatever it
// carries: the leader's append, an AppendEntries to each follower and
// their appends, and an apply on every node. Raft groups the entries
// queued at one moment into one round, but entries sent the moment
// anything waited still made rounds of a few commands each under load;
// held back, a round carries what arrived during the one before
// (docs/sharding.md, "Measured"). A proposal arriving at an idle group
// goes at once. A batch of maxCmds goes at once too, as do the commands
// that did not fit into the entry before theirs, so replication stays
// pipelined when a round cannot carry the load. A batch is not weighed
// in bytes before it is stamped and encoded, so one that is full by
// bytes alone waits for the round in flight like any other, and then
// goes as several entries back to back.
func (p *proposer) pack() {
	defer p.wg.Done()
	defer close(p.inflight)
	var waiting []*proposal // collected, in arrival order, not yet in an entry
	var batch []*proposal
	open := true
	overflow := false // waiting holds what did not fit into the last entry's bytes
	for {
		if len(waiting) == 0 {
			pr, ok := <-p.in
			if !ok {
				return
			}
			waiting = append(waiting, pr)
		}
	collect:
		for open && len(waiting) < p.maxCmds {
			select {
			case pr, ok := <-p.in:
				if !ok {
					open = false
					break collect
				}
				waiting = append(waiting, pr)
			default:
				break collect
			}
		}
		hooks := p.hooks.Load()
	hold:
		for open && !overflow && len(waiting) < p.maxCmds && p.flying.Load() > 0 {
			if hooks != nil && hooks.held != nil {
				hooks.held(len(waiting))
			}
			select {
			case pr, ok := <-p.in:
				if !ok {
					open = false
					break hold
				}
				waiting = append(waiting, pr)
			case <-p.settled:
			}
		}
		nowMS := p.clock.Now().UnixMilli()
		batch = batch[:0]
		size, used := 0, 0
		for _, pr := range waiting {
			pr.cmd.Head().NowMS = nowMS
			data, err := machine.EncodeCommand(pr.cmd)
			if err == nil && len(data) > p.maxBytes {
				err = fmt.Errorf("%w: %s command of %d bytes, over the %d-byte log entry limit", engine.ErrPayloadTooLarge, pr.cmd.Kind(), len(data), p.maxBytes)
			}
			if err != nil {
				pr.err = err
				close(pr.reply)
				used++
				continue
			}
			if len(batch) > 0 && size+len(data) > p.maxBytes {
				break // this one and the rest start the next entry
			}
			pr.data = data
			size += len(data)
			batch = append(batch, pr)
			used++
		}
		n := copy(waiting, waiting[used:])
		clear(waiting[n:]) // answered or in flight: not ours to keep alive
		waiting = waiting[:n]
		overflow = n > 0
		if len(batch) == 0 {
			continue
		}
		cmds := make([][]byte, len(batch))
		for i, pr := range batch {
			cmds[i] = pr.data
		}
		data, err := encodeEntry(entryCommands, &commandsBody{Cmds: cmds})
		ps := append([]*proposal(nil), batch...)
		if err != nil {
			answer(ps, nil, err)
			continue
		}
		p.commands.Add(uint64(len(ps)))
		p.flying.Add(1)
		fut := p.n.raft.Apply(data, p.timeout)
		if hooks != nil && hooks.sent != nil {
			hooks.sent(len(ps))
		}
		p.inflight <- &flight{fut: fut, ps: ps}
	}
}

// settle answers each entry's proposers once Raft has applied it (or
// failed to), in log order. Once the node is closing it waits for no entry
// Raft has not answered yet (see futureError): their outcome is unknown.
func (p *proposer) settle() {
	defer p.wg.Done()
	for f := range p.inflight {
		err := futureError(p.n.ctx, f.fut)
		p.flying.Add(-1)
		select {
		case p.settled <- struct{}{}:
		default: // a signal is waiting already
		}
		if err != nil {
			answer(f.ps, nil, p.n.applyError(err))
			continue
		}
		out, ok := f.fut.Response().(*entryOutcome)
		if !ok || (len(out.errs) != len(f.ps) && len(out.errs) != 1) {
			answer(f.ps, nil, fmt.Errorf("%w: log entry answered with %T", engine.ErrUnknownOutcome, f.fut.Response()))
			continue
		}
		if len(out.errs) == 1 && len(f.ps) > 1 { // the whole entry failed to decode
			answer(f.ps, nil, out.errs[0])
			continue
		}
		for i, pr := range f.ps {
			if out.errs[i] == nil {
				pr.res = out.results[i]
			}
			pr.err = out.errs[i]
			close(pr.reply)
		}
	}
}

func answer(ps []*proposal, res engine.Result, err error) {
	for _, pr := range ps {
		pr.res, pr.err = res, err
		close(pr.reply)
	}
}

// applyError maps an error of raft.Apply: ErrNotLeader means the entry was
// never appended, so the caller may go to the leader; anything after the
// entry was handed to Raft (leadership lost, shutdown, timeout) leaves its
// fate unknown.
func (n *Node) applyError(err error) error {
	if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipTransferInProgress) {
		return n.notLeader()
	}
	return fmt.Errorf("%w: %v", engine.ErrUnknownOutcome, err)
}
