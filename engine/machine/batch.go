package machine

import (
	"errors"
	"fmt"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// The batch operations' records (engine.Batch). A batch is a record of its
// own, not a job: its commands write no event and touch no run; the runs
// are acted on by their own commands, which the runner proposes.

const batchVersion = 1

// EncodeBatch returns the stored form of b.
func EncodeBatch(b *engine.Batch) []byte {
	return storage.MustEncode(storage.KindBatch, batchVersion, b)
}

// DecodeBatch decodes a stored batch record.
func DecodeBatch(b []byte) (_ *engine.Batch, err error) {
	defer markStorage(&err)
	out := new(engine.Batch)
	if _, err := storage.Decode(b, storage.KindBatch, batchVersion, out); err != nil {
		return nil, err
	}
	return out, nil
}

// ReadBatch returns batch id's record, or ErrUnknownBatch.
func ReadBatch(r interface{ Get([]byte) ([]byte, error) }, id string) (*engine.Batch, error) {
	key := storage.BatchKey(id)
	v, err := r.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("%w: %q", engine.ErrUnknownBatch, id)
	}
	if err != nil {
		return nil, err
	}
	b := new(engine.Batch)
	if _, err := storage.DecodeAt(key, v, storage.KindBatch, batchVersion, b); err != nil {
		return nil, err
	}
	return b, nil
}

// ListBatches returns a page of the batch records in id order, after
// q.After; running only keeps the running ones.
func ListBatches(r *storage.Reader, q engine.BatchListQuery, running bool) (*engine.BatchListPage, error) {
	limit := q.Limit
	if limit <= 0 || limit > engine.MaxPage {
		limit = 100
	}
	page := &engine.BatchListPage{Batches: []*engine.Batch{}}
	var from []byte
	if q.After != "" {
		from = append(storage.BatchKey(q.After), 0)
	}
	err := r.Scan(storage.BatchPrefix, from, true, func(k, v []byte) (bool, error) {
		b := new(engine.Batch)
		if _, err := storage.DecodeAt(k, v, storage.KindBatch, batchVersion, b); err != nil {
			return false, err
		}
		if running && b.State != engine.BatchRunning {
			return true, nil
		}
		if len(page.Batches) == limit {
			page.Next = page.Batches[limit-1].ID
			return false, nil
		}
		page.Batches = append(page.Batches, b)
		return true, nil
	})
	return page, err
}

func (a *applier) saveBatch(b *engine.Batch) {
	b.UpdatedMS = a.now
	a.tx.Set(storage.BatchKey(b.ID), EncodeBatch(b))
}

func (a *applier) startBatch(c *engine.StartBatch) (engine.Result, error) {
	if _, err := ReadBatch(a.tx, c.ID); err == nil {
		return nil, fmt.Errorf("%w: %q", engine.ErrBatchExists, c.ID)
	} else if !errors.Is(err, engine.ErrUnknownBatch) {
		return nil, err
	}
	b := &engine.Batch{ID: c.ID, BatchSpec: c.BatchSpec, By: c.By, State: engine.BatchRunning,
		MaxJob: c.MaxJob, Total: c.Total, CreatedMS: a.now}
	a.saveBatch(b)
	return &engine.BatchResult{Batch: b}, nil
}

// runningBatch loads batch id and refuses it unless it runs.
func (a *applier) runningBatch(cmd, id string) (*engine.Batch, error) {
	b, err := ReadBatch(a.tx, id)
	if err != nil {
		return nil, err
	}
	if b.State != engine.BatchRunning {
		return nil, fmt.Errorf("%w: %s of batch %q, which is %s", engine.ErrIllegalTransition, cmd, id, b.State)
	}
	return b, nil
}

func (a *applier) advanceBatch(c *engine.AdvanceBatch) (engine.Result, error) {
	b, err := a.runningBatch("AdvanceBatch", c.ID)
	if err != nil {
		return nil, err
	}
	// The cursor is the page's fence: a runner that lost its leadership,
	// or a proposal retried after it was applied, names a cursor the batch
	// has left, and its counts were recorded already.
	if c.From != b.Cursor {
		return nil, fmt.Errorf("%w: AdvanceBatch of batch %q from run %d, but its cursor is at run %d", engine.ErrIllegalTransition, c.ID, c.From, b.Cursor)
	}
	if n := uint64(len(b.Pending)); c.Done+c.Failed != n {
		return nil, engine.InvalidField("AdvanceBatch", "Done", fmt.Sprintf("Done %d and Failed %d do not add up to the %d runs of the pending page", c.Done, c.Failed, n))
	}
	if c.To > b.MaxJob {
		return nil, engine.InvalidField("AdvanceBatch", "To", fmt.Sprintf("is run %d, after the batch's last run %d", c.To, b.MaxJob))
	}
	b.Done += c.Done
	b.Failed += c.Failed
	if c.LastError != "" {
		b.LastError = c.LastError
	}
	b.Pending = c.Next
	b.Cursor = c.To
	// Total is the count at the start; a run that came to match later
	// (its id below MaxJob) raises it, so that it always covers the runs
	// counted and pending.
	if seen := b.Done + b.Failed + uint64(len(b.Pending)); seen > b.Total {
		b.Total = seen
	}
	if c.Finished {
		b.State, b.ClosedMS = engine.BatchCompleted, a.now
		b.Skipped = b.Total - b.Done - b.Failed
	}
	a.saveBatch(b)
	return &engine.BatchResult{Batch: b}, nil
}

func (a *applier) stopBatch(c *engine.StopBatch) (engine.Result, error) {
	b, err := a.runningBatch("StopBatch", c.ID)
	if err != nil {
		return nil, err
	}
	b.State, b.ClosedMS = engine.BatchTerminated, a.now
	b.StopReason, b.StopBy = c.Reason, c.By
	b.Pending = nil // not acted on by this batch; runs its runner already touched stay so
	a.saveBatch(b)
	return &engine.BatchResult{Batch: b}, nil
}

// batches checks every batch record: it decodes under its own key, its
// state is known, its counts add up (Done + Failed + Pending never exceed
// Total; a completed batch has counted or skipped every run), its cursor
// stays within the runs it may touch, and its pending page is ascending
// and at or before the cursor.
func (v *verifier) batches() {
	_ = v.r.Scan(storage.BatchPrefix, nil, true, func(k, val []byte) (bool, error) {
		b := new(engine.Batch)
		if _, err := storage.DecodeAt(k, val, storage.KindBatch, batchVersion, b); err != nil {
			return v.add(err), nil
		}
		if err := checkBatch(string(k[1:]), b); err != nil {
			return v.add(err), nil
		}
		return true, nil
	})
}

// checkBatch is Verify's check of one batch record stored under id.
func checkBatch(id string, b *engine.Batch) error {
	counted := b.Done + b.Failed
	switch {
	case b.ID != id:
		return fmt.Errorf("batch record at %q holds id %q", id, b.ID)
	case b.State < engine.BatchRunning || b.State > engine.BatchTerminated:
		return fmt.Errorf("batch %q has the unknown state %d", id, b.State)
	case counted < b.Done || counted+uint64(len(b.Pending)) > b.Total:
		return fmt.Errorf("batch %q counts %d done, %d failed and %d pending, over its total %d", id, b.Done, b.Failed, len(b.Pending), b.Total)
	case b.Cursor > b.MaxJob:
		return fmt.Errorf("batch %q has its cursor at run %d, after its last run %d", id, b.Cursor, b.MaxJob)
	case (b.State == engine.BatchRunning) != (b.ClosedMS == 0):
		return fmt.Errorf("batch %q is %s with closed_ms %d", id, b.State, b.ClosedMS)
	case b.State == engine.BatchCompleted && (len(b.Pending) > 0 || counted+b.Skipped != b.Total):
		return fmt.Errorf("batch %q completed with %d pending, and %d done, %d failed and %d skipped of %d", id, len(b.Pending), b.Done, b.Failed, b.Skipped, b.Total)
	case b.State == engine.BatchTerminated && len(b.Pending) > 0:
		return fmt.Errorf("batch %q was stopped with %d runs pending", id, len(b.Pending))
	}
	prev := engine.JobID(0)
	for _, j := range b.Pending {
		if j <= prev || j > b.Cursor {
			return fmt.Errorf("batch %q has pending run %d out of order or after its cursor %d", id, j, b.Cursor)
		}
		prev = j
	}
	return nil
}
