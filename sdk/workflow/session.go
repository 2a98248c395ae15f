package workflow

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/sdk/temporal"
)

// Session errors, matched with errors.Is.
var (
	// ErrSessionFailed is what an activity executed with the context of a
	// failed session returns, without being scheduled: the session's worker
	// died, stopped, or lost its lease on the session.
	ErrSessionFailed = errors.New("session has failed")
	// ErrSessionOpen: CreateSession (or RecreateSession) was given a context
	// that already holds an open session.
	ErrSessionOpen = errors.New("workflow: the context already holds an open session")
)

// SessionState says whether a session can still run activities.
type SessionState int

// Session states, Temporal's values.
const (
	// SessionStateOpen: the session's worker holds it; its activities run
	// there.
	SessionStateOpen SessionState = iota
	// SessionStateFailed: the session's worker died or stopped; the
	// session's context is cancelled and its activities fail.
	SessionStateFailed
	// SessionStateClosed: CompleteSession ended it; activities of its
	// context are scheduled as if it had none.
	SessionStateClosed
)

// String names the state.
func (s SessionState) String() string {
	switch s {
	case SessionStateOpen:
		return "Open"
	case SessionStateFailed:
		return "Failed"
	case SessionStateClosed:
		return "Closed"
	}
	return fmt.Sprintf("SessionState(%d)", int(s))
}

// defaultSessionHeartbeatTimeout is SessionOptions.HeartbeatTimeout when 0,
// Temporal's default.
const defaultSessionHeartbeatTimeout = 20 * time.Second

// SessionOptions bound a session, as in Temporal.
type SessionOptions struct {
	// ExecutionTimeout bounds how long the session may stay open; when it
	// passes, the session fails. Required.
	ExecutionTimeout time.Duration
	// CreationTimeout bounds the wait for a worker to accept the session
	// (one with Options.EnableSessionWorker and a free session slot); when
	// it passes, CreateSession returns an error that temporal.IsTimeoutError
	// recognises. Required: 0 waits without bound.
	CreationTimeout time.Duration
	// HeartbeatTimeout is the longest gap between two heartbeats of the
	// session's worker; 0 means 20 s. (A worker that dies is noticed when
	// its lease on the session runs out, worker.Options.LeaseTTL.)
	HeartbeatTimeout time.Duration
}

// SessionInfo describes the session a context holds. Its SessionState is
// the workflow's view: it changes when the workflow learns that the session
// failed or when CompleteSession closes it.
type SessionInfo struct {
	// SessionID names the session uniquely; it is derived from the run and
	// the step of the session's creation, so it is the same on replay.
	SessionID string
	// HostName is the host name of the worker that runs the session.
	HostName string
	// SessionState is the session's state as the workflow knows it.
	SessionState SessionState

	taskQueue     string     // the queue only the session's worker claims from
	cancel        CancelFunc // cancels the session's context and its creation activity
	completionCtx Context    // the context, not cancelled by cancel, that completes the session
}

// recreateToken is what GetRecreateToken encodes.
type recreateToken struct {
	TaskQueue string `json:"taskQueue"`
}

// GetRecreateToken returns the token RecreateSession takes to open a new
// session on the same worker.
func (s *SessionInfo) GetRecreateToken() []byte {
	b, _ := json.Marshal(recreateToken{TaskQueue: s.taskQueue})
	return b
}

type sessionInfoKey struct{}

// GetSessionInfo returns the session ctx holds (the newest, when sessions
// were created one after another on the same context), or nil.
func GetSessionInfo(ctx Context) *SessionInfo {
	info, _ := ctx.Value(sessionInfoKey{}).(*SessionInfo)
	return info
}

// CreateSession opens a session: a worker of the task queue of ctx's
// activity options (the workflow's own queue when they name none) that has
// sessions enabled accepts it, and every activity executed with the
// returned context runs on that worker until the session ends. It waits
// up to options.CreationTimeout for a worker with a free session slot
// (worker.Options.MaxConcurrentSessionExecutionSize); when none comes, the
// error is a timeout (temporal.IsTimeoutError). A ctx that already holds an
// open session gives ErrSessionOpen.
//
// The returned context is cancelled when the session fails (its worker
// died or stopped: SessionState becomes SessionStateFailed) and when
// CompleteSession is called; the activities running with it are cancelled
// then too. An activity executed with the context of a failed session
// returns ErrSessionFailed at once.
func CreateSession(ctx Context, options *SessionOptions) (Context, error) {
	queue := GetActivityOptions(ctx).TaskQueue
	if queue == "" {
		queue = stateOf(ctx).info.TaskQueue
	}
	return createSession(ctx, queue+sdkhook.SessionCreationQueueSuffix, options)
}

// RecreateSession opens a new session on the worker of the session whose
// SessionInfo.GetRecreateToken gave token (in this run or an earlier one,
// for long sessions split by continue-as-new). It fails as CreateSession
// does, and for a token it cannot read.
func RecreateSession(ctx Context, token []byte, options *SessionOptions) (Context, error) {
	var tok recreateToken
	if err := json.Unmarshal(token, &tok); err != nil {
		return nil, fmt.Errorf("workflow: RecreateSession: the recreate token cannot be read: %w", err)
	}
	if tok.TaskQueue == "" {
		return nil, errors.New("workflow: RecreateSession: the recreate token names no task queue")
	}
	return createSession(ctx, tok.TaskQueue, options)
}

// createSession runs the creation activity on creationQueue and waits for
// either the signal of the worker that accepted it or the activity's end
// (it could not start in time).
func createSession(ctx Context, creationQueue string, options *SessionOptions) (Context, error) {
	switch {
	case options == nil:
		return nil, errors.New("workflow: CreateSession: the SessionOptions are nil")
	case options.ExecutionTimeout <= 0:
		return nil, fmt.Errorf("workflow: CreateSession: SessionOptions.ExecutionTimeout %v must be positive", options.ExecutionTimeout)
	case options.CreationTimeout < 0 || options.HeartbeatTimeout < 0:
		return nil, fmt.Errorf("workflow: CreateSession: SessionOptions.CreationTimeout %v and HeartbeatTimeout %v must not be negative",
			options.CreationTimeout, options.HeartbeatTimeout)
	}
	if prev := GetSessionInfo(ctx); prev != nil && prev.SessionState == SessionStateOpen {
		return nil, ErrSessionOpen
	}
	heartbeat := options.HeartbeatTimeout
	if heartbeat == 0 {
		heartbeat = defaultSessionHeartbeatTimeout
	}
	info := &SessionInfo{SessionState: SessionStateOpen}
	completionCtx := WithValue(ctx, sessionInfoKey{}, info)
	info.completionCtx = completionCtx
	sessionCtx, cancel := WithCancel(completionCtx)
	// The creation activity runs for as long as the session: it may start
	// within CreationTimeout, lives at most ExecutionTimeout, and is not
	// retried (its worker is the session; another cannot take its place).
	creationCtx := WithActivityOptions(sessionCtx, ActivityOptions{
		TaskQueue:              creationQueue,
		ScheduleToStartTimeout: options.CreationTimeout,
		StartToCloseTimeout:    options.ExecutionTimeout,
		HeartbeatTimeout:       heartbeat,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	// The session id is drawn once and recorded, as Temporal's is, so a
	// replay finds the same one.
	if err := SideEffect(ctx, func(Context) any { return newSessionID() }).Get(&info.SessionID); err != nil {
		cancel()
		return nil, err
	}
	// The worker that accepts the session signals its queue under the
	// session's id, as Temporal's does.
	signals := GetSignalChannel(ctx, info.SessionID)
	created := ExecuteActivity(creationCtx, sdkhook.SessionCreationActivity, info.SessionID)

	var resp sdkhook.SessionCreated
	var creationErr error
	s := NewSelector(ctx)
	s.AddReceive(signals, func(c ReceiveChannel, _ bool) { c.Receive(ctx, &resp) })
	s.AddFuture(created, func(f Future) {
		// The activity ended: it could not start in time, or was refused;
		// or (in the test environment) it ended once it had signalled.
		if creationErr = f.Get(ctx, nil); creationErr == nil && !signals.ReceiveAsync(&resp) {
			creationErr = errors.New("workflow: CreateSession: the session ended before it was created")
		}
	})
	s.Select(ctx)
	if creationErr == nil && ctx.Err() != nil {
		creationErr = ctx.Err()
	}
	if creationErr != nil {
		cancel()
		return nil, creationErr
	}
	info.taskQueue, info.HostName, info.cancel = resp.TaskQueue, resp.HostName, cancel
	Go(completionCtx, func(c Context) {
		// The creation activity ends when the session does: a cancellation
		// is CompleteSession's doing; anything else means the worker is
		// gone, and the session fails.
		err := created.Get(c, nil)
		if err == nil || temporal.IsCanceledError(err) || info.SessionState != SessionStateOpen {
			return
		}
		info.SessionState = SessionStateFailed
		cancel()
	})
	return sessionCtx, nil
}

// CompleteSession ends the session ctx holds and frees its worker's
// session slot: the session's context is cancelled (and so are the
// activities still running with it), and the workflow waits briefly for the
// worker to confirm. A ctx with no open session is left alone. Activities
// executed later with ctx are scheduled as if it held no session.
func CompleteSession(ctx Context) {
	info := GetSessionInfo(ctx)
	if info == nil || info.SessionState != SessionStateOpen {
		return
	}
	info.cancel()
	done := WithActivityOptions(info.completionCtx, ActivityOptions{
		ScheduleToStartTimeout: 3 * time.Second,
		StartToCloseTimeout:    3 * time.Second,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	// A failure is not the workflow's: the worker frees the slot anyway
	// once the cancellation reaches it, or the session's lease runs out.
	_ = ExecuteActivity(done, sdkhook.SessionCompletionActivity, info.SessionID).Get(done, nil)
	info.SessionState = SessionStateClosed
}

// sessionActivityOptions routes an activity of ctx's session: to the
// session's queue while it is open; a failed session's activities fail
// with ErrSessionFailed.
func sessionActivityOptions(ctx Context, name any, opts ActivityOptions) (ActivityOptions, error) {
	info := GetSessionInfo(ctx)
	if info == nil || name == sdkhook.SessionCreationActivity {
		return opts, nil
	}
	switch info.SessionState {
	case SessionStateFailed:
		return opts, ErrSessionFailed
	case SessionStateOpen:
		opts.TaskQueue = info.taskQueue
	}
	return opts, nil
}

// newSessionID returns 16 random bytes in the form of a UUID.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
