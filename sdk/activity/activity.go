// Package activity is what activity code imports: the facts of the current
// execution, heartbeats and the activity's logger.
package activity

import (
	"context"
	"log/slog"
	"time"

	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/log"
	"github.com/heddlewf/heddle/sdk/temporal"
)

// Type names an activity type, as Temporal's activity.Type does.
type Type = temporal.ActivityType

// Info describes one execution of an activity. Its first fields are
// Temporal's; the rest are heddle's.
type Info struct {
	// ActivityType is the name the activity was called by.
	ActivityType Type
	// ActivityID is the activity's step in its workflow's history.
	ActivityID string
	// WorkflowType and WorkflowExecution name the workflow that called
	// the activity.
	WorkflowType      *temporal.WorkflowType
	WorkflowExecution temporal.WorkflowExecution
	// WorkflowNamespace is always "default": heddle has no namespaces.
	WorkflowNamespace string
	// TaskQueue is the queue of the worker running the activity.
	TaskQueue string
	// The activity's timeouts, as its options gave them (0: none).
	HeartbeatTimeout       time.Duration
	ScheduleToCloseTimeout time.Duration
	StartToCloseTimeout    time.Duration
	// ScheduledTime is the workflow time the activity was called at, and
	// StartedTime when this attempt started.
	ScheduledTime time.Time
	StartedTime   time.Time
	// Deadline is when this attempt must end: the sooner of its
	// StartToCloseTimeout and the activity's ScheduleToCloseTimeout (zero:
	// none).
	Deadline time.Time
	// Attempt counts the tries of this step recorded as failed, plus one. A
	// try cut short by a crash (the worker died before committing) is not
	// recorded, so the next try reports the same attempt: tell executions
	// apart by IdempotencyKey and count them yourself if you must.
	Attempt int32
	// IsLocalActivity reports an activity started by
	// workflow.ExecuteLocalActivity.
	IsLocalActivity bool

	// WorkflowID and RunID are WorkflowExecution's ID and RunID, and Step
	// is ActivityID: heddle's earlier names, kept.
	WorkflowID string
	RunID      string
	Step       string
	// IdempotencyKey is the same on every retry and every replay of this
	// step, and differs between steps: pass it to downstream services so a
	// step executed twice (a worker died between running it and committing
	// it) has its effect once.
	IdempotencyKey string
	// Resource is the resource unit this try holds, for an activity whose
	// options require one (RequiredCapabilities, LabelSelector): its id
	// and labels. Empty otherwise.
	Resource       string
	ResourceLabels map[string]string
	// Answer is a person's answer to the question an earlier try of this
	// step asked (a NeedsUserError, or the critic's needs_user), as the
	// person sent it; nil when nobody was asked.
	Answer []byte
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
	// Heartbeat records progress details (converter.Encode's payload) and
	// renews the lease that covers the activity. When the attempt turns out
	// to be stale, the activity's context is cancelled.
	Heartbeat(details []byte)
	// HeartbeatDetails returns the details of the last heartbeat of an
	// earlier attempt of this step, if any.
	HeartbeatDetails() []byte
	// Logger returns the worker's logger with the activity's attributes.
	Logger() *slog.Logger
	// WorkerStop is closed when the worker is asked to stop.
	WorkerStop() <-chan struct{}
}

func envOf(ctx context.Context) env {
	e, ok := ctx.Value(sdkhook.ActivityEnvKey{}).(env)
	if !ok {
		panic("activity: the context does not belong to an activity run by a heddle worker")
	}
	return e
}

// IsActivity reports whether ctx is the context of an activity run by a
// worker.
func IsActivity(ctx context.Context) bool {
	_, ok := ctx.Value(sdkhook.ActivityEnvKey{}).(env)
	return ok
}

// GetInfo returns the info of the activity running under ctx.
func GetInfo(ctx context.Context) Info {
	if o := outboundOf(ctx); o != nil {
		return o.GetInfo(ctx)
	}
	return envOf(ctx).Info()
}

// RecordHeartbeat reports progress. details are encoded (converter.Encode)
// and kept for the next attempt (GetHeartbeatDetails) if this one fails,
// and for the TimeoutError of a heartbeat timeout. Each call resets the
// HeartbeatTimeout and renews the lease at the engine: heddle does not
// throttle heartbeats as Temporal does, so call it at the pace you need
// (an activity on another task queue learns of its cancellation at its
// next heartbeat or the worker's next lease renewal). When the attempt
// turns out to be stale (another worker took the step over), ctx is
// cancelled: the activity should stop and return. Details that cannot be
// encoded are logged and dropped; the heartbeat still counts.
func RecordHeartbeat(ctx context.Context, details ...any) {
	if o := outboundOf(ctx); o != nil {
		o.RecordHeartbeat(ctx, details...)
		return
	}
	recordHeartbeat(ctx, details...)
}

func recordHeartbeat(ctx context.Context, details ...any) {
	e := envOf(ctx)
	data, err := converter.Encode(details...)
	if err != nil {
		e.Logger().Error("activity: heartbeat details cannot be encoded; they are dropped", "error", err)
		data = nil
	}
	e.Heartbeat(data)
}

// HasHeartbeatDetails reports whether an earlier attempt of this step
// recorded heartbeat details.
func HasHeartbeatDetails(ctx context.Context) bool {
	if o := outboundOf(ctx); o != nil {
		return o.HasHeartbeatDetails(ctx)
	}
	return len(envOf(ctx).HeartbeatDetails()) > 0
}

// GetHeartbeatDetails decodes the details an earlier attempt of this step
// last recorded with RecordHeartbeat into d, in order. It returns
// temporal.ErrNoData when there are none.
func GetHeartbeatDetails(ctx context.Context, d ...any) error {
	if o := outboundOf(ctx); o != nil {
		return o.GetHeartbeatDetails(ctx, d...)
	}
	return getHeartbeatDetails(ctx, d...)
}

func getHeartbeatDetails(ctx context.Context, d ...any) error {
	return converter.NewEncodedValues(envOf(ctx).HeartbeatDetails()).Get(d...)
}

// GetLogger returns the logger of the activity running under ctx, as
// Temporal's: a log.Logger writing to the worker's slog.Logger
// (worker.Options.Logger, or slog.Default()) with the activity's type,
// workflow id, run id, step and attempt as attributes. Unlike a workflow's
// logger it is never silenced: an activity runs only when its result is
// not recorded yet, never in a replay. It is a *log.StructuredLogger, so it
// implements log.WithLogger and log.WithSkipCallers; log.Slog(GetLogger(ctx))
// gives the *slog.Logger behind it, attributes included. A worker's
// interceptors (sdk/interceptor) may give another logger.
func GetLogger(ctx context.Context) log.Logger {
	if o := outboundOf(ctx); o != nil {
		return o.GetLogger(ctx)
	}
	return getLogger(ctx)
}

func getLogger(ctx context.Context) log.Logger { return log.NewStructuredLogger(envOf(ctx).Logger()) }

// GetWorkerStopChannel returns a channel that is closed when the worker
// running the activity is asked to stop: a long activity may return early
// (with an error, so that it is retried elsewhere).
func GetWorkerStopChannel(ctx context.Context) <-chan struct{} {
	if o := outboundOf(ctx); o != nil {
		return o.GetWorkerStopChannel(ctx)
	}
	return envOf(ctx).WorkerStop()
}
