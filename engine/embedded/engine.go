package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/clock"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/internal/slogbridge"
	"github.com/heddlewf/heddle/metrics"
	"github.com/heddlewf/heddle/storage"
)

// Config configures Open. The zero value is invalid only in that it names no
// storage: set Dir, or InMemory for tests. Every other zero field takes its
// documented default.
type Config struct {
	// Dir is the database directory (created if missing).
	Dir string
	// InMemory keeps everything in memory; nothing survives Close.
	InMemory bool
	// Storage tunes Badger and the free-space reserve below which writes
	// fail with ErrNoSpace (Storage.ReserveBytes: 0 keeps
	// storage.DefaultReserveBytes free, -1 turns it off); its Dir and
	// InMemory are taken from above.
	Storage storage.Options
	// Limits bound what one command may carry.
	Limits engine.Limits
	// Clock stamps commands and drives the scheduler; nil means clock.Wall().
	Clock clock.Clock
	// SchedulerClock, if set, is the time the scheduler judges deadlines
	// by and sleeps on, in place of Clock. A test clock that moves its time
	// and fires its timers in two steps, so that work done at the new
	// instant (a test's callback signalling the run) is stamped with it
	// before the timers of that instant fire, gives the scheduler the time
	// of its last firing here: otherwise a scheduler that happens to look
	// between the two steps fires them first. nil means Clock.
	SchedulerClock clock.Clock
	// MaxBatchCommands bounds one group commit; 0 means 1024.
	MaxBatchCommands int
	// SchedulerBatch bounds the jobs of one timer, reclaim, release or
	// deadline proposal; 0 means DefaultSchedulerBatch, or Limits.MaxBatch
	// when that is smaller. It must not exceed Limits.MaxBatch.
	SchedulerBatch int
	// DisableScheduler leaves timers, expired leases, retry delays and job
	// deadlines to the caller (tests drive them by proposing FireTimers,
	// Reclaim, ReleaseDelayed, ExpireDeadlines).
	DisableScheduler bool
	// OnSchedulerError receives errors the scheduler met; nil drops them.
	OnSchedulerError func(error)
	// Metrics, if set, records the engine's metrics (package metrics); nil
	// records none and costs nothing. Opening counts the open jobs once,
	// from the status index.
	Metrics *metrics.Metrics
	// DisableQueueView turns off the node's view of its task queues'
	// pollers and rates (TaskQueues): claims record no poller and applying
	// counts nothing. DescribeTaskQueue then shows the backlog alone, and
	// QueuedReason cannot say who polls. For measuring what the view costs.
	DisableQueueView bool
	// BatchRunsPerSecond bounds how many runs a second a batch operation
	// acts on when the batch names no rate of its own; 0 means
	// DefaultBatchRunsPerSecond. The runner works unless DisableScheduler
	// is set.
	BatchRunsPerSecond int
	// ValueLogInterval is how often the engine gives back the disk space of
	// deleted and overwritten values past Badger's value threshold
	// (storage.DB.CollectValueLog): without it, a database whose runs
	// carry large payloads and are deleted after their retention grows
	// for as long as it runs. 0 means storage.DefaultValueLogInterval; a
	// negative interval turns the collection off. Ignored when InMemory.
	ValueLogInterval time.Duration
	// Logger, if set, receives Badger's logs through log/slog (unless
	// Storage.Logger is set; Badger's informational lines at Debug) and the
	// scheduler's errors at Warn (unless OnSchedulerError is set).
	Logger *slog.Logger
}

// Validate reports the first invalid field of c.
func (c Config) Validate() error {
	so := c.storageOptions()
	if err := so.Validate(); err != nil {
		return err
	}
	if err := c.Limits.Validate(); err != nil {
		return err
	}
	if c.MaxBatchCommands < 0 || c.SchedulerBatch < 0 {
		return fmt.Errorf("%w: Config.MaxBatchCommands and SchedulerBatch must not be negative", engine.ErrInvalidCommand)
	}
	if c.BatchRunsPerSecond < 0 {
		return fmt.Errorf("%w: Config.BatchRunsPerSecond %d is negative (0 means %d a second)", engine.ErrInvalidCommand, c.BatchRunsPerSecond, DefaultBatchRunsPerSecond)
	}
	if _, err := SchedulerBatch(c.SchedulerBatch, c.Limits); err != nil {
		return err
	}
	lim := c.Limits.WithDefaults()
	if maxBatch := storage.MaxBatchBytes(so); int64(lim.MaxPayloadBytes)*2 > maxBatch {
		return fmt.Errorf("%w: Limits.MaxPayloadBytes %d does not fit twice into one storage batch of %d bytes (raise Storage.MemTableBytes)",
			engine.ErrInvalidCommand, lim.MaxPayloadBytes, maxBatch)
	}
	return nil
}

func (c Config) storageOptions() storage.Options {
	so := c.Storage
	so.Dir, so.InMemory = c.Dir, c.InMemory
	if so.Logger == nil && c.Logger != nil {
		so.Logger = slogbridge.Badger(c.Logger)
	}
	return so
}

// Engine is heddle's command and query surface over a Backend: the
// embedded one Open builds (a database directory, the local log that applies
// commands to it, and the scheduler), or a Raft node's (package raftfsm).
// All methods are safe for concurrent use.
type Engine struct {
	db      *storage.DB // the embedded database; nil over another Backend
	log     Log
	local   *LocalLog // the embedded log; nil over another Backend
	store   Viewer
	barrier func(context.Context) error
	sched   *Scheduler
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	// stopCollect ends the value log's collection (nil: none runs).
	stopCollect func()
	limits      engine.Limits
	onClose     func() error
	// clock is what a list's relative times ("-24h") count back from when
	// the query names no time, and what the task queue view's ages and
	// rates are read with.
	clock  clock.Clock
	queues *TaskQueues // nil: no task queue view
	// batchWake tells the batch runner that a batch was started.
	batchWake chan struct{}

	commitMu sync.Mutex
	commitCh chan struct{} // closed and replaced after every durable batch
	// stopped is set by StopWaiting: the backend is going away, and
	// waiters for a commit give up (outbox.go).
	stopped atomic.Bool
	// changeWaiters are woken when their job's record is written
	// (WatchHistory), and closeWaiters when their job closes (WaitClosed):
	// each wakes for its own job only, not for every commit, and a run's
	// result waiter does not read the run again at each of its turns.
	changeWaiters, closeWaiters jobWaiters
}

// Viewer gives consistent reads of the applied state. *storage.DB is one;
// a Raft node's state machine is another (its database may be swapped by a
// snapshot restore between two calls, never during one).
type Viewer interface {
	View(fn func(r *storage.Reader) error) error
}

// Backend is what New builds an Engine over.
type Backend struct {
	// Log applies commands. Required.
	Log Log
	// Store reads the state Log's commands were applied to. Required.
	Store Viewer
	// ReadBarrier, if set, runs before every read and returns once Store
	// reflects every command acknowledged before the read began (a Raft
	// read-index); reads fail with its error. Nil means Store is always
	// current, as in embedded mode.
	ReadBarrier func(ctx context.Context) error
	// Limits are the limits Log's machine enforces (for callers' checks).
	Limits engine.Limits
	// OnClose, if set, is called by Close.
	OnClose func() error
	// TaskQueues, if set, is the node's view of its task queues, which
	// Log's applier counts into (see TaskQueues); the Engine records its
	// claims' polls in it. Nil: no view.
	TaskQueues *TaskQueues
	// Clock tells the time of the views' ages; nil means clock.Wall().
	Clock clock.Clock
}

// New returns an Engine over b. It runs no scheduler: the backend owns
// timers and leases (a Raft node runs one on the leader only). The backend
// must call NotifyCommitted after every applied batch that wrote something.
func New(b Backend) (*Engine, error) {
	if b.Log == nil || b.Store == nil {
		return nil, fmt.Errorf("%w: engine.Backend needs Log and Store", engine.ErrInvalidCommand)
	}
	if err := b.Limits.Validate(); err != nil {
		return nil, err
	}
	clk := b.Clock
	if clk == nil {
		clk = clock.Wall()
	}
	return &Engine{log: b.Log, store: b.Store, barrier: b.ReadBarrier, limits: b.Limits.WithDefaults(),
		onClose: b.OnClose, commitCh: make(chan struct{}), queues: b.TaskQueues, clock: clk, batchWake: make(chan struct{}, 1)}, nil
}

// NotifyCommitted wakes everything waiting on Committed (and the embedded
// scheduler), the waiters on each job whose record is in touched, and the
// waiters for the close of each job in closed. A Backend calls it after
// each applied batch that wrote something, with the batch's
// storage.Batch.TouchedJobs and ClosedJobs; touched nil means any job may
// have changed or closed (a snapshot was restored). It never blocks.
func (e *Engine) NotifyCommitted(touched, closed []uint64) {
	if e.sched != nil {
		e.sched.Wake()
	}
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	close(e.commitCh)
	e.commitCh = make(chan struct{})
	if touched == nil {
		e.changeWaiters.wakeAll()
		e.closeWaiters.wakeAll()
		return
	}
	e.changeWaiters.wake(touched)
	e.closeWaiters.wake(closed)
}

// jobChanged returns a channel closed at the next write of job id's record.
// Its caller drops it with forgetWaiter when it stops waiting.
func (e *Engine) jobChanged(id engine.JobID) <-chan struct{} {
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	return e.changeWaiters.add(id)
}

// jobClosing returns a channel closed when a batch closes job id (writes
// its entry in the index by closing time, which only a record that turned
// terminal gets). Its caller drops it with forgetWaiter when it stops
// waiting.
func (e *Engine) jobClosing(id engine.JobID) <-chan struct{} {
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	return e.closeWaiters.add(id)
}

// forgetWaiter drops ch, returned by jobChanged or jobClosing, from job
// id's waiters (its waiter gave up or has its answer).
func (e *Engine) forgetWaiter(id engine.JobID, ch <-chan struct{}) {
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	e.changeWaiters.forget(id, ch)
	e.closeWaiters.forget(id, ch)
}

// Open opens (or creates) an engine.
func Open(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m, err := machine.NewMachine(cfg.Limits)
	if err != nil {
		return nil, err
	}
	db, err := storage.Open(cfg.storageOptions())
	if err != nil {
		return nil, machine.MarkStorageError(err)
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.Wall()
	}
	e := &Engine{db: db, store: db, limits: cfg.Limits.WithDefaults(), commitCh: make(chan struct{}), clock: clk,
		batchWake: make(chan struct{}, 1)}
	if !cfg.DisableQueueView {
		e.queues = NewTaskQueues(clk)
	}
	meter := NewMeter(cfg.Metrics)
	if err := meter.Count(db); err != nil {
		return nil, errors.Join(fmt.Errorf("engine: counting the open jobs for the metrics: %w", err), db.Close())
	}
	e.local, err = NewLocalLog(LocalLogConfig{DB: db, Machine: m, Clock: cfg.Clock,
		MaxBatchCommands: cfg.MaxBatchCommands, OnCommit: e.NotifyCommitted, Meter: meter, TaskQueues: e.queues})
	if err != nil {
		return nil, errors.Join(err, db.Close())
	}
	e.log = e.local
	if !cfg.DisableScheduler {
		batch, _ := SchedulerBatch(cfg.SchedulerBatch, cfg.Limits) // Validate checked it
		schedClock := cfg.SchedulerClock
		if schedClock == nil {
			schedClock = cfg.Clock
		}
		e.sched = NewScheduler(e.log, db, schedClock, batch)
		e.sched.OnError = cfg.OnSchedulerError
		if e.sched.OnError == nil && cfg.Logger != nil {
			e.sched.OnError = func(err error) { cfg.Logger.Warn("scheduler", "error", err) }
		}
		e.sched.Metrics = cfg.Metrics
		ctx, cancel := context.WithCancel(context.Background())
		e.cancel = cancel
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			_ = e.sched.Run(ctx) // returns ctx's error alone, once Close cancels it
		}()
		br := NewBatchRunner(e, cfg.Clock, cfg.BatchRunsPerSecond)
		br.OnError = e.sched.OnError
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			_ = br.Run(ctx) // returns ctx's error alone, once Close cancels it
		}()
	}
	if !cfg.InMemory && cfg.ValueLogInterval >= 0 {
		interval := cfg.ValueLogInterval
		if interval == 0 {
			interval = storage.DefaultValueLogInterval
		}
		ticks, stopTicks := valueLogTicks(interval)
		stop := storage.CollectOnTicks(ticks, db.CollectValueLog, func(n int, err error) {
			if err != nil && cfg.Logger != nil {
				cfg.Logger.Warn("collecting the value log", "error", err)
			}
			if valueLogCollected != nil {
				valueLogCollected(n, err)
			}
		})
		e.stopCollect = func() { stopTicks(); stop() }
	}
	return e, nil
}

// valueLogTicks returns the ticks of the value log's collection every
// interval and a function that stops them; tests replace it to collect
// between their writes (see storage.CollectOnTicks on Badger's race).
var valueLogTicks = defaultValueLogTicks

// valueLogCollected, when set (by tests), is told what each collection
// of the value log rewrote or failed at, once it has ended.
var valueLogCollected func(rewritten int, err error)

func defaultValueLogTicks(interval time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(interval)
	return t.C, t.Stop
}

// Close stops the scheduler and the log and closes the database. Proposals
// already accepted are applied first.
func (e *Engine) Close() error {
	if e.cancel != nil {
		e.cancel()
	}
	e.StopWaiting()
	e.wg.Wait()
	if e.stopCollect != nil {
		e.stopCollect()
	}
	var errs []error
	if e.local != nil {
		errs = append(errs, e.local.Close())
	}
	if e.onClose != nil {
		errs = append(errs, e.onClose())
	}
	if e.db != nil {
		errs = append(errs, e.db.Close())
	}
	return errors.Join(errs...)
}

// DB exposes the embedded database, for verification and snapshots; it is
// nil for an Engine over another Backend (use View).
func (e *Engine) DB() *storage.DB { return e.db }

// View runs fn over a consistent read of the applied state, after the
// backend's read barrier.
func (e *Engine) View(ctx context.Context, fn func(r *storage.Reader) error) error {
	return e.view(ctx, fn)
}

// Log exposes the engine's log.
func (e *Engine) Log() Log { return e.log }

// Propose applies cmd through the log. A claim, and a create naming a
// parent, gets a fresh nonce first (see engine.StampNonce), whatever it carried.
func (e *Engine) Propose(ctx context.Context, cmd engine.Command) (engine.Result, error) {
	engine.StampNonce(cmd)
	return e.log.Propose(ctx, cmd)
}

func propose[R engine.Result](ctx context.Context, e *Engine, cmd engine.Command) (R, error) {
	var zero R
	engine.StampNonce(cmd)
	res, err := e.log.Propose(ctx, cmd)
	if err != nil {
		return zero, err
	}
	r, ok := res.(R)
	if !ok {
		return zero, fmt.Errorf("engine: %s returned %T", cmd.Kind(), res)
	}
	return r, nil
}

// Create starts a job. On a shard of a sharded cluster, a child whose
// workflow id routes to another shard is created there through this
// shard's outbox: Create waits for the entry's acknowledgement and answers
// the child's job id (awaitRemoteChild).
func (e *Engine) Create(ctx context.Context, c engine.CreateJob) (*engine.CreateResult, error) {
	r, err := propose[*engine.CreateResult](ctx, e, &c)
	if err != nil || r.Delivery == nil {
		return r, err
	}
	return e.awaitRemoteChild(ctx, c.ParentID, c.ParentStep, *r.Delivery)
}

// Claim takes ready jobs of a queue, with each job's newest events when
// c.TailEvents asks for them.
func (e *Engine) Claim(ctx context.Context, c engine.Claim) ([]engine.ClaimedJob, error) {
	poll := c
	c.BuildID = "" // the view's, not the log's (Claim.BuildID)
	r, err := propose[*engine.ClaimResult](ctx, e, &c)
	if err != nil {
		return nil, err
	}
	e.queues.Claimed(&poll, len(r.Jobs))
	if c.TailEvents > 0 {
		e.attachTails(r.Jobs, c.TailEvents)
	}
	return r.Jobs, nil
}

// RecordedClaim returns the jobs a Claim under requestID took, from this
// replica's applied state (machine.RecordedClaim): no barrier, since the
// node that answered the claim applied it before answering.
func (e *Engine) RecordedClaim(requestID string) ([]engine.ClaimedJob, error) {
	var jobs []engine.ClaimedJob
	err := e.store.View(func(r *storage.Reader) error {
		var err error
		jobs, _, err = machine.RecordedClaim(r, requestID)
		return err
	})
	return jobs, machine.MarkStorageError(err)
}

// attachTails gives each claimed job its newest n events up to its claim.
// They are read from the applied state without a read barrier: the claim
// was applied to it before Propose returned, so every event up to the
// claim's LastSeq is there (a Raft leader answers a proposal only once its
// own state machine applied it). A failed read leaves the events out: they
// only spare the worker a read, and the claim itself must not be lost.
func (e *Engine) attachTails(jobs []engine.ClaimedJob, n int) {
	if len(jobs) == 0 {
		return
	}
	tails := make([][]engine.Event, len(jobs))
	err := e.store.View(func(r *storage.Reader) error {
		for i, j := range jobs {
			after := uint64(0)
			if j.LastSeq > uint64(n) {
				after = j.LastSeq - uint64(n)
			}
			evs, _, err := machine.ReadHistory(r, j.Job, after, int(j.LastSeq-after))
			if err != nil {
				return err
			}
			if len(evs) == 0 || evs[len(evs)-1].Seq != j.LastSeq {
				return fmt.Errorf("engine: job %d's history does not reach its claim at seq %d", j.Job, j.LastSeq)
			}
			tails[i] = evs
		}
		return nil
	})
	if err != nil {
		return
	}
	for i := range jobs {
		jobs[i].Events = tails[i]
	}
}

// Heartbeat renews leases; see HeartbeatResult for the refused ones.
func (e *Engine) Heartbeat(ctx context.Context, c engine.Heartbeat) (*engine.HeartbeatResult, error) {
	return propose[*engine.HeartbeatResult](ctx, e, &c)
}

// HeartbeatOne renews one lease; see the package function HeartbeatOne.
func (e *Engine) HeartbeatOne(ctx context.Context, ref engine.LeaseRef, leaseMS int64) (int64, error) {
	return engine.HeartbeatOne(ctx, e, ref, leaseMS)
}

// Append appends events to a running job.
func (e *Engine) Append(ctx context.Context, c engine.AppendEvents) (*engine.AppendResult, error) {
	return propose[*engine.AppendResult](ctx, e, &c)
}

// CommitStep records a step's effect and completion event.
func (e *Engine) CommitStep(ctx context.Context, c engine.CommitStep) (*engine.AppendResult, error) {
	return propose[*engine.AppendResult](ctx, e, &c)
}

// Wait blocks a running job and releases its lease.
func (e *Engine) Wait(ctx context.Context, c engine.Wait) (*engine.WaitResult, error) {
	return propose[*engine.WaitResult](ctx, e, &c)
}

// Signal delivers a signal.
func (e *Engine) Signal(ctx context.Context, c engine.Signal) (*engine.SignalResult, error) {
	return propose[*engine.SignalResult](ctx, e, &c)
}

// Cancel cancels a job.
func (e *Engine) Cancel(ctx context.Context, c engine.Cancel) (*engine.StatusResult, error) {
	return propose[*engine.StatusResult](ctx, e, &c)
}

// Activate moves a Draft job to Queued.
func (e *Engine) Activate(ctx context.Context, c engine.Activate) (*engine.StatusResult, error) {
	return propose[*engine.StatusResult](ctx, e, &c)
}

// Suspend pauses a job.
func (e *Engine) Suspend(ctx context.Context, c engine.Suspend) (*engine.StatusResult, error) {
	return propose[*engine.StatusResult](ctx, e, &c)
}

// Resume requeues a Suspended job.
func (e *Engine) Resume(ctx context.Context, c engine.Resume) (*engine.StatusResult, error) {
	return propose[*engine.StatusResult](ctx, e, &c)
}

// Complete ends a running job successfully.
func (e *Engine) Complete(ctx context.Context, c engine.Complete) (*engine.StatusResult, error) {
	return propose[*engine.StatusResult](ctx, e, &c)
}

// Fail ends a running job with a failure.
func (e *Engine) Fail(ctx context.Context, c engine.Fail) (*engine.StatusResult, error) {
	return propose[*engine.StatusResult](ctx, e, &c)
}

// ContinueAsNew completes a running job and starts its workflow id's next run.
func (e *Engine) ContinueAsNew(ctx context.Context, c engine.ContinueAsNew) (*engine.CreateResult, error) {
	return propose[*engine.CreateResult](ctx, e, &c)
}

// RequestCancel asks a workflow to cancel itself.
func (e *Engine) RequestCancel(ctx context.Context, c engine.RequestCancel) (*engine.StatusResult, error) {
	return propose[*engine.StatusResult](ctx, e, &c)
}

// Terminate ends a job at once as Terminated.
func (e *Engine) Terminate(ctx context.Context, c engine.Terminate) (*engine.StatusResult, error) {
	return propose[*engine.StatusResult](ctx, e, &c)
}

// Pause holds a run (docs/state-machines.md §6).
func (e *Engine) Pause(ctx context.Context, c engine.Pause) (*engine.StatusResult, error) {
	return propose[*engine.StatusResult](ctx, e, &c)
}

// Unpause lets a paused run go on.
func (e *Engine) Unpause(ctx context.Context, c engine.Unpause) (*engine.StatusResult, error) {
	return propose[*engine.StatusResult](ctx, e, &c)
}

// PauseActivity pauses pending activities of a run.
func (e *Engine) PauseActivity(ctx context.Context, c engine.PauseActivity) (*engine.ActivityResult, error) {
	return propose[*engine.ActivityResult](ctx, e, &c)
}

// UnpauseActivity ends the pause of pending activities of a run.
func (e *Engine) UnpauseActivity(ctx context.Context, c engine.UnpauseActivity) (*engine.ActivityResult, error) {
	return propose[*engine.ActivityResult](ctx, e, &c)
}

// ResetActivity starts the attempts of pending activities of a run over.
func (e *Engine) ResetActivity(ctx context.Context, c engine.ResetActivity) (*engine.ActivityResult, error) {
	return propose[*engine.ActivityResult](ctx, e, &c)
}

// UpdateActivityOptions changes the timeouts and retry policy of pending
// activities of a run.
func (e *Engine) UpdateActivityOptions(ctx context.Context, c engine.UpdateActivityOptions) (*engine.ActivityResult, error) {
	return propose[*engine.ActivityResult](ctx, e, &c)
}

// Reset starts a new run of a run's workflow id from a turn boundary of
// its history (see engine.ResetJob).
func (e *Engine) Reset(ctx context.Context, c engine.ResetJob) (*engine.ResetResult, error) {
	return propose[*engine.ResetResult](ctx, e, &c)
}

// Committed returns a channel that is closed after the next durable batch
// that wrote something: waiters re-read what they watch, without polling.
func (e *Engine) Committed() <-chan struct{} {
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	return e.commitCh
}

// WaitClosed blocks until the job t names is terminal (Completed, Failed,
// Cancelled, TimedOut or Terminated) and returns its record, or until ctx
// ends.
func (e *Engine) WaitClosed(ctx context.Context, t engine.Target) (*engine.Job, error) {
	if t.Job != 0 {
		return e.waitJobClosed(ctx, t.Job)
	}
	for {
		changed := e.Committed() // before the read, so no commit is missed
		j, err := e.Describe(ctx, t)
		if err != nil {
			return nil, err
		}
		if j.Status.Terminal() {
			return j, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// WaitClosing implements engine.ClosingWaiter: WaitClosed, then the
// closing event, read from the same store without a read barrier of its
// own. A run's events are only ever appended, so the event at the
// record's LastSeq is the one that closed it whatever happened since, and
// this store holds it: WaitClosed's read found the record naming it.
func (e *Engine) WaitClosing(ctx context.Context, t engine.Target) (*engine.Closing, error) {
	j, err := e.WaitClosed(ctx, t)
	if err != nil {
		return nil, err
	}
	c := &engine.Closing{Job: *j}
	err = e.view(engine.WithStaleRead(ctx), func(r *storage.Reader) error {
		evs, _, err := machine.ReadHistoryPage(r, j.ID, j.LastSeq-1, 1, engine.MaxPageBytes)
		if err != nil {
			return err
		}
		if len(evs) != 1 || evs[0].Seq != j.LastSeq {
			return fmt.Errorf("%w: run %d has no event %d, the last its record names", engine.ErrCorrupt, j.ID, j.LastSeq)
		}
		c.Event = evs[0]
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// waitJobClosed waits for one job, woken only when a batch closes it: with
// many runs waiting for results, a commit wakes the one it closed instead
// of all of them, and a run's turns before its close wake nobody.
//
// Each look reads the node's applied state first, without the read
// barrier, and answers from it when the job has reached a final end: a
// committed Completed, Cancelled, TimedOut or Terminated has no way out
// (engine.Next), runs are never deleted, and the closing event never
// changes, so the end answered is what a linearizable read would give at
// any later moment. (A reset since may have linked the run to the run it
// started, ResetNewRunID, which such an answer may not show yet.) Only a job that is
// missing here, open at the first look, or Failed (which a requeue
// reopens), or any job once the backend stopped (StopWaiting), is read
// again behind the barrier. A wait that a close ends
// thus costs one barrier instead of two, and one that finds the job
// already ended none: on a cluster, each barrier is a heartbeat round of
// the run's group.
func (e *Engine) waitJobClosed(ctx context.Context, id engine.JobID) (*engine.Job, error) {
	stale := engine.WithStaleRead(ctx)
	confirmed := false // a read of this wait has passed the barrier
	for {
		changed := e.jobClosing(id) // before the read, so no close is missed
		j, err := e.Describe(stale, engine.Target{Job: id})
		if err == nil && finalEnd(j.Status) {
			e.forgetWaiter(id, changed)
			return j, nil
		}
		// After StopWaiting (the node is closing) the barrier is passed
		// again: it refuses, and the caller goes to the shard's leader,
		// where a wait on this store would sleep until its deadline.
		if !confirmed || err != nil || j.Status.Terminal() || e.stopped.Load() {
			j, err = e.Describe(ctx, engine.Target{Job: id})
			confirmed = true
		}
		switch {
		case err != nil:
			e.forgetWaiter(id, changed)
			return nil, err
		case j.Status.Terminal():
			e.forgetWaiter(id, changed)
			return j, nil
		}
		select {
		case <-changed: // closed and dropped by NotifyCommitted
		case <-ctx.Done():
			e.forgetWaiter(id, changed)
			return nil, ctx.Err()
		}
	}
}

// finalEnd reports whether s is an end no event leaves (engine.Next):
// every end but Failed, which a requeue reopens.
func finalEnd(s engine.Status) bool { return s.Terminal() && s != engine.StatusFailed }

// Requeue puts a job back in its queue, optionally after a retry delay.
func (e *Engine) Requeue(ctx context.Context, c engine.Requeue) (*engine.StatusResult, error) {
	return propose[*engine.StatusResult](ctx, e, &c)
}

// view runs fn over a consistent read of the store, unless ctx is done.
func (e *Engine) view(ctx context.Context, fn func(r *storage.Reader) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if e.barrier != nil && !engine.IsStaleRead(ctx) {
		if err := e.barrier(ctx); err != nil {
			return err
		}
	}
	return machine.MarkStorageError(e.store.View(fn))
}

// LeaseStep gives a step of a running job an explicit step lease.
func (e *Engine) LeaseStep(ctx context.Context, c engine.LeaseStep) (*engine.StepResult, error) {
	return propose[*engine.StepResult](ctx, e, &c)
}

// StepHeartbeat renews a running step's lease and its job's.
func (e *Engine) StepHeartbeat(ctx context.Context, c engine.StepHeartbeat) (*engine.StepResult, error) {
	return propose[*engine.StepResult](ctx, e, &c)
}

// EndStepAttempt ends a try without ending its step.
func (e *Engine) EndStepAttempt(ctx context.Context, c engine.EndStepAttempt) (*engine.StepResult, error) {
	return propose[*engine.StepResult](ctx, e, &c)
}

// AnswerStep answers a step that needs a person.
func (e *Engine) AnswerStep(ctx context.Context, c engine.AnswerStep) (*engine.StepResult, error) {
	return propose[*engine.StepResult](ctx, e, &c)
}

// AddResource registers a resource.
func (e *Engine) AddResource(ctx context.Context, c engine.AddResource) (*engine.ResourceResult, error) {
	return propose[*engine.ResourceResult](ctx, e, &c)
}

// DrainResource drains (or undrains) a resource.
func (e *Engine) DrainResource(ctx context.Context, c engine.DrainResource) (*engine.ResourceResult, error) {
	return propose[*engine.ResourceResult](ctx, e, &c)
}

// RemoveResource deletes a resource that holds no lease.
func (e *Engine) RemoveResource(ctx context.Context, c engine.RemoveResource) (*engine.ResourceResult, error) {
	return propose[*engine.ResourceResult](ctx, e, &c)
}

// ConfigureJob changes a Draft job's input.
func (e *Engine) ConfigureJob(ctx context.Context, c engine.ConfigureJob) (*engine.StatusResult, error) {
	return propose[*engine.StatusResult](ctx, e, &c)
}

var (
	_ engine.AsyncService  = (*Engine)(nil)
	_ engine.ClosingWaiter = (*Engine)(nil)
)

// CompleteAsync ends a parked activity task.
func (e *Engine) CompleteAsync(ctx context.Context, c engine.CompleteAsync) (*engine.StatusResult, error) {
	return propose[*engine.StatusResult](ctx, e, &c)
}
