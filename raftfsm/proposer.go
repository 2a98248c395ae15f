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
// of the embedded group commit), stamps them with the leader's clock, and
// keeps several entries in flight so replication is pipelined. Elsewhere it
// refuses with engine.NotLeaderError.
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
	wg       sync.WaitGroup

	mu     sync.RWMutex
	closed bool

	// commands counts the commands handed to Raft, for tests and stats.
	commands atomic.Uint64
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
		in: make(chan *proposal, 4096), inflight: make(chan *flight, 64), done: make(chan struct{})}
	p.wg.Add(2)
	go p.pack()
	go p.settle()
	return p
}

// Propose implements embedded.Log.
func (p *proposer) Propose(ctx context.Context, cmd engine.Command) (engine.Result, error) {
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
	if p.closed {
		p.mu.RUnlock()
		return nil, engine.ErrClosed
	}
	select {
	case p.in <- pr:
		p.mu.RUnlock()
	case <-ctx.Done():
		p.mu.RUnlock()
		return nil, ctx.Err()
	}
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

// pack turns waiting proposals into log entries.
func (p *proposer) pack() {
	defer p.wg.Done()
	defer close(p.inflight)
	var batch []*proposal
	var carry *proposal // the proposal that did not fit into the last entry
	for {
		first := carry
		carry = nil
		if first == nil {
			var ok bool
			if first, ok = <-p.in; !ok {
				return
			}
		}
		nowMS := p.clock.Now().UnixMilli()
		batch = batch[:0]
		size := 0
		add := func(pr *proposal) bool {
			pr.cmd.Head().NowMS = nowMS
			data, err := machine.EncodeCommand(pr.cmd)
			if err == nil && len(data) > p.maxBytes {
				err = fmt.Errorf("%w: %s command of %d bytes, over the %d-byte log entry limit", engine.ErrPayloadTooLarge, pr.cmd.Kind(), len(data), p.maxBytes)
			}
			if err != nil {
				pr.err = err
				close(pr.reply)
				return true
			}
			if len(batch) > 0 && size+len(data) > p.maxBytes {
				return false
			}
			pr.data = data
			size += len(data)
			batch = append(batch, pr)
			return true
		}
		add(first)
	drain:
		for len(batch) < p.maxCmds {
			select {
			case pr, ok := <-p.in:
				if !ok {
					break drain
				}
				if !add(pr) {
					carry = pr
					break drain
				}
			default:
				break drain
			}
		}
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
		p.inflight <- &flight{fut: p.n.raft.Apply(data, p.timeout), ps: ps}
	}
}

// settle answers each entry's proposers once Raft has applied it (or
// failed to), in log order.
func (p *proposer) settle() {
	defer p.wg.Done()
	for f := range p.inflight {
		if err := f.fut.Error(); err != nil {
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
