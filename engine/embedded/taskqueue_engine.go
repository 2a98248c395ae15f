package embedded

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

var _ engine.TaskQueueReader = (*Engine)(nil)

// listBacklogLimit bounds the ready jobs ListTaskQueues counts of each
// queue (a describe of one counts up to engine.MaxBacklogCount): a list
// of many queues stays one bounded read.
const listBacklogLimit = 10_000

// BeginPoll records that c's claimer polls c.Queue from now until end is
// called (see TaskQueues.BeginPoll): the HTTP server's claim route calls
// it around a long poll, which may wait on this node without ever
// proposing. A claim that fails its Check is not recorded.
func (e *Engine) BeginPoll(c engine.Claim) (end func()) {
	if e.queues == nil {
		return func() {}
	}
	// Check wants the stamp the log gives a command; the poll's is now.
	c.NowMS = e.clock.Now().UnixMilli()
	if c.Check(&e.limits) != nil {
		return func() {}
	}
	return e.queues.BeginPoll(&c)
}

// TaskQueueViews returns this node's own view of the queues it knows: the
// pollers that polled it within engine.PollerWindow and the rates, without
// the backlog (the store has it; DescribeTaskQueue reads it). A cluster's
// HTTP server merges its members' views into its answers. Nil when the
// view is off (Config.DisableQueueView).
func (e *Engine) TaskQueueViews() []engine.TaskQueueDescription {
	return e.queues.Views()
}

// DescribeTaskQueue implements engine.TaskQueueReader with this node's
// view of the pollers and the rates, and the backlog from the store.
func (e *Engine) DescribeTaskQueue(ctx context.Context, queue string) (*engine.TaskQueueDescription, error) {
	if err := e.checkQueueName(queue); err != nil {
		return nil, err
	}
	d := e.queues.View(queue)
	if d.NowMS == 0 {
		d.NowMS = e.clock.Now().UnixMilli()
	}
	err := e.view(ctx, func(r *storage.Reader) error {
		delayed, capped, err := machine.DelayedByQueue(r, queue, engine.MaxDelayedCount)
		if err != nil {
			return err
		}
		d.Stats.DelayedCount, d.Stats.DelayedCountCapped = delayed[queue], capped
		return backlogOf(r, &d, engine.MaxBacklogCount)
	})
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// ListTaskQueues implements engine.TaskQueueReader: the queues that ever
// held a job and those this node saw polled, each as DescribeTaskQueue
// describes it but with its backlog counted up to 10,000.
func (e *Engine) ListTaskQueues(ctx context.Context) (*engine.TaskQueueList, error) {
	views := e.queues.Views()
	now := e.clock.Now().UnixMilli()
	out := &engine.TaskQueueList{}
	err := e.view(ctx, func(r *storage.Reader) error {
		names, more, err := machine.QueueNames(r, engine.MaxTaskQueues)
		if err != nil {
			return err
		}
		for _, v := range views {
			names = append(names, v.Name)
		}
		slices.Sort(names)
		names = slices.Compact(names)
		if len(names) > engine.MaxTaskQueues {
			names, more = names[:engine.MaxTaskQueues], true
		}
		out.Truncated = more
		delayed, capped, err := machine.DelayedByQueue(r, "", engine.MaxDelayedCount)
		if err != nil {
			return err
		}
		out.Queues = make([]engine.TaskQueueDescription, 0, len(names))
		for _, name := range names {
			d := engine.TaskQueueDescription{Name: name, Pollers: []engine.TaskQueuePoller{}, NowMS: now}
			if i, ok := slices.BinarySearchFunc(views, name, func(v engine.TaskQueueDescription, n string) int {
				return strings.Compare(v.Name, n)
			}); ok {
				d = views[i]
			}
			d.Stats.DelayedCount, d.Stats.DelayedCountCapped = delayed[name], capped
			if err := backlogOf(r, &d, listBacklogLimit); err != nil {
				return err
			}
			out.Queues = append(out.Queues, d)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// QueuedReason implements engine.TaskQueueReader from this node's view of
// the pollers (see engine.ExplainQueued).
func (e *Engine) QueuedReason(ctx context.Context, t engine.Target) (*engine.QueuedReason, error) {
	j, err := e.Describe(ctx, t)
	if err != nil {
		return nil, err
	}
	if j.Status != engine.StatusQueued {
		return &engine.QueuedReason{}, nil
	}
	d, err := e.DescribeTaskQueue(ctx, j.Queue)
	if err != nil {
		return nil, err
	}
	return engine.ExplainQueued(j, d, engine.PolledQueues(e.queues.Views())), nil
}

// backlogOf fills d's backlog count (up to limit) and age from r.
func backlogOf(r *storage.Reader, d *engine.TaskQueueDescription, limit int64) error {
	n, capped, oldestMS, err := machine.QueueBacklog(r, d.Name, limit)
	if err != nil {
		return err
	}
	d.Stats.BacklogCount, d.Stats.BacklogCountCapped = n, capped
	if n > 0 {
		d.Stats.BacklogAgeMS = max(d.NowMS-oldestMS, 0)
	}
	return nil
}

// checkQueueName refuses a queue name no job could have.
func (e *Engine) checkQueueName(queue string) error {
	switch {
	case queue == "":
		return fmt.Errorf("%w: a task queue name is required", engine.ErrInvalidCommand)
	case len(queue) > e.limits.MaxNameBytes:
		return fmt.Errorf("%w: task queue name of %d bytes is over the limit of %d", engine.ErrInvalidCommand, len(queue), e.limits.MaxNameBytes)
	}
	return nil
}
