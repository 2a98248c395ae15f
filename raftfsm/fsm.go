package raftfsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// keyEntryPart records how many commands of a multi-command entry are
// already in the store, when one entry's writes did not fit into one Badger
// transaction: a node that crashes between the two transactions resumes the
// entry after them instead of applying its first commands twice.
var keyEntryPart = []byte("mraftpart")

// keyNodePrefix prefixes each member's HTTP address (nodeBody entries).
const keyNodePrefix = "mnode/"

// FSM is the replicated state machine: a Badger database that committed log
// entries are applied to by machine.Apply.
//
// Raft calls ApplyBatch, Snapshot and Restore from one goroutine; View may
// run concurrently with all of them. Restore replaces the database under a
// write lock, so a View sees either the old state or the new one.
type FSM struct {
	machine commandApplier
	state   replicaState

	mu sync.RWMutex // guards db against Restore's swap
	db *storage.DB

	applied   atomic.Uint64 // the last log index processed (any entry type)
	appliedMu sync.Mutex
	appliedCh chan struct{} // closed and replaced whenever applied advances

	// onApply is called after a batch that wrote something (the engine's
	// commit notification) with the job records it wrote and the jobs it
	// closed, nil after a restore (anything may have changed); it must not
	// block.
	onApply func(touched, closed []uint64)
	// meter records the metrics of applying (nil: none). Set before Raft
	// starts, then used by Raft's applying goroutine alone.
	meter *embedded.Meter
	// queues is the node's task queue view, which the applied commands'
	// notes count into (nil: none). Set before Raft starts.
	queues *embedded.TaskQueues
	// notes are the notes Apply writes when queues needs them and meter
	// has none of its own; Raft's applying goroutine alone uses them.
	notes machine.Notes
	// damaged, when not empty, says that the state database failed its
	// integrity checks at open and was replaced by an empty one (see
	// stateDir.open); Node.Open logs it and rebuilds the state.
	damaged string
	// shard is the index of the shard the FSM holds, for the errors it
	// answers with (0 in a cluster of one group).
	shard int
}

var _ raft.BatchingFSM = (*FSM)(nil)

// commandApplier is what the FSM applies commands with: *machine.Machine, or
// in tests one that fails like a broken disk. n, when not nil, gets what
// the metrics count (machine.Notes).
type commandApplier interface {
	ApplyNoting(tx *storage.Tx, cmd engine.Command, n *machine.Notes) (engine.Result, error)
}

// entryOutcome is what ApplyBatch returns for one log entry: one result or
// error per command, in order. Raft hands it to the proposer's future
// in-process; it is never serialized.
type entryOutcome struct {
	results []engine.Result
	errs    []error
}

func newFSM(state replicaState, machine commandApplier) (*FSM, error) {
	db, damaged, err := state.open()
	if err != nil {
		return nil, err
	}
	f := &FSM{machine: machine, state: state, db: db, appliedCh: make(chan struct{}), damaged: damaged}
	var idx uint64
	err = db.View(func(r *storage.Reader) error {
		var err error
		idx, err = storage.AppliedIndex(r)
		return err
	})
	if err != nil {
		return nil, errors.Join(err, db.Close())
	}
	f.applied.Store(idx)
	return f, nil
}

// View implements embedded.Viewer over the current database.
func (f *FSM) View(fn func(r *storage.Reader) error) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.db.View(fn)
}

// checkSpace refuses, with storage's *NoSpaceError (which the proposer
// marks to match engine.ErrNoSpace), while the disk holding the
// state has less free space than its reserve (storage.DB.CheckSpace).
func (f *FSM) checkSpace() error {
	f.mu.RLock()
	db := f.db
	f.mu.RUnlock()
	return db.CheckSpace()
}

// Applied returns the last log index the state reflects.
func (f *FSM) Applied() uint64 { return f.applied.Load() }

// appliedChanged returns a channel closed at the next advance of Applied.
func (f *FSM) appliedChanged() <-chan struct{} {
	f.appliedMu.Lock()
	defer f.appliedMu.Unlock()
	return f.appliedCh
}

func (f *FSM) setApplied(idx uint64) {
	f.applied.Store(idx)
	f.appliedMu.Lock()
	close(f.appliedCh)
	f.appliedCh = make(chan struct{})
	f.appliedMu.Unlock()
}

// collectValueLog collects the value log of the current database
// (storage.DB.CollectValueLog). Restore's swap waits for it to end, and
// the views that come after the swap began wait with it: collecting
// rewrites at most a few value-log files, and a restore is rare.
func (f *FSM) collectValueLog() (int, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.db.CollectValueLog()
}

func (f *FSM) close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state.closeDB(f.db)
}

// Apply implements raft.FSM for a single entry.
func (f *FSM) Apply(l *raft.Log) any { return f.ApplyBatch([]*raft.Log{l})[0] }

// ApplyBatch implements raft.BatchingFSM: every entry of logs goes into one
// Badger transaction (more only when they do not fit), each followed by the
// applied index, so that after a crash the store never claims an entry it
// does not hold. Entries at or below the applied index were applied before
// a restart and are skipped.
//
// Errors that every node meets alike from the same entry (a command the
// engine refuses, an entry that does not decode, writes too large for any
// transaction) are the entry's outcome: the proposer hears them and every
// state stays equal. A failure of this node's database (a read, a write into
// the batch, the commit: a full or failing disk) is not: its peers applied
// the entry. Raft gives an FSM no way to refuse an entry, so the node panics
// with a *StateFailure (matching ErrStateFailed) rather than go on serving
// a state that diverged from its peers'. Whatever the database committed
// before the failure carries its own applied index, so a restart resumes
// right after it.
func (f *FSM) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	f.mu.RLock() // Restore never runs concurrently; this only pairs with View
	db := f.db
	f.mu.RUnlock()
	a := &batchApplier{f: f, db: db, batch: db.NewBatch(), touched: []uint64{}, closed: []uint64{}, meter: f.meter}
	// changed: some command or node entry wrote, so waiters should look.
	last := f.applied.Load()
	for i, l := range logs {
		if l.Index <= last {
			out[i] = skipped(l)
			continue
		}
		if l.Type == raft.LogCommand {
			out[i] = a.entry(l)
		}
		tx := a.batch.Begin()
		storage.SetAppliedIndex(tx, l.Index)
		if err := a.add(l.Index, tx); err != nil {
			// One small key never exceeds a transaction; the database
			// refused a write it must take.
			stop(l.Index, "recording the applied index", err)
		}
		last = l.Index
		// The applied index alone is not news: waiters are woken only by
		// entries that changed the state (an idle claim writes nothing,
		// and waking long polls for it would make them propose again).
	}
	a.commit(last)
	if last > f.applied.Load() {
		f.setApplied(last)
	}
	if a.changed && f.onApply != nil {
		f.onApply(a.touched, a.closed)
	}
	return out
}

// skipped answers for an entry applied before a restart. Nobody waits for
// it on this node, but a proposer that does must not take it as a success.
func skipped(l *raft.Log) any {
	return &entryOutcome{errs: []error{fmt.Errorf("%w: log entry %d was applied before this node restarted", engine.ErrUnknownOutcome, l.Index)}}
}

// stop ends the node's applying for good: see ApplyBatch.
func stop(index uint64, op string, err error) {
	panic(&StateFailure{Index: index, Op: op, Err: err})
}

// batchApplier carries one ApplyBatch's Badger transaction.
type batchApplier struct {
	f       *FSM
	db      *storage.DB
	batch   *storage.Batch
	changed bool     // a command or node entry wrote something
	touched []uint64 // job records written, for per-job waiters
	closed  []uint64 // jobs closed, for the waiters for their results
	meter   *embedded.Meter
	cmds    int // commands the batch holds, for the metrics
}

// add moves tx's writes into the batch, committing the batch first when
// they do not fit. The one error it returns is storage.ErrTooLarge: writes
// over what any transaction holds, which every node finds alike for the
// same entry (the nodes of a cluster share their storage limits), so it is
// the entry's outcome. Any other failure stops the node; index is the entry
// being applied, for the report.
func (a *batchApplier) add(index uint64, tx *storage.Tx) error {
	err := a.batch.Add(tx)
	if errors.Is(err, storage.ErrBatchFull) {
		a.commit(index)
		a.batch = a.db.NewBatch()
		err = a.batch.Add(tx)
	}
	if err != nil && !errors.Is(err, storage.ErrTooLarge) {
		stop(index, "adding a log entry's writes to the batch", err)
	}
	return err
}

// commit makes the batch durable; index is the last entry it holds.
func (a *batchApplier) commit(index uint64) {
	if a.batch.Empty() {
		a.batch.Discard()
		return
	}
	a.touched = append(a.touched, a.batch.TouchedJobs()...)
	a.closed = append(a.closed, a.batch.ClosedJobs()...)
	start := a.meter.Start()
	if err := a.batch.Commit(); err != nil {
		a.meter.Discard()
		a.f.queues.Discard()
		stop(index, "committing applied log entries", err)
	}
	if a.cmds > 0 {
		// Unsynced: the Raft log is the durable record.
		a.meter.Committed(a.cmds, start, false)
	}
	a.f.queues.Committed()
	a.cmds = 0
}

// entry applies one command entry and returns its outcome.
func (a *batchApplier) entry(l *raft.Log) any {
	e, err := decodeEntry(l.Data)
	if err != nil {
		var ee *EntryError
		if errors.As(err, &ee) {
			ee.Index = l.Index
		}
		// Every node decodes the same bytes and fails the same way, so the
		// states stay equal; the proposer hears the error.
		return &entryOutcome{errs: []error{err}}
	}
	if e.kind == entryNode {
		tx := a.batch.Begin()
		key := []byte(keyNodePrefix + e.node.ID)
		if e.node.Remove {
			tx.Delete(key)
		} else {
			tx.Set(key, []byte(e.node.HTTPAddr))
		}
		if err := a.add(l.Index, tx); err != nil {
			return &entryOutcome{errs: []error{err}}
		}
		a.changed = true
		return &entryOutcome{results: []engine.Result{nil}, errs: []error{nil}}
	}
	if e.kind == entryHold {
		tx := a.batch.Begin()
		if err := applyHold(tx, a.f.shard, e.hold); err != nil {
			if errors.Is(err, storage.ErrRead) {
				stop(l.Index, "reading the delivery hold", err)
			}
			return &entryOutcome{errs: []error{err}}
		}
		if err := a.add(l.Index, tx); err != nil {
			return &entryOutcome{errs: []error{err}}
		}
		a.changed = true
		return &entryOutcome{results: []engine.Result{nil}, errs: []error{nil}}
	}
	done := a.partDone(l.Index)
	out := &entryOutcome{results: make([]engine.Result, len(e.cmds)), errs: make([]error, len(e.cmds))}
	for k, raw := range e.cmds {
		if k < done {
			out.errs[k] = fmt.Errorf("%w: command %d of log entry %d was applied before this node restarted", engine.ErrUnknownOutcome, k, l.Index)
			continue
		}
		cmd, err := machine.DecodeCommand(raw)
		if err != nil {
			out.errs[k] = err
			continue
		}
		tx := a.batch.Begin()
		if isDelivery(cmd) {
			// A delivery hold (hold.go) refuses it here, where it would
			// take effect, whoever proposed it and whenever.
			held, err := readHold(tx.Get)
			if errors.Is(err, storage.ErrRead) {
				stop(l.Index, "reading the delivery hold", err)
			}
			if err == nil && held != nil {
				err = &HeldError{Shard: a.f.shard, Token: held.Token, Owner: held.Owner, ExpiresMS: held.ExpiresMS, What: cmd.Kind().String()}
			}
			if err != nil {
				out.errs[k] = err
				a.cmds++
				continue
			}
		}
		start := a.meter.Start()
		res, err := a.f.machine.ApplyNoting(tx, cmd, a.f.applyNotes())
		a.meter.Applied(cmd, res, err, start)
		if errors.Is(err, storage.ErrRead) {
			// The command was not judged: this node could not read its
			// state, and its peers, which could, applied it.
			stop(l.Index, fmt.Sprintf("reading the state for command %d (%s)", k, cmd.Kind()), err)
		}
		if err != nil {
			out.errs[k] = err // a refused command wrote nothing
			a.cmds++
			continue
		}
		if tx.Len() > 0 {
			a.changed = true
		}
		if len(e.cmds) > 1 {
			tx.Set(keyEntryPart, partValue(l.Index, k+1))
		}
		diff := a.meter.Diff(tx, cmd, res)
		if err := a.add(l.Index, tx); err != nil {
			out.errs[k] = fmt.Errorf("%w: %v", engine.ErrPayloadTooLarge, err)
			continue
		}
		a.meter.Stage(diff)
		if a.f.queues != nil {
			a.f.queues.Stage(a.f.applyNotes())
		}
		a.cmds++
		out.results[k] = res
	}
	return out
}

// applyNotes returns the notes Apply writes for the next command: the
// meter's, else the FSM's own when the task queue view needs them, else nil.
func (f *FSM) applyNotes() *machine.Notes {
	if n := f.meter.Notes(); n != nil {
		return n
	}
	if f.queues != nil {
		return &f.notes
	}
	return nil
}

// partDone returns how many commands of the entry at index are already in
// the store (nonzero only after a crash in the middle of a large entry).
// Guessing here would apply commands twice or not at all, so a record that
// cannot be read stops the node.
func (a *batchApplier) partDone(index uint64) int {
	v, err := a.batch.Begin().Get(keyEntryPart)
	if errors.Is(err, storage.ErrNotFound) {
		return 0
	}
	if err != nil {
		stop(index, "reading how much of a split log entry was applied", err)
	}
	if len(v) != 16 {
		stop(index, "reading how much of a split log entry was applied", &storage.CorruptError{
			Key: keyEntryPart, Kind: storage.KindMeta, Reason: fmt.Sprintf("%d bytes, want 16", len(v))})
	}
	if binary.BigEndian.Uint64(v) != index {
		return 0 // the record of an earlier split entry, finished since
	}
	return int(binary.BigEndian.Uint64(v[8:]))
}

func partValue(index uint64, n int) []byte {
	v := make([]byte, 16)
	binary.BigEndian.PutUint64(v, index)
	binary.BigEndian.PutUint64(v[8:], uint64(n))
	return v
}

// Snapshot implements raft.FSM. It syncs the database first: the database
// runs without a sync per commit (the Raft log is what is durable), and once
// Raft has a snapshot at index N it may drop the log below N, so everything
// up to N must be on disk in the database before the snapshot is taken.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	db := f.db
	f.mu.RUnlock()
	if err := db.Sync(); err != nil {
		return nil, fmt.Errorf("raftfsm: sync before snapshot: %w", err)
	}
	f.meter.Synced()
	release := f.state.hold(db)
	return &fsmSnapshot{snap: db.OpenSnapshot(), release: release}, nil
}

// Restore implements raft.FSM: it loads the snapshot into a fresh data
// directory and swaps it in only when the load succeeded, so a crash or a
// corrupt snapshot leaves the old state in place.
func (f *FSM) Restore(rc io.ReadCloser) error {
	db, info, err := f.state.load(rc)
	// Raft leaves closing the reader to the FSM. Its error is dropped: load
	// read the snapshot to its checksummed end (or failed), and closing the
	// reader cannot change what was read.
	_ = rc.Close()
	if err != nil {
		return err
	}
	f.mu.Lock()
	old := f.db
	f.db = db
	f.mu.Unlock()
	f.state.retire(old)
	f.setApplied(info.AppliedIndex)
	// The gauge of open jobs follows the new state. A failure to count
	// leaves it as it was: the metrics are wrong, the state is not.
	_ = f.meter.Count(f)
	if f.onApply != nil {
		f.onApply(nil, nil)
	}
	return nil
}

// nodeHTTP returns the HTTP address a member recorded, or "" when it
// recorded none or the database could not be read: an unknown address,
// which callers already handle (a not-leader answer without the leader's
// address, a re-registration by the leader).
func (f *FSM) nodeHTTP(id string) string {
	var addr string
	err := f.View(func(r *storage.Reader) error {
		v, err := r.Get([]byte(keyNodePrefix + id))
		if err != nil {
			return err
		}
		addr = string(v)
		return nil
	})
	if err != nil {
		return ""
	}
	return addr
}

type fsmSnapshot struct {
	snap    *storage.Snapshot
	release func()
}

// Persist implements raft.FSMSnapshot; it runs concurrently with applies.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := s.snap.Stream(sink); err != nil {
		return errors.Join(err, sink.Cancel())
	}
	return sink.Close()
}

// Release implements raft.FSMSnapshot.
func (s *fsmSnapshot) Release() {
	s.snap.Close()
	s.release()
}
