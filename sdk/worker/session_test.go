package worker_test

// Worker sessions (workflow.CreateSession) against the real engine: two
// workers serve one queue, and the activities of a session all run on the
// worker that accepted it; a full worker makes CreateSession wait, up to its
// CreationTimeout; a worker that dies or stops fails its sessions.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// SessionActs are the activities of the session tests; each worker
// registers its own, named after the worker, so an activity's result says
// where it ran.
type SessionActs struct{ Who string }

// Where returns the worker that ran it and the queue it was claimed from.
func (a *SessionActs) Where(ctx context.Context) (string, error) {
	return a.Who + " " + activity.GetInfo(ctx).TaskQueue, nil
}

// sessionHolds tells a test which worker runs a Hold of its key.
var sessionHolds sync.Map // key -> chan string

// Hold reports its worker on its key's channel, then runs until cancelled.
func (a *SessionActs) Hold(ctx context.Context, key string) error {
	if ch, ok := sessionHolds.Load(key); ok {
		ch.(chan string) <- a.Who
	}
	<-ctx.Done()
	return ctx.Err()
}

func sessionOptions() *workflow.SessionOptions {
	return &workflow.SessionOptions{CreationTimeout: 20 * time.Second, ExecutionTimeout: time.Minute, HeartbeatTimeout: 3 * time.Second}
}

func sessionActivityOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
}

// SessionWhere runs Where n times in one session and returns where each
// ran, with the session's host.
func SessionWhere(ctx workflow.Context, n int) ([]string, error) {
	sctx, err := workflow.CreateSession(sessionActivityOptions(ctx), sessionOptions())
	if err != nil {
		return nil, err
	}
	defer workflow.CompleteSession(sctx)
	var out []string
	var a *SessionActs
	for range n {
		var where string
		if err := workflow.ExecuteActivity(sctx, a.Where).Get(sctx, &where); err != nil {
			return nil, err
		}
		out = append(out, where)
	}
	return append(out, "host="+workflow.GetSessionInfo(sctx).HostName), nil
}

// SessionRecreated opens a session, runs Where in it, completes it, and
// recreates it from its token: the second session's activity runs on the
// same worker.
func SessionRecreated(ctx workflow.Context) ([]string, error) {
	ctx = sessionActivityOptions(ctx)
	var a *SessionActs
	first, err := workflow.CreateSession(ctx, sessionOptions())
	if err != nil {
		return nil, err
	}
	var w1, w2 string
	if err := workflow.ExecuteActivity(first, a.Where).Get(first, &w1); err != nil {
		return nil, err
	}
	token := workflow.GetSessionInfo(first).GetRecreateToken()
	workflow.CompleteSession(first)
	second, err := workflow.RecreateSession(ctx, token, sessionOptions())
	if err != nil {
		return nil, err
	}
	defer workflow.CompleteSession(second)
	if err := workflow.ExecuteActivity(second, a.Where).Get(second, &w2); err != nil {
		return nil, err
	}
	if workflow.GetSessionInfo(second).SessionID == workflow.GetSessionInfo(first).SessionID {
		return nil, errors.New("the recreated session has the first one's id")
	}
	return []string{w1, w2}, nil
}

// CompleteSession gives the session's slot back before it returns, as
// Temporal's does: a session recreated at once on a worker with one slot
// finds it free, even while the first session's creation activity has not
// returned yet (held here until the run ends).
func TestRecreatedSessionFindsTheCompletedOnesSlot(t *testing.T) {
	release := worker.HoldCompletedSessions()
	defer release()
	e := open(t)
	queue := "sess-slot-back"
	w := sessionWorker(t, service(t, e), queue, "A", worker.Options{MaxConcurrentSessionExecutionSize: 1})
	t.Cleanup(func() { release(); stopOK(t, w) })
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: queue, TaskQueue: queue}, SessionRecreated)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := r.Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != got[1] {
		t.Fatalf("the sessions ran at %q, want both at one worker's session queue", got)
	}
}

// A session recreated from another's token runs on the same worker.
func TestSessionRecreatedOnTheSameWorker(t *testing.T) {
	forEachCache(t, testSessionRecreatedOnTheSameWorker)
}

func testSessionRecreatedOnTheSameWorker(t *testing.T, cache int) {
	e := open(t)
	queue := fmt.Sprintf("sess-again-%d", -cache)
	for _, who := range []string{"A", "B"} {
		w := sessionWorker(t, service(t, e), queue, who, worker.Options{CacheSize: cache, MaxConcurrentSessionExecutionSize: 1})
		t.Cleanup(func() { stopOK(t, w) })
	}
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 3 {
		r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("%s-%d", queue, i), TaskQueue: queue}, SessionRecreated)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		if err := r.Get(ctx, &got); err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0] != got[1] || !strings.Contains(got[0], queue+"@") {
			t.Fatalf("run %d: the sessions ran at %q, want both at one worker's session queue", i, got)
		}
	}
	verify(t, e)
}

// SessionMisuse checks what CreateSession and RecreateSession refuse, in
// order, and returns one line per check that did not hold.
func SessionMisuse(ctx workflow.Context) ([]string, error) {
	ctx = sessionActivityOptions(ctx)
	var bad []string
	check := func(what string, ok bool) {
		if !ok {
			bad = append(bad, what)
		}
	}
	_, err := workflow.CreateSession(ctx, nil)
	check("nil options refused", err != nil)
	_, err = workflow.CreateSession(ctx, &workflow.SessionOptions{CreationTimeout: time.Second})
	check("no ExecutionTimeout refused", err != nil)
	_, err = workflow.CreateSession(ctx, &workflow.SessionOptions{ExecutionTimeout: time.Minute, CreationTimeout: -time.Second})
	check("a negative CreationTimeout refused", err != nil)
	_, err = workflow.RecreateSession(ctx, []byte("not json"), sessionOptions())
	check("an unreadable token refused", err != nil)
	_, err = workflow.RecreateSession(ctx, []byte("{}"), sessionOptions())
	check("a token without a queue refused", err != nil)
	check("no session info without a session", workflow.GetSessionInfo(ctx) == nil)
	workflow.CompleteSession(ctx) // no session: nothing to do
	open, err := workflow.CreateSession(ctx, sessionOptions())
	if err != nil {
		return nil, err
	}
	_, err = workflow.CreateSession(open, sessionOptions())
	check("a second session on an open one's context refused", errors.Is(err, workflow.ErrSessionOpen))
	info := workflow.GetSessionInfo(open)
	check("an open session's info", info != nil && info.SessionState == workflow.SessionStateOpen && info.SessionID != "")
	workflow.CompleteSession(open)
	check("closed after CompleteSession", info.SessionState == workflow.SessionStateClosed && open.Err() != nil)
	return bad, nil
}

// CreateSession refuses options it cannot use, a context with an open
// session, and RecreateSession tokens it cannot read.
func TestSessionMisuseIsRefused(t *testing.T) {
	e := open(t)
	queue := "sess-misuse"
	w := sessionWorker(t, service(t, e), queue, "A", worker.Options{})
	t.Cleanup(func() { stopOK(t, w) })
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: queue, TaskQueue: queue}, SessionMisuse)
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	if err := r.Get(ctx, &bad); err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Fatalf("checks that did not hold: %q", bad)
	}
}

// sessionWorker starts a worker of queue with sessions enabled, named who.
func sessionWorker(t *testing.T, svc engine.Service, queue, who string, opts worker.Options) worker.Worker {
	t.Helper()
	opts.EnableSessionWorker = true
	opts.Identity = who
	w := worker.New(client.New(svc), queue, opts)
	w.RegisterWorkflow(SessionWhere)
	w.RegisterWorkflow(SessionSlots)
	w.RegisterWorkflow(SessionLost)
	w.RegisterWorkflow(SessionRecreated)
	w.RegisterWorkflow(SessionMisuse)
	w.RegisterActivity(&SessionActs{Who: who})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	return w
}

// Every activity of a session runs on the worker that accepted it, from
// the queue only that worker claims, though two workers serve the queue;
// with the workflow cache off the runs replay the same way.
func TestSessionActivitiesRunOnOneWorker(t *testing.T) {
	forEachCache(t, testSessionActivitiesRunOnOneWorker)
}

func testSessionActivitiesRunOnOneWorker(t *testing.T, cache int) {
	e := open(t)
	queue := fmt.Sprintf("sess-one-%d", -cache)
	for _, who := range []string{"A", "B"} {
		w := sessionWorker(t, service(t, e), queue, who, worker.Options{CacheSize: cache})
		t.Cleanup(func() { stopOK(t, w) })
	}
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var runs []client.WorkflowRun
	for i := range 4 {
		r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("%s-%d", queue, i), TaskQueue: queue}, SessionWhere, 4)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	for _, r := range runs {
		var got []string
		if err := r.Get(ctx, &got); err != nil {
			t.Fatalf("%s: %v", r.GetID(), err)
		}
		replaySession(t, c, SessionWhere, r.GetID(), r.GetRunID())
		if len(got) != 5 || !strings.HasPrefix(got[4], "host=") || got[4] == "host=" {
			t.Fatalf("%s: %q, want 4 places and the host", r.GetID(), got)
		}
		who, q, _ := strings.Cut(got[0], " ")
		if who != "A" && who != "B" || !strings.HasPrefix(q, queue+"@") {
			t.Fatalf("%s: first activity ran as %q, want worker A or B on a session queue of %s", r.GetID(), got[0], queue)
		}
		for _, g := range got[1:4] {
			if g != got[0] {
				t.Fatalf("%s: the session's activities ran at %q, want all at %q", r.GetID(), got, got[0])
			}
		}
	}
	verify(t, e)
}

// SessionSlots opens one session, then asks for a second on a worker that
// has only one slot: it times out after its CreationTimeout. A third waits
// while the first is open and gets the slot once CompleteSession frees it.
func SessionSlots(ctx workflow.Context) (string, error) {
	ctx = sessionActivityOptions(ctx)
	first, err := workflow.CreateSession(ctx, sessionOptions())
	if err != nil {
		return "", err
	}
	short := *sessionOptions()
	short.CreationTimeout = time.Second
	_, err = workflow.CreateSession(ctx, &short)
	var timeout *temporal.TimeoutError
	if !temporal.IsTimeoutError(err) || !errors.As(err, &timeout) || timeout.TimeoutType() != temporal.TimeoutTypeScheduleToStart {
		return "", fmt.Errorf("a second session on a full worker: %v, want a schedule-to-start timeout", err)
	}
	completed := workflow.NewChannel(ctx)
	workflow.Go(ctx, func(ctx workflow.Context) {
		_ = workflow.Sleep(ctx, time.Second)
		workflow.CompleteSession(first)
		completed.Send(ctx, true)
	})
	third, err := workflow.CreateSession(ctx, sessionOptions())
	if err != nil {
		return "", fmt.Errorf("a session after the first completed: %v", err)
	}
	defer workflow.CompleteSession(third)
	completed.Receive(ctx, nil)
	if s := workflow.GetSessionInfo(first).SessionState; s != workflow.SessionStateClosed {
		return "", fmt.Errorf("the first session is %s after CompleteSession, want Closed", s)
	}
	if first.Err() == nil {
		return "", errors.New("the completed session's context is not cancelled")
	}
	var a *SessionActs
	var where string
	err = workflow.ExecuteActivity(third, a.Where).Get(third, &where)
	return where, err
}

// MaxConcurrentSessionExecutionSize bounds the sessions open on a worker:
// a CreateSession beyond it waits, and fails after its CreationTimeout
// with a timeout; CompleteSession frees the slot for the next.
func TestSessionSlotsBoundOpenSessions(t *testing.T) {
	forEachCache(t, testSessionSlotsBoundOpenSessions)
}

func testSessionSlotsBoundOpenSessions(t *testing.T, cache int) {
	e := open(t)
	queue := fmt.Sprintf("sess-slots-%d", -cache)
	w := sessionWorker(t, service(t, e), queue, "A", worker.Options{CacheSize: cache, MaxConcurrentSessionExecutionSize: 1})
	t.Cleanup(func() { stopOK(t, w) })
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: queue, TaskQueue: queue}, SessionSlots)
	if err != nil {
		t.Fatal(err)
	}
	var where string
	if err := r.Get(ctx, &where); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(where, "A "+queue+"@") {
		t.Fatalf("the third session's activity ran as %q", where)
	}
	verify(t, e)
}

// SessionLost holds an activity in a session until the session fails, then
// reports what the workflow sees.
func SessionLost(ctx workflow.Context, key string) (string, error) {
	sctx, err := workflow.CreateSession(sessionActivityOptions(ctx), sessionOptions())
	if err != nil {
		return "", err
	}
	var a *SessionActs
	holdErr := workflow.ExecuteActivity(sctx, a.Hold, key).Get(sctx, nil)
	state := workflow.GetSessionInfo(sctx).SessionState
	nextErr := workflow.ExecuteActivity(sctx, a.Where).Get(sctx, nil)
	workflow.CompleteSession(sctx) // a failed session: nothing to do
	return fmt.Sprintf("state=%s ctxDone=%t holdCanceled=%t next=%v", state, sctx.Err() != nil,
		temporal.IsCanceledError(holdErr), nextErr), nil
}

// cutService is a worker's view of the engine that a test can cut, as if
// the worker's process died: from then on no call reaches the engine.
type cutService struct {
	engine.Service
	cut atomic.Bool
}

var errCut = errors.New("the worker's process is gone")

func (s *cutService) check(ctx context.Context) error {
	if !s.cut.Load() {
		return nil
	}
	// A dead process makes no calls: hold the caller rather than let it
	// spin on errors.
	select {
	case <-ctx.Done():
	case <-time.After(50 * time.Millisecond):
	}
	return errCut
}

func (s *cutService) ClaimWait(ctx context.Context, c engine.Claim) ([]engine.ClaimedJob, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	return s.Service.ClaimWait(ctx, c)
}

func (s *cutService) Heartbeat(ctx context.Context, c engine.Heartbeat) (*engine.HeartbeatResult, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	return s.Service.Heartbeat(ctx, c)
}

func (s *cutService) StepHeartbeat(ctx context.Context, c engine.StepHeartbeat) (*engine.StepResult, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	return s.Service.StepHeartbeat(ctx, c)
}

func (s *cutService) Append(ctx context.Context, c engine.AppendEvents) (*engine.AppendResult, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	return s.Service.Append(ctx, c)
}

func (s *cutService) CommitStep(ctx context.Context, c engine.CommitStep) (*engine.AppendResult, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	return s.Service.CommitStep(ctx, c)
}

func (s *cutService) Wait(ctx context.Context, c engine.Wait) (*engine.WaitResult, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	return s.Service.Wait(ctx, c)
}

func (s *cutService) Complete(ctx context.Context, c engine.Complete) (*engine.StatusResult, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	return s.Service.Complete(ctx, c)
}

func (s *cutService) Fail(ctx context.Context, c engine.Fail) (*engine.StatusResult, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	return s.Service.Fail(ctx, c)
}

func (s *cutService) Requeue(ctx context.Context, c engine.Requeue) (*engine.StatusResult, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	return s.Service.Requeue(ctx, c)
}

// A session fails when its worker dies (its lease on the session runs out)
// or stops: the workflow's activity in it is cancelled, the session's state
// is Failed, its context done, and the next activity in it fails with
// ErrSessionFailed without being scheduled. The other worker goes on with
// the workflow.
func TestSessionFailsWhenItsWorkerGoes(t *testing.T) {
	for _, how := range []string{"dies", "stops"} {
		for _, cache := range []int{0, -1} {
			t.Run(fmt.Sprintf("%s/cache=%d", how, cache), func(t *testing.T) { testSessionFailsWhenItsWorkerGoes(t, how, cache) })
		}
	}
}

func testSessionFailsWhenItsWorkerGoes(t *testing.T, how string, cache int) {
	e := open(t)
	queue := fmt.Sprintf("sess-lost-%s-%d", how, -cache)
	key := queue
	holds := make(chan string, 4)
	sessionHolds.Store(key, holds)
	t.Cleanup(func() { sessionHolds.Delete(key) })
	svcs := map[string]*cutService{}
	workers := map[string]worker.Worker{}
	for _, who := range []string{"A", "B"} {
		svcs[who] = &cutService{Service: service(t, e)}
		workers[who] = sessionWorker(t, svcs[who], queue, who,
			worker.Options{CacheSize: cache, LeaseTTL: 600 * time.Millisecond, WorkerStopTimeout: 3 * time.Second})
	}
	c := client.New(service(t, e))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: key, TaskQueue: queue}, SessionLost, key)
	if err != nil {
		t.Fatal(err)
	}
	var host string
	select {
	case host = <-holds:
	case <-ctx.Done():
		t.Fatal("the session's activity did not start")
	}
	other := map[string]string{"A": "B", "B": "A"}[host]
	t.Cleanup(func() { stopOK(t, workers[other]) })
	switch how {
	case "dies":
		svcs[host].cut.Store(true)
		// The dead worker's goroutines are ended only after the test.
		t.Cleanup(func() {
			sctx, scancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer scancel()
			_ = workers[host].Shutdown(sctx)
		})
	case "stops":
		workers[host].Stop()
	}
	var got string
	if err := r.Get(ctx, &got); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("state=Failed ctxDone=true holdCanceled=true next=%v", workflow.ErrSessionFailed)
	if got != want {
		t.Fatalf("after the session's worker %s: %q, want %q", how, got, want)
	}
	replaySession(t, c, SessionLost, key, r.GetRunID())
	// The session's creation task ended as the worker's going says: a
	// dead worker's by its lease running out, a stopping one's by its
	// own failure.
	page, err := e.List(ctx, engine.ListQuery{Queue: queue + "__internal_session_creation"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus := map[string]engine.Status{"dies": engine.StatusTimedOut, "stops": engine.StatusFailed}[how]
	if len(page.Jobs) != 1 || page.Jobs[0].Status != wantStatus {
		t.Fatalf("creation tasks %+v, want one %s", page.Jobs, wantStatus)
	}
	if how == "dies" {
		hist, err := e.History(ctx, page.Jobs[0].ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if last := hist.Events[len(hist.Events)-1]; last.Type != engine.EventJobTimedOut || last.Reason != engine.ReasonLeaseExpired {
			t.Fatalf("the dead worker's creation task ended with %+v", last)
		}
	}
	verify(t, e)
}

// replaySession replays a finished run's history with the workflow's code
// in a replayer, which has no workers: the session's path (its side
// effect, signal, activities and, for a failed one, the creation task's
// failure) must come out of the history alone.
func replaySession(t *testing.T, c client.Client, wf any, id, runID string) {
	t.Helper()
	hist, err := c.GetWorkflowHistory(context.Background(), id, runID)
	if err != nil {
		t.Fatal(err)
	}
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflow(wf)
	if err := r.ReplayWorkflowHistory(nil, hist); err != nil {
		t.Fatalf("replaying %s: %v", id, err)
	}
}
