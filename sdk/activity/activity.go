// Package activity is what activity code imports: the facts of the current
// execution and heartbeats.
package activity

import (
	"context"
	"log/slog"
	"time"

	"github.com/heddlewf/heddle/internal/sdkhook"
)

// Info describes one execution of an activity.
type Info struct {
	ActivityType string
	WorkflowID   string
	RunID        string
	// Step is the activity's step in its workflow's history.
	Step string
	// Attempt counts the tries of this step recorded as failed, plus one. A
	// try cut short by a crash (the worker died before committing) is not
	// recorded, so the next try reports the same attempt: tell executions
	// apart by IdempotencyKey and count them yourself if you must.
	Attempt int
	// Deadline is when this attempt's StartToCloseTimeout ends (zero: none).
	Deadline time.Time
	// IdempotencyKey is the same on every retry and every replay of this
	// step, and differs between steps: pass it to downstream services so a
	// step executed twice (a worker died between running it and committing
	// it) has its effect once.
	IdempotencyKey string
	// TaskToken names this attempt of an activity task (an activity run on
	// another task queue than its workflow's), for client.CompleteActivity
	// after the activity returned ErrResultPending; nil for an activity
	// run inside its workflow's worker.
	TaskToken []byte
}

// env is what the worker puts in an activity's context, under
// sdkhook.ActivityEnvKey: the activity's info and a way to heartbeat.
type env interface {
	Info() Info
	// Heartbeat records progress details and renews the lease that covers
	// the activity; an error means the attempt is stale and the activity's
	// context is being cancelled.
	Heartbeat(details []byte) error
	// HeartbeatDetails returns the details of the last heartbeat of an
	// earlier attempt of this step, if any.
	HeartbeatDetails() []byte
	// Logger returns the worker's logger with the activity's attributes.
	Logger() *slog.Logger
}

func envOf(ctx context.Context) env {
	e, ok := ctx.Value(sdkhook.ActivityEnvKey{}).(env)
	if !ok {
		panic("activity: the context does not belong to an activity run by a heddle worker")
	}
	return e
}

// GetInfo returns the info of the activity running under ctx.
func GetInfo(ctx context.Context) Info { return envOf(ctx).Info() }

// RecordHeartbeat reports progress. details are kept for the next attempt
// (GetHeartbeatDetails) if this one fails. When the attempt turns out to be
// stale, ctx is cancelled: the activity should stop and return.
func RecordHeartbeat(ctx context.Context, details []byte) error { return envOf(ctx).Heartbeat(details) }

// GetHeartbeatDetails returns what an earlier attempt of this step last
// recorded with RecordHeartbeat, or nil.
func GetHeartbeatDetails(ctx context.Context) []byte { return envOf(ctx).HeartbeatDetails() }

// GetLogger returns the logger of the activity running under ctx: the
// worker's (worker.Options.Logger, or slog.Default()) with the activity's
// type, workflow id, run id, step and attempt as attributes. Unlike a
// workflow's logger it is never silenced: an activity runs only when its
// result is not recorded yet, never in a replay.
func GetLogger(ctx context.Context) *slog.Logger { return envOf(ctx).Logger() }
