package machine

import (
	"errors"
	"fmt"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// This file applies the signals and cancel requests a run sends on behalf
// of a step (engine.SenderStep): workflow.SignalExternalWorkflow and
// RequestCancelExternalWorkflow. The command is applied on the sender's
// shard under its lease; its outcome becomes the step's effect, which the
// worker catches up. A target on this shard is reached in the same
// transaction; one on another through the outbox, and the effect waits
// for the target's answer (ackDelivery). A sending mark (storage.SendingKey)
// names the entry on its way, so a second send of the step sends nothing.

// sendExternal applies cmd (a Signal or RequestCancel to target t) on
// behalf of sender's step.
func (a *applier) sendExternal(cmd engine.Command, t engine.Target, sender engine.SenderStep) (engine.Result, error) {
	name := cmd.Kind().String()
	if err := a.jobOnShard(name, "sender job", sender.Job); err != nil {
		return nil, err
	}
	l, err := a.fenced(sender.LeaseRef, name)
	if err != nil {
		return nil, err
	}
	// Sent before: the step has its effect, or its delivery is on its way.
	// Either way the worker reads the effect, now or when it comes.
	if eff, err := a.effect(sender.Job, sender.Step); err != nil || eff != nil {
		return externalResult(cmd, 0), err
	}
	switch _, err := a.tx.Get(storage.SendingKey(uint64(sender.Job), sender.Step)); {
	case err == nil:
		return externalResult(cmd, 0), nil
	case !errors.Is(err, storage.ErrNotFound):
		return nil, err
	}
	inner := withoutSender(cmd)
	if a.remoteChildTarget(t) {
		ref, err := a.send(engine.ShardOfTarget(t, a.shard.Count), inner, sender.Job, sender.Step)
		if err != nil {
			return nil, err
		}
		a.tx.Set(storage.SendingKey(uint64(sender.Job), sender.Step), storage.SendingValue(storage.OutboxPair{Shard: ref.Target, Seq: ref.Seq}))
		return externalResult(cmd, 0), nil
	}
	// The target is here: gone (unknown, or closed) is the step's failure,
	// decided before anything is written; any other refusal refuses the
	// whole command.
	target, err := a.resolve(t)
	switch {
	case errors.Is(err, engine.ErrUnknownJob):
		return externalResult(cmd, 0), a.recordChildEffect(l, sender.Step, engine.EncodeExternalFailure(engine.FailureUnknownExternal, err.Error()), true)
	case err != nil:
		return nil, err
	case target.job.Status.Terminal():
		msg := fmt.Sprintf("job %d (workflow id %q) is %s", target.job.ID, target.job.WorkflowID, target.job.Status)
		return externalResult(cmd, 0), a.recordChildEffect(l, sender.Step, engine.EncodeExternalFailure(engine.FailureUnknownExternal, msg), true)
	}
	switch x := inner.(type) {
	case *engine.Signal:
		_, err = a.signal(x)
	case *engine.RequestCancel:
		_, err = a.requestCancel(x)
	}
	if err != nil {
		return nil, err
	}
	return externalResult(cmd, target.job.ID), a.recordChildEffect(l, sender.Step, nil, false)
}

// withoutSender returns the command a sender's Signal or RequestCancel
// applies to its target: the same, by the same principal, without the
// sender, header or request id.
func withoutSender(cmd engine.Command) engine.Command {
	switch c := cmd.(type) {
	case *engine.Signal:
		in := *c
		in.Header, in.Sender = engine.Header{By: c.By}, nil
		return &in
	case *engine.RequestCancel:
		in := *c
		in.Header, in.Sender = engine.Header{By: c.By}, nil
		return &in
	}
	panic(fmt.Sprintf("machine: %s has no sender", cmd.Kind())) // only the two kinds above call it
}

// externalResult is what a sender's command answers: the target job when
// it was reached here, else 0 (the step's effect, recorded or to come,
// tells the outcome).
func externalResult(cmd engine.Command, target engine.JobID) engine.Result {
	if cmd.Kind() == engine.KindSignal {
		return &engine.SignalResult{Job: target}
	}
	return &engine.StatusResult{Job: target}
}

// externalAnswered writes, on the sender's shard, the answer of the target
// to a signal or cancel request entry e: the sending mark goes, and the
// outcome becomes the effect of the sender's step (unless the sender
// ended meanwhile).
func (a *applier) externalAnswered(e *engine.OutboxEntry, ans engine.DeliverResult) error {
	a.tx.Delete(storage.SendingKey(uint64(e.Parent), e.Step))
	p, err := a.load(e.Parent)
	if errors.Is(err, engine.ErrUnknownJob) {
		return nil
	}
	if err != nil {
		return err
	}
	if ans.Error == "" {
		return a.recordChildEffect(p, e.Step, nil, false)
	}
	typ := engine.FailureInvalidExternal
	if gone(DeliveryError(ans.Outcome, ans.Error)) {
		typ = engine.FailureUnknownExternal
	}
	return a.recordChildEffect(p, e.Step, engine.EncodeExternalFailure(typ, ans.Error), true)
}

// gone reports a refusal that means the target run is not there to take a
// signal or cancel request: unknown, closed, or in no status that takes it.
func gone(err error) bool {
	return errors.Is(err, engine.ErrUnknownJob) || errors.Is(err, engine.ErrJobClosed) || errors.Is(err, engine.ErrIllegalTransition)
}
