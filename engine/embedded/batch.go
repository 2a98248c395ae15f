package embedded

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/clock"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/internal/listfilter"
	"github.com/heddlewf/heddle/storage"
)

// DefaultBatchRunsPerSecond is the rate a batch acts on runs at when
// neither the batch (StartBatch.RunsPerSecond) nor the node's
// configuration names one: low enough that a batch of many runs leaves the
// log to live traffic, as Temporal's batcher does with its own default.
const DefaultBatchRunsPerSecond = 100

// batchPage is how many runs one AdvanceBatch records as pending (fewer
// when the rate is below it: a page is at most a second's runs), and
// batchParallel how many of their commands are in flight at once (they
// share group commits).
const (
	batchPage     = 100
	batchParallel = 32
)

var _ engine.BatchService = (*Engine)(nil)

// StartBatch records a batch operation over the runs c.Query matches now.
// It fills c.MaxJob (the largest run id) and c.Total (the runs the query
// matches) from one read of the state, so that the runs started after it
// are never acted on, and chooses an id when c.ID is empty. The runner
// (BatchRunner) does the work.
func (e *Engine) StartBatch(ctx context.Context, c engine.StartBatch) (*engine.BatchResult, error) {
	if c.ID == "" {
		c.ID = NewBatchID()
	}
	nowMS := e.now().UnixMilli()
	f, err := listfilter.Compile(engine.ListQuery{Query: c.Query, NowMS: nowMS}, time.UnixMilli(nowMS))
	if err != nil {
		return nil, err
	}
	err = e.view(ctx, func(r *storage.Reader) error {
		// The largest run id, not the count of runs: on a shard of a
		// sharded cluster the ids carry the shard above the count.
		last, err := machine.LastJobID(r)
		if err != nil {
			return err
		}
		n, err := machine.CountJobs(r, f)
		if err != nil {
			return err
		}
		c.MaxJob, c.Total = last, n.Count
		return nil
	})
	if err != nil {
		return nil, err
	}
	res, err := propose[*engine.BatchResult](ctx, e, &c)
	if err == nil {
		e.wakeBatches()
	}
	return res, err
}

// NewBatchID returns a fresh random batch id.
func NewBatchID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (crypto/rand panics rather than return an error)
	return "batch-" + hex.EncodeToString(b)
}

// StopBatch ends a running batch as Terminated.
func (e *Engine) StopBatch(ctx context.Context, c engine.StopBatch) (*engine.BatchResult, error) {
	return propose[*engine.BatchResult](ctx, e, &c)
}

// DescribeBatch reads a batch.
func (e *Engine) DescribeBatch(ctx context.Context, id string) (*engine.Batch, error) {
	var b *engine.Batch
	err := e.view(ctx, func(r *storage.Reader) error {
		var err error
		b, err = machine.ReadBatch(r, id)
		return err
	})
	return b, err
}

// ListBatches returns a page of batches in id order.
func (e *Engine) ListBatches(ctx context.Context, q engine.BatchListQuery) (*engine.BatchListPage, error) {
	if q.Limit < 0 || q.Limit > engine.MaxPage {
		return nil, fmt.Errorf("%w: batch list limit %d is not in [0, %d]", engine.ErrInvalidCommand, q.Limit, engine.MaxPage)
	}
	var page *engine.BatchListPage
	err := e.view(ctx, func(r *storage.Reader) error {
		var err error
		page, err = machine.ListBatches(r, q, false)
		return err
	})
	return page, err
}

// wakeBatches tells the runner a batch was started.
func (e *Engine) wakeBatches() {
	select {
	case e.batchWake <- struct{}{}:
	default:
	}
}

// BatchRunner acts on the runs of the running batches: it lists each
// batch's runs page by page in id order, proposes each run's command and
// records the page (AdvanceBatch). One runs per engine: in embedded mode
// inside Open, on a cluster on the leader only, started with each term and
// stopped when it ends; the next leader's runner goes on from the batch's
// record. It only proposes: Apply decides.
type BatchRunner struct {
	e     *Engine
	clock clock.Clock
	// runsPerSecond is the node's rate (Config.BatchRunsPerSecond).
	runsPerSecond int
	// OnError receives the errors the runner met; nil drops them.
	OnError func(error)
	// due is, by batch, when its next page may go out (its rate).
	due map[string]time.Time
}

// NewBatchRunner returns the runner of e's batches, acting on at most
// runsPerSecond runs a second for a batch that names no rate (0 means
// DefaultBatchRunsPerSecond). clk nil means the wall clock.
func NewBatchRunner(e *Engine, clk clock.Clock, runsPerSecond int) *BatchRunner {
	if clk == nil {
		clk = clock.Wall()
	}
	if runsPerSecond <= 0 {
		runsPerSecond = DefaultBatchRunsPerSecond
	}
	return &BatchRunner{e: e, clock: clk, runsPerSecond: runsPerSecond, due: map[string]time.Time{}}
}

// Run works until ctx ends, then returns ctx's error. With no batch
// running it waits for one to start (StartBatch wakes it), never polling.
func (br *BatchRunner) Run(ctx context.Context) error {
	backoff := 10 * time.Millisecond
	for {
		page, err := br.e.runningBatches(ctx)
		if err == nil && len(page) == 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-br.e.batchWake:
			}
			continue
		}
		for _, b := range page {
			if err != nil {
				break
			}
			err = br.step(ctx, b)
		}
		if err == nil {
			backoff = 10 * time.Millisecond
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if br.OnError != nil {
			br.OnError(err)
		}
		if err := br.sleep(ctx, backoff); err != nil {
			return err
		}
		backoff = min(2*backoff, time.Second)
	}
}

// runningBatches reads the running batches.
func (e *Engine) runningBatches(ctx context.Context) ([]*engine.Batch, error) {
	var out []*engine.Batch
	q := engine.BatchListQuery{Limit: engine.MaxPage}
	for {
		var page *engine.BatchListPage
		err := e.view(ctx, func(r *storage.Reader) error {
			var err error
			page, err = machine.ListBatches(r, q, true)
			return err
		})
		if err != nil {
			return nil, err
		}
		out = append(out, page.Batches...)
		if page.Next == "" {
			return out, nil
		}
		q.After = page.Next
	}
}

func (br *BatchRunner) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := br.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}

// transient reports the errors after which a run's command may not have
// been judged: the page is tried again later rather than counted.
func transient(err error) bool {
	for _, s := range []error{engine.ErrUnknownOutcome, engine.ErrNotLeader, engine.ErrClosed, engine.ErrNoSpace,
		engine.ErrStorageRead, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// step moves batch b one page on: it waits for the batch's rate, acts on
// the pending page (each run's command under its batch request id, so a
// page acted on before a crash is answered from the log), lists the next
// page and records both with AdvanceBatch.
func (br *BatchRunner) step(ctx context.Context, b *engine.Batch) error {
	// The rate is kept before the page's commands go out, so that even
	// the first page of a batch waits its turn behind the one before.
	if err := br.sleep(ctx, br.due[b.ID].Sub(br.clock.Now())); err != nil {
		return err
	}
	rate := b.RunsPerSecond
	if rate <= 0 {
		rate = br.runsPerSecond
	}
	if n := len(b.Pending); n > 0 {
		br.due[b.ID] = br.clock.Now().Add(time.Duration(float64(n) / float64(rate) * float64(time.Second)))
	}
	done, failed, lastErr, err := br.act(ctx, b)
	if err != nil {
		return err
	}
	next, to, finished, err := br.e.batchPage(ctx, b, min(batchPage, rate))
	if err != nil {
		return err
	}
	adv := &engine.AdvanceBatch{ID: b.ID, From: b.Cursor, Done: done, Failed: failed, Next: next, To: to,
		Finished: finished && len(next) == 0}
	if lastErr != nil {
		adv.LastError = engine.TruncateBatchError(lastErr.Error(), br.e.limits)
	}
	if adv.Finished {
		delete(br.due, b.ID)
	}
	if _, err := br.e.Propose(ctx, adv); err != nil {
		if errors.Is(err, engine.ErrIllegalTransition) {
			delete(br.due, b.ID)
			return nil // stopped, or another runner moved it on: read it again
		}
		return err
	}
	return nil
}

// act proposes the command of each pending run of b and counts the
// outcomes; a transient error fails the whole page, to be tried again.
func (br *BatchRunner) act(ctx context.Context, b *engine.Batch) (done, failed uint64, lastErr, err error) {
	if len(b.Pending) == 0 {
		return 0, 0, nil, nil
	}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		sem  = make(chan struct{}, batchParallel)
		errs = make([]error, len(b.Pending))
	)
	for i, job := range b.Pending {
		cmd, cerr := b.Command(job)
		if cerr != nil {
			return 0, 0, nil, cerr
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			_, perr := br.e.Propose(ctx, cmd)
			mu.Lock()
			errs[i] = perr
			mu.Unlock()
		}()
	}
	wg.Wait()
	for i, perr := range errs {
		switch {
		case perr == nil:
			done++
		case transient(perr):
			return 0, 0, nil, fmt.Errorf("batch %q, run %d: %w", b.ID, b.Pending[i], perr)
		default:
			failed++
			lastErr = fmt.Errorf("run %d: %w", b.Pending[i], perr)
		}
	}
	return done, failed, lastErr, nil
}

// batchPage lists the next page of b's runs after its cursor, in id
// order: the runs the query matches now, among those that existed when
// the batch started (id at most MaxJob). to is the new cursor; finished
// says no run is left after it.
func (e *Engine) batchPage(ctx context.Context, b *engine.Batch, limit int) (next []engine.JobID, to engine.JobID, finished bool, err error) {
	f, err := listfilter.Compile(engine.ListQuery{Query: b.Query, NowMS: b.CreatedMS}, time.UnixMilli(b.CreatedMS))
	if err != nil {
		return nil, 0, false, err
	}
	// A batch goes through the runs in id order whatever the query's
	// ORDER BY says: the cursor is a run id.
	f.Order = engine.ListStartAsc
	to = b.Cursor
	if to >= b.MaxJob {
		return nil, to, true, nil
	}
	var page *engine.ListPage
	err = e.view(ctx, func(r *storage.Reader) error {
		var err error
		page, err = machine.ListJobs(r, engine.ListQuery{After: b.Cursor, Limit: limit, Order: engine.ListStartAsc}, f)
		return err
	})
	if err != nil {
		return nil, 0, false, err
	}
	for _, j := range page.Jobs {
		if j.ID > b.MaxJob {
			return next, to, true, nil
		}
		next, to = append(next, j.ID), j.ID
	}
	switch {
	case page.Next == 0:
		return next, to, true, nil
	case page.Next >= b.MaxJob:
		return next, max(to, b.MaxJob), len(next) == 0, nil
	case page.Next > to:
		to = page.Next // a page cut short of matches: go on after what it read
	}
	return next, to, false, nil
}
