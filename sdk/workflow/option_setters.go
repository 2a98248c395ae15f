package workflow

import "time"

// The setters below change one field of the options a context carries and
// return a child context, as Temporal's do, so that code written as
// workflow.WithStartToCloseTimeout(ctx, time.Minute) ports unchanged. Each
// starts from the options already on ctx (the zero value if none), so they
// compose with WithActivityOptions and WithChildOptions and with each
// other; the parent context keeps the options it had.

// WithTaskQueue returns a child of ctx whose activities are sent to the
// task queue name.
func WithTaskQueue(ctx Context, name string) Context {
	opts := GetActivityOptions(ctx)
	opts.TaskQueue = name
	return WithActivityOptions(ctx, opts)
}

// WithScheduleToCloseTimeout returns a child of ctx whose activities have
// the ScheduleToCloseTimeout d.
func WithScheduleToCloseTimeout(ctx Context, d time.Duration) Context {
	opts := GetActivityOptions(ctx)
	opts.ScheduleToCloseTimeout = d
	return WithActivityOptions(ctx, opts)
}

// WithScheduleToStartTimeout returns a child of ctx whose activities have
// the ScheduleToStartTimeout d.
func WithScheduleToStartTimeout(ctx Context, d time.Duration) Context {
	opts := GetActivityOptions(ctx)
	opts.ScheduleToStartTimeout = d
	return WithActivityOptions(ctx, opts)
}

// WithStartToCloseTimeout returns a child of ctx whose activities have the
// StartToCloseTimeout d.
func WithStartToCloseTimeout(ctx Context, d time.Duration) Context {
	opts := GetActivityOptions(ctx)
	opts.StartToCloseTimeout = d
	return WithActivityOptions(ctx, opts)
}

// WithHeartbeatTimeout returns a child of ctx whose activities have the
// HeartbeatTimeout d.
func WithHeartbeatTimeout(ctx Context, d time.Duration) Context {
	opts := GetActivityOptions(ctx)
	opts.HeartbeatTimeout = d
	return WithActivityOptions(ctx, opts)
}

// WithWaitForCancellation returns a child of ctx whose activities have
// WaitForCancellation set to wait.
func WithWaitForCancellation(ctx Context, wait bool) Context {
	opts := GetActivityOptions(ctx)
	opts.WaitForCancellation = wait
	return WithActivityOptions(ctx, opts)
}

// WithRetryPolicy returns a child of ctx whose activities retry by
// retryPolicy. It takes the policy by value, as Temporal's does; the
// context keeps its own copy.
func WithRetryPolicy(ctx Context, retryPolicy RetryPolicy) Context {
	opts := GetActivityOptions(ctx)
	opts.RetryPolicy = &retryPolicy
	return WithActivityOptions(ctx, opts)
}

// WithWorkflowTaskQueue returns a child of ctx whose child workflows run
// on the task queue name.
func WithWorkflowTaskQueue(ctx Context, name string) Context {
	opts := GetChildWorkflowOptions(ctx)
	opts.TaskQueue = name
	return WithChildOptions(ctx, opts)
}

// WithWorkflowID returns a child of ctx whose next child workflow has the
// workflow id workflowID.
func WithWorkflowID(ctx Context, workflowID string) Context {
	opts := GetChildWorkflowOptions(ctx)
	opts.WorkflowID = workflowID
	return WithChildOptions(ctx, opts)
}

// WithWorkflowRunTimeout returns a child of ctx whose child workflows have
// the WorkflowRunTimeout d.
func WithWorkflowRunTimeout(ctx Context, d time.Duration) Context {
	opts := GetChildWorkflowOptions(ctx)
	opts.WorkflowRunTimeout = d
	return WithChildOptions(ctx, opts)
}
