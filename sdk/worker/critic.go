package worker

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Decision is a critic's judgement of one try of an activity
// (docs/state-machines.md §3).
type Decision = engine.CriticDecision

// The critic's decisions, and the step state each leads to
// (engine.DecideNextState, the seed's decide_next_state):
//
//	Accept          SUCCEEDED
//	Retry           FAILED_RETRYABLE while retries remain, else FAILED_FATAL
//	SwitchResource  FAILED_RESOURCE: the try's resource joins the avoid-list
//	Replan          FAILED_FATAL, with an error matching workflow.ErrReplan
//	NeedsUser       NEEDS_USER: the step waits for a person's answer
//
// Anything else fails the step for good.
const (
	Accept         = engine.DecisionAccept
	Retry          = engine.DecisionRetry
	SwitchResource = engine.DecisionSwitchResource
	Replan         = engine.DecisionReplan
	NeedsUser      = engine.DecisionNeedsUser
)

// CriticInput is one try of an activity, as a critic sees it.
type CriticInput struct {
	ActivityType string
	WorkflowID   string
	Step         string
	// Attempt is the try, from 1.
	Attempt int
	// Result is what the try returned (empty when it failed), Err its
	// error (nil when it succeeded).
	Result converter.EncodedValue
	Err    error
	// Resource is the resource unit the try held ("" when none).
	Resource string
	// Answer is the answer of the person the step asked, if it did.
	Answer []byte
}

// Verdict is a critic's answer.
type Verdict struct {
	Decision Decision
	// Reason says why; it is the message of the failure recorded for a
	// retry, a switch or a replan.
	Reason string
	// Question is what a NeedsUser verdict asks the person (JSON, or text).
	Question []byte
}

// Critic judges one try of an activity named in ActivityOptions.Critic. It
// runs in the worker right after the try, on the try's goroutine, and may
// run concurrently for different steps. Its verdict is recorded with the
// step's event in the same command as the outcome it leads to, so a
// replay never calls it again; a try whose outcome was not recorded (the
// worker stopped) runs again and is judged again. An error it returns
// fails the step for good, as an unknown decision does.
type Critic func(ctx context.Context, in CriticInput) (Verdict, error)

// RegisterCritic registers a critic under name, for
// ActivityOptions.Critic. Register before Start.
func (w *queueWorker) RegisterCritic(name string, c Critic) {
	if name == "" || c == nil {
		panic("worker: RegisterCritic needs a name and a critic")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.critics == nil {
		w.critics = map[string]Critic{}
	}
	w.critics[name] = c
}

func (w *queueWorker) critic(name string) Critic {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.critics[name]
}

// next is where a try's outcome leads its step.
type next struct {
	state    engine.StepState // SUCCEEDED, FAILED_RETRYABLE, FAILED_RESOURCE, NEEDS_USER or FAILED_FATAL
	decision Decision         // the critic's, if one judged
	err      error            // the failure to record (retry, switch, fatal)
	question []byte           // what NEEDS_USER asks
}

// judge decides where try attempt of a step leads, from what it returned:
// by its critic when the options name one, else by the error's kind and
// the retry policy.
func (w *queueWorker) judge(ctx context.Context, opts workflow.ActivityOptions, in CriticInput, policy *workflow.RetryPolicy) next {
	if opts.Critic == "" {
		return byError(in.Err, in.Resource, in.Attempt, policy)
	}
	c := w.critic(opts.Critic)
	if c == nil {
		return next{state: engine.StepFailedFatal, err: workflow.NewApplicationError(
			fmt.Sprintf("critic %q is not registered on this worker", opts.Critic), "CriticNotRegistered", true)}
	}
	v, err := callCritic(ctx, c, in)
	if err != nil {
		return next{state: engine.StepFailedFatal, err: workflow.NewApplicationError(
			fmt.Sprintf("critic %q failed: %v", opts.Critic, err), "CriticError", true)}
	}
	n := next{decision: v.Decision, question: v.Question}
	n.state = engine.DecideNextState(v.Decision, in.Attempt-1, maxRetries(policy))
	reason := v.Reason
	if reason == "" {
		reason = fmt.Sprintf("critic %q decided %s", opts.Critic, v.Decision)
	}
	switch n.state {
	case engine.StepSucceeded:
		return n
	case engine.StepFailedResource:
		if in.Resource == "" {
			// Nothing to switch away from: the decision is a retry.
			n.state = engine.DecideNextState(Retry, in.Attempt-1, maxRetries(policy))
		}
		n.err = errors.New(reason)
	case engine.StepNeedsUser:
		if len(n.question) == 0 {
			n.question = []byte(reason)
		}
	case engine.StepFailedFatal:
		switch v.Decision {
		case Replan:
			n.err = workflow.NewApplicationError(reason, workflow.ReplanErrorType, true)
		case Retry:
			n.err = workflow.NewApplicationError(fmt.Sprintf("%s, with no retries left after attempt %d", reason, in.Attempt), "RetriesExhausted", true)
		default:
			// Not a decision: the engine records none, and the error says
			// what the critic answered.
			n.decision = ""
			n.err = workflow.NewApplicationError(fmt.Sprintf("critic %q decided %q, not a decision", opts.Critic, v.Decision), "CriticError", true)
		}
		return n
	}
	if n.err == nil {
		n.err = errors.New(reason)
	}
	return n
}

// callCritic runs c, turning a panic into an error.
func callCritic(ctx context.Context, c Critic, in CriticInput) (v Verdict, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("critic panicked: %v", p)
		}
	}()
	return c(ctx, in)
}

// byError decides where a try leads without a critic: a result succeeds;
// a ResourceError of a try that held a resource switches it; a
// NeedsUserError asks a person; a retryable error with attempts left is
// retried; anything else fails the step.
func byError(err error, resource string, attempt int, policy *workflow.RetryPolicy) next {
	var re *activity.ResourceError
	var nu *activity.NeedsUserError
	switch {
	case err == nil:
		return next{state: engine.StepSucceeded}
	case errors.As(err, &nu):
		return next{state: engine.StepNeedsUser, question: nu.Question, err: err}
	case errors.As(err, &re) && resource != "":
		return next{state: engine.StepFailedResource, err: err}
	case retryable(err, policy) && policy.HasAttemptsLeft(attempt):
		return next{state: engine.StepFailedRetryable, err: err}
	}
	return next{state: engine.StepFailedFatal, err: err}
}

// maxRetries is the seed's max_retries of a policy: its attempts less the
// first, unbounded when it sets none.
func maxRetries(p *workflow.RetryPolicy) int {
	if p == nil || p.MaximumAttempts == 0 {
		return math.MaxInt
	}
	return int(p.MaximumAttempts) - 1
}
