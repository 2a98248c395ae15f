package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/heddlewf/heddle/storage"
)

// ResourceWaiterReader lists the steps waiting in the resource queue.
// *Engine implements it; package engine/httpapi serves it (GET
// /v1/resources/waiters) and implements it over HTTP. It is apart from
// Service so that a Service written before the waiter list still is one.
// Safe for concurrent use.
type ResourceWaiterReader interface {
	// ResourceWaiters returns up to limit steps waiting for a resource
	// unit (0: MaxPage), first come first.
	ResourceWaiters(ctx context.Context, limit int) ([]ResourceWaiter, error)
}

var _ ResourceWaiterReader = (*Engine)(nil)

// ResourceWaiter is one step in the resource waiter queue: what it needs
// of a resource, and where it stands in the queue.
type ResourceWaiter struct {
	// Seq is the step's place in the queue; lower is served first.
	Seq      uint64 `json:"seq" msgpack:"q"`
	Job      JobID  `json:"job_id" msgpack:"j"`
	Step     string `json:"step" msgpack:"s"`
	Activity string `json:"activity,omitempty" msgpack:"n,omitempty"`
	// Attempt is the try that waits.
	Attempt      uint32            `json:"attempt,omitempty" msgpack:"a,omitempty"`
	Capabilities []string          `json:"capabilities,omitempty" msgpack:"cp,omitempty"`
	Selector     map[string]string `json:"selector,omitempty" msgpack:"sl,omitempty"`
	// Avoid lists the resources that failed the step, which it is never
	// leased again.
	Avoid []string `json:"avoid,omitempty" msgpack:"av,omitempty"`
	// UpdatedMS is the step record's last write: when it began to wait.
	UpdatedMS int64 `json:"updated_ms" msgpack:"up"`
}

// ResourceWaitersPage is the HTTP API's answer listing the waiter queue.
type ResourceWaitersPage struct {
	Waiters []ResourceWaiter `json:"waiters" msgpack:"w"`
}

// ResourceWaiters implements ResourceWaiterReader.
func (e *Engine) ResourceWaiters(ctx context.Context, limit int) ([]ResourceWaiter, error) {
	if limit < 0 || limit > MaxPage {
		return nil, fmt.Errorf("%w: limit %d is not in [0, %d]", ErrInvalidCommand, limit, MaxPage)
	}
	if limit == 0 {
		limit = MaxPage
	}
	out := []ResourceWaiter{}
	err := e.view(ctx, func(r *storage.Reader) error {
		var err error
		out, err = ReadResourceWaiters(r, limit)
		return err
	})
	return out, err
}

// ReadResourceWaiters reads up to limit steps of the waiter queue from r,
// in queue order. The queue keeps the entries of steps that stopped
// waiting until a freed unit is offered past them; those are skipped: an
// entry counts while its step record still holds its seq and its job is
// open.
func ReadResourceWaiters(r *storage.Reader, limit int) ([]ResourceWaiter, error) {
	out := []ResourceWaiter{}
	var low uint64
	b, err := r.Get(storage.KeyLowWaiter)
	switch {
	case err == nil:
		if low, err = storage.ParseU64(b); err != nil {
			return nil, err
		}
	case !errors.Is(err, storage.ErrNotFound):
		return nil, err
	}
	err = r.Scan(storage.WaiterPrefix, storage.WaiterKey(low, 0, ""), false, func(k, _ []byte) (bool, error) {
		e, err := storage.ParseWaiterKey(k)
		if err != nil {
			return false, err
		}
		rec, err := readStep(r.Get, JobID(e.Job), e.Step)
		if err != nil {
			return false, err
		}
		if rec == nil || rec.WaiterSeq != e.Seq {
			return true, nil
		}
		j, err := ReadJob(r, JobID(e.Job))
		if err != nil {
			return false, err
		}
		if j.Status.Terminal() {
			return true, nil
		}
		out = append(out, ResourceWaiter{Seq: e.Seq, Job: rec.Job, Step: rec.Step, Activity: rec.Activity,
			Attempt: rec.Attempt, Capabilities: rec.Capabilities, Selector: rec.Selector, Avoid: rec.Avoid,
			UpdatedMS: rec.UpdatedMS})
		return len(out) < limit, nil
	})
	return out, err
}
