package embedded

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/clock"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// Log orders commands and applies them durably. Propose returns once cmd is
// applied and durable, with its result or its typed error. Propose may be
// called from many goroutines at once; the log applies commands one at a
// time, in one order, and stamps each with the time (callers leave NowMS 0).
//
// When ctx ends before the command is applied, Propose returns ctx's error
// and the outcome is unknown: the command may still be applied. Retry with
// the same RequestID to learn the result without applying it twice.
//
// The log owns cmd once it is proposed: it stamps cmd's NowMS in place and
// may still be doing so after a Propose ended by ctx returns. Retry with a
// fresh copy of the command, never the same value (Engine's methods always
// propose copies).
type Log interface {
	Propose(ctx context.Context, cmd engine.Command) (engine.Result, error)
}

// LocalLog is the embedded Log: one goroutine applies proposals in arrival
// order, packing all that are waiting into one Badger transaction and one
// sync (group commit), then answers each caller with its own result.
type LocalLog struct {
	db      *storage.DB
	machine *machine.Machine
	clock   clock.Clock
	maxCmds int

	proposals chan *proposal
	done      chan struct{}
	closeOnce sync.Once
	mu        sync.RWMutex // guards closed against concurrent Propose
	closed    bool
	onCommit  func(touched, closed []uint64) // called after each durable batch (the scheduler's wake-up)
	meter     *Meter                         // nil: no metrics
	queues    *TaskQueues                    // nil: no task queue view
	notes     machine.Notes                  // the notes of a log without a Meter that counts for queues
	synced    bool                           // each commit syncs to disk
}

type proposal struct {
	cmd   engine.Command
	res   engine.Result
	err   error
	reply chan struct{}
}

// LocalLogConfig configures a LocalLog. The zero value of every field but DB
// is valid.
type LocalLogConfig struct {
	DB *storage.DB
	// Machine applies the commands; nil means default limits.
	Machine *machine.Machine
	// Clock stamps the commands; nil means clock.Wall().
	Clock clock.Clock
	// MaxBatchCommands bounds the commands in one group commit; 0 means 1024.
	MaxBatchCommands int
	// OnCommit, if set, is called (from the log's goroutine) after each
	// durable batch that wrote something, with the ids of the job records
	// the batch wrote and of the jobs it closed (storage.Batch.TouchedJobs
	// and ClosedJobs, never nil). It must not block.
	OnCommit func(touched, closed []uint64)
	// Meter, if set, records the metrics of applying and committing.
	Meter *Meter
	// TaskQueues, if set, counts the jobs that become ready on each queue
	// and those claimed, for its rates.
	TaskQueues *TaskQueues
}

// NewLocalLog starts a LocalLog; Close stops it.
func NewLocalLog(cfg LocalLogConfig) (*LocalLog, error) {
	if cfg.DB == nil {
		return nil, errors.New("engine: LocalLogConfig.DB is required")
	}
	if cfg.MaxBatchCommands < 0 {
		return nil, fmt.Errorf("engine: LocalLogConfig.MaxBatchCommands %d is negative", cfg.MaxBatchCommands)
	}
	l := &LocalLog{db: cfg.DB, machine: cfg.Machine, clock: cfg.Clock, maxCmds: cfg.MaxBatchCommands,
		proposals: make(chan *proposal, 1024), done: make(chan struct{}), onCommit: cfg.OnCommit, meter: cfg.Meter, queues: cfg.TaskQueues}
	so := cfg.DB.Options()
	l.synced = !so.NoSync && !so.InMemory
	if l.machine == nil {
		l.machine, _ = machine.NewMachine(engine.Limits{}) // the zero limits are valid
	}
	if l.clock == nil {
		l.clock = clock.Wall()
	}
	if l.maxCmds == 0 {
		l.maxCmds = 1024
	}
	go l.run()
	return l, nil
}

// Propose implements Log.
func (l *LocalLog) Propose(ctx context.Context, cmd engine.Command) (engine.Result, error) {
	p := &proposal{cmd: cmd, reply: make(chan struct{})}
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return nil, engine.ErrClosed
	}
	select {
	case l.proposals <- p:
		l.mu.RUnlock()
	case <-ctx.Done():
		l.mu.RUnlock()
		return nil, ctx.Err()
	}
	select {
	case <-p.reply:
		// A storage error (a full disk at the commit, a failed read in
		// Apply) matches the contract's sentinel too.
		return p.res, machine.MarkStorageError(p.err)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close stops accepting proposals, finishes those already accepted and stops.
func (l *LocalLog) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		close(l.proposals)
		l.mu.Unlock()
	})
	<-l.done
	return nil
}

func (l *LocalLog) run() {
	defer close(l.done)
	pending := make([]*proposal, 0, l.maxCmds)
	for p := range l.proposals {
		pending = append(pending[:0], p)
	drain:
		for len(pending) < l.maxCmds {
			select {
			case q, ok := <-l.proposals:
				if !ok {
					break drain
				}
				pending = append(pending, q)
			default:
				break drain
			}
		}
		l.applyBatch(pending)
	}
}

// applyBatch applies proposals in order into as few batches as their writes
// allow, commits each batch with one sync, and only then answers the callers
// whose commands it holds.
func (l *LocalLog) applyBatch(ps []*proposal) {
	nowMS := l.clock.Now().UnixMilli()
	batch := l.db.NewBatch()
	var waiting []*proposal // applied, answered after the commit
	commit := func() {
		wrote := !batch.Empty()
		touched, closed := batch.TouchedJobs(), batch.ClosedJobs()
		start := l.meter.Start()
		var err error
		if wrote {
			// Refuse before Badger writes into a disk too full to take
			// what it writes on its own afterwards (see storage.CheckSpace).
			err = l.db.CheckSpace()
		}
		if err != nil {
			batch.Discard()
		} else {
			err = batch.Commit()
		}
		switch {
		case !wrote:
		case err == nil:
			l.meter.Committed(len(waiting), start, l.synced)
			l.queues.Committed()
		default:
			l.meter.Discard()
			l.queues.Discard()
		}
		for _, p := range waiting {
			if err != nil && p.err == nil {
				p.res, p.err = nil, fmt.Errorf("engine: commit: %w", err)
			}
			close(p.reply)
		}
		waiting = waiting[:0]
		if err == nil && wrote && l.onCommit != nil {
			l.onCommit(touched, closed)
		}
	}
	for _, p := range ps {
		p.cmd.Head().NowMS = nowMS
		tx := batch.Begin()
		start := l.meter.Start()
		p.res, p.err = l.machine.ApplyNoting(tx, p.cmd, l.applyNotes())
		l.meter.Applied(p.cmd, p.res, p.err, start)
		if p.err != nil {
			// Nothing of this command reached the batch, but its error was
			// judged on state the batch holds: answer after the commit.
			waiting = append(waiting, p)
			continue
		}
		diff := l.meter.Diff(tx, p.cmd, p.res)
		err := batch.Add(tx)
		if errors.Is(err, storage.ErrBatchFull) {
			commit()
			batch = l.db.NewBatch()
			err = batch.Add(tx)
		}
		if err != nil {
			p.res, p.err = nil, fmt.Errorf("%w: %v", engine.ErrPayloadTooLarge, err)
		} else {
			l.meter.Stage(diff)
			if l.queues != nil {
				l.queues.Stage(l.applyNotes())
			}
		}
		waiting = append(waiting, p)
	}
	commit()
}

// applyNotes returns the notes Apply writes for the next command: the
// Meter's, else the log's own when the task queue view needs them, else
// nil (nothing is noted).
func (l *LocalLog) applyNotes() *machine.Notes {
	if n := l.meter.Notes(); n != nil {
		return n
	}
	if l.queues != nil {
		return &l.notes
	}
	return nil
}
