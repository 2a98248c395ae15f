package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/backoff"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// ReviewRequest is what a reviewer judges: a task's latest output and its
// configuration.
type ReviewRequest struct {
	// Review is the review task's id.
	Review engine.ReviewID
	// Task is Review under its former name.
	//
	// Deprecated: use Review.
	Task   engine.ReviewID
	Job    string
	Phase  string
	Config engine.ReviewConfig
	// Output is the work's output, as the work function returned it
	// (decode it with converter.Decode); Summary what the work said of it.
	Output []byte
	// Run counts the work's runs so far.
	Run int
}

// ReviewResult is a reviewer's verdict: Approve sends the task to
// APPROVAL_REQUIRED (or SUCCESS with auto-approval), otherwise to
// INTERVENTION_REQUIRED; the recommendations and the summary are recorded
// and shown to the next run and in the manifest.
type ReviewResult struct {
	Approve         bool
	Recommendations []string
	Summary         string
}

// Reviewer judges a task's output. It runs under a reviewer's lease that
// the worker renews; should the worker die, the task goes back to
// REVIEW_REQUIRED when the lease expires. It may run concurrently with
// other reviews and must not keep ctx after it returns.
type Reviewer func(ctx context.Context, r ReviewRequest) (ReviewResult, error)

// reviewSide is the worker's part in review tasks: the reviewers it runs.
type reviewSide struct {
	mu        sync.Mutex
	reviewers map[string]Reviewer
}

// RegisterReviewer registers a reviewer under name: the worker claims the
// reviews of its task queue whose task names this reviewer
// (workflow.ReviewOptions.Reviewer), or names none. Register before Start.
func (w *queueWorker) RegisterReviewer(name string, fn Reviewer) {
	w.reviews.mu.Lock()
	defer w.reviews.mu.Unlock()
	if w.reviews.reviewers == nil {
		w.reviews.reviewers = map[string]Reviewer{}
	}
	w.reviews.reviewers[name] = fn
}

func (w *queueWorker) reviewerNames() []string {
	w.reviews.mu.Lock()
	defer w.reviews.mu.Unlock()
	out := make([]string, 0, len(w.reviews.reviewers))
	for n := range w.reviews.reviewers {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func (w *queueWorker) reviewer(name string) Reviewer {
	w.reviews.mu.Lock()
	defer w.reviews.mu.Unlock()
	if r, ok := w.reviews.reviewers[name]; ok {
		return r
	}
	for _, r := range w.reviews.reviewers { // a task naming no reviewer takes any
		if name == "" {
			return r
		}
	}
	return nil
}

func (w *queueWorker) activityNames() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.activities))
	for n := range w.activities {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// endEvents returns the events that end a remote command of kind k, as
// success and as failure.
func endEvents(k replay.CommandKind) (done, failed engine.EventType) {
	switch k {
	case replay.KindChild:
		return engine.EventChildCompleted, engine.EventChildFailed
	case replay.KindReview:
		return engine.EventReviewCompleted, engine.EventReviewFailed
	}
	return engine.EventActivityCompleted, engine.EventActivityFailed
}

// createReview creates the review task of a workflow.ExecuteReview command;
// its SUCCESS (or CANCELED) becomes this job's step effect. The request id
// is derived from this job and the step, and a task found created by an
// earlier try (after a crash) is this command's own.
func (r *run) createReview(c *replay.Command) (bool, error) {
	ts, ok := rawService(r.w.e).(engine.ReviewService)
	if !ok {
		return true, r.failReview(c, workflow.NewApplicationError("this worker's service has no review tasks", "NoTasks", true))
	}
	rc, ok := c.Options.(reviewCommand)
	if !ok {
		return false, errOptions(c)
	}
	opts := rc.Options
	ct := engine.CreateReview{
		Job: opts.Job, Phase: opts.Phase, Description: opts.Description, JobDescription: opts.JobDescription,
		Queue: opts.TaskQueue, ReviewQueue: opts.ReviewQueue, Type: c.Name, ReviewType: opts.Reviewer,
		Deps: opts.DependsOn, Draft: opts.Draft, AutoReview: opts.AutoReview, AutoApprove: opts.AutoApprove,
		Config:    engine.ReviewConfig{Objective: opts.Objective, Details: opts.Details, Acceptance: opts.AcceptanceCriteria, Input: c.Input},
		ParentJob: r.job.Job, ParentStep: c.Step, By: r.job.WorkflowID,
	}
	parent := r.ref // the engine creates a run's tasks only for its lease's holder
	ct.ParentLease = &parent
	if ct.Job == "" {
		ct.Job = r.job.WorkflowID
	}
	if ct.Queue == "" {
		ct.Queue = r.w.queue
	}
	ct.RequestID = fmt.Sprintf("heddle/%d/%s/task", r.job.Job, c.Step)
	if _, err := ts.CreateReview(r.ctx, ct); err != nil {
		if !errors.Is(err, engine.ErrReviewExists) {
			if errors.Is(err, engine.ErrCrossShard) {
				// A sharded cluster creates a task whose review job lives on
				// another shard than its run through the run's shard's
				// outbox, and answers its id once there (phase 2); a node
				// that still refuses it (one of an older version) fails the
				// step at once, saying so, rather than the turn retrying
				// what cannot succeed (docs/sharding.md, "Cross-shard
				// work").
				return true, r.failReview(c, workflow.NewApplicationError(err.Error(), "CrossShard", true))
			}
			if errors.Is(err, engine.ErrInvalidCommand) {
				return true, r.failReview(c, workflow.NewApplicationError(err.Error(), "BadTask", true))
			}
			return false, err
		}
		t, derr := ts.DescribeReview(r.ctx, engine.ReviewTarget{Job: ct.Job, Phase: ct.Phase})
		if derr != nil {
			return false, derr
		}
		if t.ParentJob != r.job.Job || t.ParentStep != c.Step {
			return true, r.failReview(c, workflow.NewApplicationError(
				fmt.Sprintf("job %q already has a task of phase %q", ct.Job, ct.Phase), sdkhook.FailureAlreadyStarted, true))
		}
	}
	c.Started = true
	r.pending = append(r.pending, engine.NewEvent{Type: engine.EventReviewScheduled, Step: c.Step, Name: c.Name})
	return false, nil
}

// failReview ends a task command with a failure the worker decided (the
// service has no tasks, the task is refused or its phase taken).
func (r *run) failReview(c *replay.Command, ferr error) error {
	return r.commitStep(engine.CommitStep{LeaseRef: r.ref, Step: c.Step, Name: c.Name, Type: engine.EventReviewFailed,
		Payload: sdkhook.EncodeFailure(ferr), Failed: true})
}

// reviewPollWait is how long a poller waits between empty claims on a
// service that cannot wait for tasks itself (neither the engine nor the
// HTTP client, which both can, ever gets here).
const reviewPollWait = 200 * time.Millisecond

// startReviewPollers starts claiming review tasks' work (for the activities
// registered) and reviews (for the reviewers registered), when the
// service has review tasks.
func (w *queueWorker) startReviewPollers() {
	ts, ok := rawService(w.e).(engine.ReviewService)
	if !ok {
		return
	}
	if len(w.activityNames()) > 0 {
		w.wg.Add(1)
		go w.pollReviews(ts, engine.ReviewRoleWork)
	}
	if len(w.reviewerNames()) > 0 {
		w.wg.Add(1)
		go w.pollReviews(ts, engine.ReviewRoleReview)
	}
}

// pollReviews claims tasks of one role and runs each on a goroutine of its
// own, until the worker stops.
func (w *queueWorker) pollReviews(ts engine.ReviewService, role engine.ReviewRole) {
	defer w.wg.Done()
	waiter, canWait := ts.(interface {
		ClaimReviewsWait(context.Context, engine.ClaimReviews) ([]engine.ClaimedReview, error)
	})
	var bo backoff.Backoff
	for w.pollCtx.Err() == nil {
		types := w.activityNames()
		if role == engine.ReviewRoleReview {
			types = w.reviewerNames()
		}
		cmd := engine.ClaimReviews{Role: role, Queue: w.queue, Owner: w.opts.Identity, Max: 1,
			LeaseMS: w.opts.LeaseTTL.Milliseconds(), Types: types}
		var got []engine.ClaimedReview
		var err error
		if canWait {
			got, err = waiter.ClaimReviewsWait(w.pollCtx, cmd)
		} else {
			got, err = ts.ClaimReviews(w.pollCtx, cmd)
		}
		if err != nil {
			if w.pollCtx.Err() != nil {
				return
			}
			if w.opts.OnError != nil {
				w.opts.OnError(0, fmt.Errorf("claiming %s tasks: %w", role, err))
			}
			if backoff.Sleep(w.pollCtx, bo.Next()) != nil {
				return
			}
			continue
		}
		bo.Reset()
		if len(got) == 0 {
			if backoff.Sleep(w.pollCtx, reviewPollWait) != nil {
				return
			}
			continue
		}
		for _, ct := range got {
			w.wg.Add(1)
			go func() {
				defer w.wg.Done()
				w.runReview(ts, ct)
			}()
		}
	}
}

// reviewRun is one lease of one task held by this worker: its environment
// for the work (activity.GetReviewInfo, activity.ReportCost) and its lease
// renewal.
type reviewRun struct {
	w    *queueWorker
	ts   engine.ReviewService
	ct   engine.ClaimedReview
	ref  engine.ReviewLeaseRef
	info activity.ReviewInfo

	mu      sync.Mutex
	cost    float64
	summary string
}

func (t *reviewRun) ReviewInfo() activity.ReviewInfo { return t.info }
func (t *reviewRun) AddCost(c float64) {
	t.mu.Lock()
	t.cost += c
	t.mu.Unlock()
}
func (t *reviewRun) SetSummary(s string) {
	t.mu.Lock()
	t.summary = s
	t.mu.Unlock()
}

// Info, Heartbeat, HeartbeatDetails and Logger let the work use the
// activity API as any activity does.
func (t *reviewRun) Info() activity.Info {
	return activity.Info{ActivityType: activity.Type{Name: t.ct.Type}, ActivityID: t.ct.Phase, WorkflowID: t.ct.Job,
		Step: t.ct.Phase, Attempt: int32(t.ct.Runs), TaskQueue: t.w.queue, IsLocalActivity: false,
		IdempotencyKey: fmt.Sprintf("task/%d/%d", t.ct.Review, t.ct.Attempt)}
}
func (t *reviewRun) WorkerStop() <-chan struct{} { return t.w.stop }
func (t *reviewRun) HeartbeatDetails() []byte    { return nil }
func (t *reviewRun) Logger() *slog.Logger {
	return t.w.obs.base.With("task_id", t.ct.Review, "job_id", t.ct.Job, "phase", t.ct.Phase, "attempt", t.ct.Attempt)
}

// Heartbeat renews the task's lease; a lost lease is found by the renewal
// loop too, which stops the run.
func (t *reviewRun) Heartbeat([]byte) {
	if err := t.renew(context.Background()); err != nil {
		t.Logger().Warn("task heartbeat refused", "error", err)
	}
}

// PauseFor records that the work is rate limited (RUNNING → PAUSED), waits
// d or until ctx ends while the lease goes on being renewed, and records
// the end of the pause (PAUSED → RUNNING). A person who resumed the task
// meanwhile already did the second; a lease found lost is an error.
func (t *reviewRun) PauseFor(ctx context.Context, d time.Duration) error {
	report := func(op engine.ReviewReportOp) (*engine.ReviewResult, error) {
		return t.ts.ReviewReport(context.WithoutCancel(ctx), engine.ReviewReport{ReviewLeaseRef: t.ref, Op: op})
	}
	if _, err := report(engine.ReviewReportPause); err != nil {
		return err
	}
	tm := t.w.opts.Clock.NewTimer(d)
	select {
	case <-tm.C():
	case <-ctx.Done():
		tm.Stop()
	}
	_, err := report(engine.ReviewReportUnpause)
	if errors.Is(err, engine.ErrStaleReviewAttempt) {
		// Resumed by a person (the lease is still ours, but the task is
		// RUNNING already), or the lease is lost: the next write says.
		if rerr := t.renew(context.WithoutCancel(ctx)); rerr == nil {
			err = nil
		}
	}
	if err == nil {
		err = ctx.Err()
	}
	return err
}

// renew renews the task's lease; an error means the lease is lost.
func (t *reviewRun) renew(ctx context.Context) error {
	res, err := t.ts.ReviewHeartbeat(ctx, engine.ReviewHeartbeat{Leases: []engine.ReviewLeaseRef{t.ref}, LeaseMS: t.w.opts.LeaseTTL.Milliseconds()})
	if err != nil {
		return err
	}
	if len(res.Refused) > 0 {
		return fmt.Errorf("%w: task %d attempt %d", engine.ErrStaleReviewAttempt, t.ref.Review, t.ref.Attempt)
	}
	return nil
}

// runReview does the work or the review of a claimed task under its lease,
// renewed every third of it, and reports the output or the verdict. A
// lease found lost stops the run: the engine has given the task back and
// the report would be refused.
func (w *queueWorker) runReview(ts engine.ReviewService, ct engine.ClaimedReview) {
	ctx, cancel := context.WithCancelCause(w.ctx)
	defer cancel(nil)
	t := &reviewRun{w: w, ts: ts, ct: ct, ref: ct.Lease(),
		info: activity.ReviewInfo{Review: uint64(ct.Review), Job: ct.Job, Phase: ct.Phase, Run: int(ct.Runs),
			Objective: ct.Config.Objective, Details: ct.Config.Details, AcceptanceCriteria: ct.Config.Acceptance,
			Feedback: ct.Feedback, Recommendations: ct.Assessment.Recommendations, ReviewSummary: ct.Assessment.Summary,
			PreviousOutput: ct.Output}}
	t.info.Task = t.info.Review //nolint:staticcheck // the deprecated field is filled for the code that still reads it
	go func() {
		for {
			tm := w.opts.Clock.NewTimer(w.opts.LeaseTTL / 3)
			select {
			case <-ctx.Done():
				tm.Stop()
				return
			case <-tm.C():
				if err := t.renew(ctx); errors.Is(err, engine.ErrStaleReviewAttempt) || errors.Is(err, engine.ErrUnknownReview) {
					cancel(err)
					return
				}
			}
		}
	}()
	report := engine.ReviewReport{ReviewLeaseRef: t.ref}
	report.RequestID = fmt.Sprintf("task/%d/%d/report", ct.Review, ct.Attempt)
	if ct.Role == engine.ReviewRoleWork {
		out, err := callReviewWork(context.WithValue(ctx, sdkhook.ActivityEnvKey{}, t), w.activityFn(ct.Type), ct.Config.Input, ct.Type)
		t.mu.Lock()
		report.Op, report.Output, report.Cost, report.Summary = engine.ReviewReportOutput, out, t.cost, t.summary
		t.mu.Unlock()
		if err != nil {
			// The command-driven model has no FAILED: a failed run is an
			// output like any other, and its review decides what follows.
			report.Output, report.Summary = nil, "the work failed: "+err.Error()
		}
	} else {
		fn := w.reviewer(ct.Type)
		res, err := ReviewResult{}, error(nil)
		if fn == nil {
			err = fmt.Errorf("no reviewer %q is registered", ct.Type)
		} else {
			res, err = fn(ctx, ReviewRequest{Review: ct.Review, Task: ct.Review, Job: ct.Job, Phase: ct.Phase, Config: ct.Config, Output: ct.Output, Run: int(ct.Runs)})
		}
		rv := &engine.Assessment{Verdict: engine.VerdictIntervene, Recommendations: res.Recommendations, Summary: res.Summary}
		if err != nil {
			rv.Summary = "the review failed: " + err.Error()
		} else if res.Approve {
			rv.Verdict = engine.VerdictApprove
		}
		report.Op, report.Assessment = engine.ReviewReportVerdict, rv
	}
	if context.Cause(ctx) != nil && w.ctx.Err() == nil {
		return // the lease was lost: another run has the task
	}
	if w.ctx.Err() != nil {
		return // stopping without a drain: the lease will expire
	}
	if _, err := ts.ReviewReport(context.WithoutCancel(ctx), report); err != nil && w.opts.OnError != nil {
		w.opts.OnError(0, fmt.Errorf("task %d: %w", ct.Review, err))
	}
}

// callReviewWork calls a task's work function (an activity function) with
// its input, turning a panic into an error.
func callReviewWork(ctx context.Context, fn any, input []byte, name string) (out []byte, err error) {
	if fn == nil {
		return nil, fmt.Errorf("no activity %q is registered for this task", name)
	}
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("task work %s panicked: %v", name, p)
		}
	}()
	v := reflect.ValueOf(fn)
	t := v.Type()
	if t.Kind() != reflect.Func || t.NumOut() == 0 || t.NumOut() > 2 || !t.Out(t.NumOut()-1).Implements(reflect.TypeFor[error]()) {
		return nil, fmt.Errorf("task work %s has the shape %s; it must return error or (T, error)", name, t)
	}
	var args []reflect.Value
	first := 0
	if t.NumIn() > 0 && t.In(0) == reflect.TypeFor[context.Context]() {
		args, first = append(args, reflect.ValueOf(ctx)), 1
	}
	ptrs := make([]any, 0, t.NumIn()-first)
	for i := first; i < t.NumIn(); i++ {
		p := reflect.New(t.In(i))
		ptrs = append(ptrs, p.Interface())
		args = append(args, p.Elem())
	}
	if err := converter.Decode(input, ptrs...); err != nil {
		return nil, fmt.Errorf("task work %s input: %w", name, err)
	}
	res := v.Call(args)
	if e := res[len(res)-1]; !e.IsNil() {
		return nil, e.Interface().(error)
	}
	if len(res) == 2 {
		return converter.Encode(res[0].Interface())
	}
	return nil, nil
}
