package embedded

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/internal/listfilter"
	"github.com/heddlewf/heddle/storage"
)

// Describe returns the record of the job t names.
func (e *Engine) Describe(ctx context.Context, t engine.Target) (*engine.Job, error) {
	var j *engine.Job
	err := e.view(ctx, func(r *storage.Reader) error {
		var err error
		j, err = machine.ReadTarget(r, t)
		return err
	})
	return j, err
}

// History returns up to limit events of job id with seq > afterSeq (limit 0
// means 100; at most MaxPage). No seq is larger than the largest uint64, so
// that cursor gives an empty page.
func (e *Engine) History(ctx context.Context, id engine.JobID, afterSeq uint64, limit int) (*engine.HistoryPage, error) {
	if limit < 0 || limit > engine.MaxPage {
		return nil, fmt.Errorf("%w: history limit %d is not in [0, %d]", engine.ErrInvalidCommand, limit, engine.MaxPage)
	}
	if limit == 0 {
		limit = 100
	}
	page := &engine.HistoryPage{}
	err := e.view(ctx, func(r *storage.Reader) error {
		if _, err := machine.ReadJob(r, id); err != nil {
			return err
		}
		evs, more, err := machine.ReadHistoryPage(r, id, afterSeq, limit, engine.MaxPageBytes)
		page.Events = evs
		if more && len(evs) > 0 {
			page.Next = evs[len(evs)-1].Seq
		}
		return err
	})
	return page, err
}

// Effect returns the recorded effect of a step, or nil when there is none.
func (e *Engine) Effect(ctx context.Context, id engine.JobID, step string) (*engine.Effect, error) {
	var eff *engine.Effect
	err := e.view(ctx, func(r *storage.Reader) error {
		var err error
		eff, err = machine.ReadEffect(r, id, step)
		return err
	})
	return eff, err
}

// List returns one page of the runs q matches, in q's order (newest
// first by default): the machine walks the narrowest index the filter
// allows and checks each run it reads (machine.ListJobs).
func (e *Engine) List(ctx context.Context, q engine.ListQuery) (*engine.ListPage, error) {
	if q.Limit < 0 || q.Limit > engine.MaxPage {
		return nil, fmt.Errorf("%w: list limit %d is not in [0, %d]", engine.ErrInvalidCommand, q.Limit, engine.MaxPage)
	}
	if q.Limit == 0 {
		q.Limit = 100
	}
	f, err := listfilter.Compile(q, e.now())
	if err != nil {
		return nil, err
	}
	if q.After == math.MaxUint64 {
		// No id is larger, and After+1 would wrap around to the first page.
		return &engine.ListPage{Jobs: []*engine.Job{}, Order: f.Order}, nil
	}
	page := &engine.ListPage{}
	err = e.view(ctx, func(r *storage.Reader) error {
		p, err := machine.ListJobs(r, q, f)
		*page = *p
		return err
	})
	return page, err
}

var _ engine.WorkflowCounter = (*Engine)(nil)

// Count implements engine.WorkflowCounter.
func (e *Engine) Count(ctx context.Context, q engine.ListQuery) (*engine.CountResult, error) {
	q.Order, q.PageToken, q.After, q.Limit = engine.ListOrderDefault, "", 0, 0
	f, err := listfilter.Compile(q, e.now())
	if err != nil {
		return nil, err
	}
	var res *engine.CountResult
	err = e.view(ctx, func(r *storage.Reader) error {
		var err error
		res, err = machine.CountJobs(r, f)
		return err
	})
	return res, err
}

// now is the engine's clock's time.
func (e *Engine) now() time.Time {
	if e.clock != nil {
		return e.clock.Now()
	}
	return time.Now()
}

var _ engine.ResourceWaiterReader = (*Engine)(nil)

// ResourceWaiters implements ResourceWaiterReader.
func (e *Engine) ResourceWaiters(ctx context.Context, limit int) ([]engine.ResourceWaiter, error) {
	if limit < 0 || limit > engine.MaxPage {
		return nil, fmt.Errorf("%w: limit %d is not in [0, %d]", engine.ErrInvalidCommand, limit, engine.MaxPage)
	}
	if limit == 0 {
		limit = engine.MaxPage
	}
	out := []engine.ResourceWaiter{}
	err := e.view(ctx, func(r *storage.Reader) error {
		var err error
		out, err = machine.ReadResourceWaiters(r, limit)
		return err
	})
	return out, err
}

// Steps returns the activity steps of the job t names, in step order.
func (e *Engine) Steps(ctx context.Context, t engine.Target) ([]engine.StepInfo, error) {
	return e.QuerySteps(ctx, engine.StepsQuery{Target: t})
}

var _ engine.BoundedReader = (*Engine)(nil)

// QueryHistory implements engine.BoundedReader.
func (e *Engine) QueryHistory(ctx context.Context, q engine.HistoryQuery) (*engine.HistoryPage, error) {
	if q.Limit < 0 || q.Limit > engine.MaxPage {
		return nil, fmt.Errorf("%w: history limit %d is not in [0, %d]", engine.ErrInvalidCommand, q.Limit, engine.MaxPage)
	}
	if q.MaxPayloadBytes < 0 {
		return nil, fmt.Errorf("%w: max payload bytes %d is negative", engine.ErrInvalidCommand, q.MaxPayloadBytes)
	}
	if q.MaxPayloadBytes == 0 {
		return e.History(ctx, q.Job, q.AfterSeq, q.Limit)
	}
	var page *engine.HistoryPage
	err := e.view(ctx, func(r *storage.Reader) error {
		var err error
		page, err = machine.ReadHistoryBounded(r, q)
		return err
	})
	return page, err
}

// QuerySteps implements engine.BoundedReader.
func (e *Engine) QuerySteps(ctx context.Context, q engine.StepsQuery) ([]engine.StepInfo, error) {
	if q.MaxQuestionBytes < 0 {
		return nil, fmt.Errorf("%w: max question bytes %d is negative", engine.ErrInvalidCommand, q.MaxQuestionBytes)
	}
	var out []engine.StepInfo
	err := e.view(ctx, func(r *storage.Reader) error {
		var err error
		out, err = machine.ReadSteps(r, q)
		return err
	})
	return out, err
}

// Resources returns every resource record, in id order.
func (e *Engine) Resources(ctx context.Context) ([]*engine.Resource, error) {
	var out []*engine.Resource
	err := e.view(ctx, func(r *storage.Reader) error {
		var err error
		out, err = machine.ReadResources(r)
		return err
	})
	return out, err
}
