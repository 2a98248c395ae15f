package embedded

import (
	"context"
	"fmt"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// RemoteChildWait bounds how long Create waits for the acknowledgement of a
// child's create delivered to another shard (and CreateReview of a step's
// task's) when its context sets no deadline: the create is written, and a
// retry with the same request id answers the child's job id (the task's)
// once it is known.
const RemoteChildWait = time.Minute

// awaitRemoteChild waits until the link of step of job parent to its child
// on another shard holds the child's job id (or the target's refusal), as
// the acknowledgement of entry ref writes it, and answers it.
func (e *Engine) awaitRemoteChild(ctx context.Context, parent engine.JobID, step string, ref engine.DeliveryRef) (*engine.CreateResult, error) {
	var res *engine.CreateResult
	err := e.awaitAnswer(ctx, "child", parent, step, ref, func(r *storage.Reader) (bool, error) {
		link, err := machine.ReadRemoteChild(r, parent, step)
		switch {
		case err != nil:
			return false, err
		case link == nil:
			// The create wrote it, and nothing deletes it.
			return false, fmt.Errorf("%w: job %d step %q has no link to the child its create sent (%s)", engine.ErrInvariant, parent, step, ref)
		case link.Child != 0:
			res = &engine.CreateResult{Job: link.Child, WorkflowID: link.WorkflowID}
			return true, nil
		case link.Error != "":
			return false, machine.DeliveryError(link.Outcome, link.Error)
		}
		return false, nil
	})
	return res, err
}

// awaitRemoteReview waits, as awaitRemoteChild, until the link of step of
// job parent to its review task on another shard holds the task's id (or
// the target's refusal), and answers it.
func (e *Engine) awaitRemoteReview(ctx context.Context, parent engine.JobID, step string, ref engine.DeliveryRef) (*engine.ReviewResult, error) {
	var res *engine.ReviewResult
	err := e.awaitAnswer(ctx, "task", parent, step, ref, func(r *storage.Reader) (bool, error) {
		link, err := machine.ReadRemoteReview(r, parent, step)
		switch {
		case err != nil:
			return false, err
		case link == nil:
			// The create wrote it, and nothing deletes it.
			return false, fmt.Errorf("%w: job %d step %q has no link to the task its create sent (%s)", engine.ErrInvariant, parent, step, ref)
		case link.Review != 0:
			res = &engine.ReviewResult{Review: link.Review}
			return true, nil
		case link.Error != "":
			return false, machine.DeliveryError(link.Outcome, link.Error)
		}
		return false, nil
	})
	return res, err
}

// awaitAnswer waits for the answer to the create of the what of step of
// job parent sent to another shard (entry ref), which its acknowledgement
// writes on this shard: answered reads it, reporting it there, or the
// refusal as its error. It reads the shard's state after each commit,
// never on a timer. Its context ending first (after RemoteChildWait
// without a deadline) gives ErrUnknownOutcome: the create is on its way,
// and its retry is safe.
func (e *Engine) awaitAnswer(ctx context.Context, what string, parent engine.JobID, step string, ref engine.DeliveryRef,
	answered func(r *storage.Reader) (bool, error)) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, RemoteChildWait)
		defer cancel()
	}
	// The acknowledgement is applied by this shard's group, so this
	// replica's own state shows it once applied: read after each commit
	// (a linearizable read each time would cost a round of heartbeats per
	// commit and waiter). A replica that lost its leadership still applies
	// the new leader's acknowledgement; one whose backend goes away stops
	// waiting (StopWaiting).
	read := engine.WithStaleRead(ctx)
	for {
		if e.stopped.Load() {
			return fmt.Errorf("%w: the engine closed while the create of the %s of job %d step %q was on its way (%s); retry with the same request id",
				engine.ErrUnknownOutcome, what, parent, step, ref)
		}
		changed := e.Committed() // before the read, so no commit is missed
		var done bool
		err := e.view(read, func(r *storage.Reader) error {
			var err error
			done, err = answered(r)
			return err
		})
		if err != nil || done {
			return err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("%w: the create of the %s of job %d step %q is written and on its way to shard %d (%s): %v; retry with the same request id",
				engine.ErrUnknownOutcome, what, parent, step, ref.Target, ref, ctx.Err())
		}
	}
}

// DeliveryBacklog returns what this shard's outbox holds for each target
// shard (machine.OutboxBacklog), read from this replica's own state: on a
// follower it may trail the leader's by a few entries.
func (e *Engine) DeliveryBacklog(ctx context.Context, source int) ([]engine.DeliveryBacklog, error) {
	var out []engine.DeliveryBacklog
	err := e.view(engine.WithStaleRead(ctx), func(r *storage.Reader) error {
		var err error
		out, err = machine.OutboxBacklog(r, source)
		return err
	})
	return out, err
}

// StopWaiting tells the Engine that its backend is going away (a Raft node
// closing): whoever waits for a commit in it looks again and gives up.
// Close calls it.
func (e *Engine) StopWaiting() {
	e.stopped.Store(true)
	e.NotifyCommitted(nil, nil)
}
