package bench

import (
	"context"
	"sync/atomic"

	"github.com/heddlewf/heddle/engine"
)

// counting wraps a Service and counts the commands its callers issue, so a
// throughput figure can be set against a ceiling counted in writes: a
// workflow of three activities costs several commands, and the ceiling is
// divided by how many it really took in this run. Reads are not counted;
// neither are the scheduler's own commands (timer firings), which do not
// pass through a Service.
type counting struct {
	engine.Service
	commands atomic.Int64
	// claims counts the claims that returned jobs (a worker's long polls
	// that ended empty are not counted): what the scaling model multiplies
	// by the nodes each claim polls.
	claims atomic.Int64
}

func (c *counting) add() { c.commands.Add(1) }

// WaitClosing forwards to the inner Service's (engine.ClosingWaiter),
// which the SDK's wait for a result uses when it has one: a read, not
// counted.
func (c *counting) WaitClosing(ctx context.Context, t engine.Target) (*engine.Closing, error) {
	return engine.WaitClosing(ctx, c.Service, t)
}

func (c *counting) Create(ctx context.Context, x engine.CreateJob) (*engine.CreateResult, error) {
	c.add()
	return c.Service.Create(ctx, x)
}

func (c *counting) Claim(ctx context.Context, x engine.Claim) ([]engine.ClaimedJob, error) {
	c.add()
	return c.Service.Claim(ctx, x)
}

// ClaimWait counts one command per claim that returned jobs: an empty wait
// proposes nothing (waiting claimers look at the ready index first).
func (c *counting) ClaimWait(ctx context.Context, x engine.Claim) ([]engine.ClaimedJob, error) {
	jobs, err := c.Service.ClaimWait(ctx, x)
	if len(jobs) > 0 {
		c.add()
		c.claims.Add(1)
	}
	return jobs, err
}

func (c *counting) Heartbeat(ctx context.Context, x engine.Heartbeat) (*engine.HeartbeatResult, error) {
	c.add()
	return c.Service.Heartbeat(ctx, x)
}

func (c *counting) Append(ctx context.Context, x engine.AppendEvents) (*engine.AppendResult, error) {
	c.add()
	return c.Service.Append(ctx, x)
}

func (c *counting) CommitStep(ctx context.Context, x engine.CommitStep) (*engine.AppendResult, error) {
	c.add()
	return c.Service.CommitStep(ctx, x)
}

func (c *counting) Wait(ctx context.Context, x engine.Wait) (*engine.WaitResult, error) {
	c.add()
	return c.Service.Wait(ctx, x)
}

func (c *counting) Signal(ctx context.Context, x engine.Signal) (*engine.SignalResult, error) {
	c.add()
	return c.Service.Signal(ctx, x)
}

func (c *counting) Complete(ctx context.Context, x engine.Complete) (*engine.StatusResult, error) {
	c.add()
	return c.Service.Complete(ctx, x)
}

func (c *counting) Fail(ctx context.Context, x engine.Fail) (*engine.StatusResult, error) {
	c.add()
	return c.Service.Fail(ctx, x)
}

func (c *counting) Requeue(ctx context.Context, x engine.Requeue) (*engine.StatusResult, error) {
	c.add()
	return c.Service.Requeue(ctx, x)
}

func (c *counting) ContinueAsNew(ctx context.Context, x engine.ContinueAsNew) (*engine.CreateResult, error) {
	c.add()
	return c.Service.ContinueAsNew(ctx, x)
}

func (c *counting) LeaseStep(ctx context.Context, x engine.LeaseStep) (*engine.StepResult, error) {
	c.add()
	return c.Service.LeaseStep(ctx, x)
}

func (c *counting) StepHeartbeat(ctx context.Context, x engine.StepHeartbeat) (*engine.StepResult, error) {
	c.add()
	return c.Service.StepHeartbeat(ctx, x)
}

func (c *counting) EndStepAttempt(ctx context.Context, x engine.EndStepAttempt) (*engine.StepResult, error) {
	c.add()
	return c.Service.EndStepAttempt(ctx, x)
}

func (c *counting) AnswerStep(ctx context.Context, x engine.AnswerStep) (*engine.StepResult, error) {
	c.add()
	return c.Service.AnswerStep(ctx, x)
}

func (c *counting) AddResource(ctx context.Context, x engine.AddResource) (*engine.ResourceResult, error) {
	c.add()
	return c.Service.AddResource(ctx, x)
}
