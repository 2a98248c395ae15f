package testsuite_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/suite"

	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/testsuite"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// The features of the environment, written as a Temporal user writes
// them: a testify suite that embeds testsuite.WorkflowTestSuite, a fresh
// environment per test, and the mocks' expectations checked after each.

type UnitTestSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env *testsuite.TestWorkflowEnvironment
}

func (s *UnitTestSuite) SetupTest() { s.env = s.NewTestWorkflowEnvironment() }

func (s *UnitTestSuite) AfterTest(string, string) { s.env.AssertExpectations(s.T()) }

func TestUnitTestSuite(t *testing.T) { suite.Run(t, new(UnitTestSuite)) }

var start = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// Greet is a real activity.
func Greet(_ context.Context, name string) (string, error) { return "hello " + name, nil }

// Farewell is another, which the tests mock.
func Farewell(_ context.Context, name string) (string, error) { return "bye " + name, nil }

// Notify returns only an error.
func Notify(_ context.Context, msg string) error { return nil }

func actCtx(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &workflow.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3}})
}

// Day sleeps a day, then greets and says farewell, reporting the workflow
// time it saw at each point.
func Day(ctx workflow.Context, name string) (string, error) {
	t0 := workflow.Now(ctx)
	if err := workflow.Sleep(ctx, 24*time.Hour); err != nil {
		return "", err
	}
	t1 := workflow.Now(ctx)
	var hi, bye string
	if err := workflow.ExecuteActivity(actCtx(ctx), Greet, name).Get(ctx, &hi); err != nil {
		return "", err
	}
	if err := workflow.ExecuteActivity(actCtx(ctx), Farewell, name).Get(ctx, &bye); err != nil {
		return "", err
	}
	t2 := workflow.Now(ctx)
	return fmt.Sprintf("%s, %s; slept %v, activities took %v", hi, bye, t1.Sub(t0), t2.Sub(t1)), nil
}

// A day of sleep passes at once, to the millisecond, and instant
// activities take no workflow time.
func (s *UnitTestSuite) TestTimeSkipping() {
	s.env.SetStartTime(start)
	s.env.RegisterActivity(Greet)
	s.env.RegisterActivity(Farewell)
	began := time.Now()
	s.env.ExecuteWorkflow(Day, "ann")
	wall := time.Since(began)
	s.True(s.env.IsWorkflowCompleted())
	var got string
	s.NoError(s.env.GetWorkflowResult(&got))
	s.Equal("hello ann, bye ann; slept 24h0m0s, activities took 0s", got)
	s.T().Logf("a day of workflow time took %v of real time", wall)
	s.Less(wall, time.Second, "a day of workflow time took %v of real time", wall)
	s.Equal(start.Add(24*time.Hour), s.env.Now())
}

// Return gives values, a function of the activity's type replaces it, and
// an unmocked activity runs its real code.
func (s *UnitTestSuite) TestActivityMocks() {
	s.env.RegisterActivity(Greet)
	s.env.OnActivity(Farewell, mock.Anything, "ann").Return("so long ann", nil).Once()
	s.env.ExecuteWorkflow(Day, "ann")
	var got string
	s.NoError(s.env.GetWorkflowResult(&got))
	s.True(strings.HasPrefix(got, "hello ann, so long ann;"), got)

	env := s.NewTestWorkflowEnvironment()
	env.OnActivity(Greet, mock.Anything, mock.Anything).Return(func(_ context.Context, name string) (string, error) {
		return "hi " + strings.ToUpper(name), nil
	})
	env.RegisterActivity(Farewell)
	env.OnActivity("Farewell", mock.Anything, "bob").Return("ciao bob", nil)
	env.ExecuteWorkflow(Day, "bob")
	s.NoError(env.GetWorkflowResult(&got))
	s.True(strings.HasPrefix(got, "hi BOB, ciao bob;"), got)
	env.AssertActivityNumberOfCalls(s.T(), "Greet", 1)
	env.AssertActivityCalled(s.T(), "Farewell", mock.Anything, "bob")
	env.AssertExpectations(s.T())
}

// A mocked activity's error reaches the workflow through the activity's
// retry policy: Times bounds the matches, and the expectation that follows
// answers the retry.
func (s *UnitTestSuite) TestMockedErrorIsRetried() {
	s.env.RegisterActivity(Greet)
	s.env.OnActivity(Farewell, mock.Anything, "ann").Return("", errors.New("mail server down")).Twice()
	s.env.OnActivity(Farewell, mock.Anything, "ann").Return("bye at last", nil).Once()
	s.env.ExecuteWorkflow(Day, "ann")
	var got string
	s.NoError(s.env.GetWorkflowResult(&got))
	// The retries waited 1 s each of workflow time (skipped): in a test
	// environment a retry policy's MaximumInterval defaults to its
	// InitialInterval, as in Temporal's.
	s.Equal("hello ann, bye at last; slept 24h0m0s, activities took 2s", got)
	s.env.AssertActivityNumberOfCalls(s.T(), "Farewell", 3)
}

// A call no expectation matches, a Never expectation called, and a Return
// that does not fit the activity each fail the activity for good, with
// type MockErrorType.
func (s *UnitTestSuite) TestMockMisuseFailsTheActivity() {
	for name, setup := range map[string]func(env *testsuite.TestWorkflowEnvironment){
		"unmatched": func(env *testsuite.TestWorkflowEnvironment) {
			env.OnActivity(Greet, mock.Anything, "somebody else").Return("?", nil).Maybe()
		},
		"never": func(env *testsuite.TestWorkflowEnvironment) { env.OnActivity(Greet, mock.Anything, "ann").Never() },
		"wrong type": func(env *testsuite.TestWorkflowEnvironment) {
			env.OnActivity(Greet, mock.Anything, "ann").Return(42, nil)
		},
		"wrong arity": func(env *testsuite.TestWorkflowEnvironment) {
			env.OnActivity(Greet, mock.Anything, "ann").Return("only a value")
		},
		"wrong function": func(env *testsuite.TestWorkflowEnvironment) {
			env.OnActivity(Greet, mock.Anything, "ann").Return(func(string) (string, error) { return "", nil })
		},
	} {
		s.Run(name, func() {
			env := s.NewTestWorkflowEnvironment()
			env.RegisterActivity(Farewell)
			setup(env)
			env.ExecuteWorkflow(Day, "ann")
			s.True(env.IsWorkflowCompleted())
			// The workflow returned the activity's error: its failure
			// keeps the type.
			var ae *workflow.ApplicationError
			err := env.GetWorkflowError()
			s.Require().True(errors.As(err, &ae), "%v", err)
			s.Equal(testsuite.MockErrorType, ae.Type(), "%v", err)
			s.True(ae.NonRetryable())
			if name != "unmatched" { // testify records only matched calls
				env.AssertActivityNumberOfCalls(s.T(), "Greet", 1) // not retried
			}
		})
	}
}

// Temporal registers a struct's exported methods as activities.
type Mailer struct{ prefix string }

func (m *Mailer) Send(_ context.Context, to string) (string, error) { return m.prefix + to, nil }
func (m *Mailer) Count(_ context.Context) (int, error)              { return 1, nil }
func (m *Mailer) NotAnActivity() string                             { return "" }

func Mailing(ctx workflow.Context) (string, error) {
	var m *Mailer // a nil receiver names the methods, as in Temporal
	var out string
	err := workflow.ExecuteActivity(actCtx(ctx), m.Send, "ann").Get(ctx, &out)
	return out, err
}

func (s *UnitTestSuite) TestStructActivities() {
	s.Panics(func() { s.env.RegisterActivity(&Mailer{}) }, "a method that is not an activity")
	s.env.RegisterActivityWithOptions(&Mailer{prefix: "to:"}, activity.RegisterOptions{SkipInvalidStructFunctions: true})
	s.env.ExecuteWorkflow(Mailing)
	var got string
	s.NoError(s.env.GetWorkflowResult(&got))
	s.Equal("to:ann", got)
}

// Child runs as a child workflow.
func Child(ctx workflow.Context, n int) (int, error) { return n * 10, nil }

func Parent(ctx workflow.Context, n int) (string, error) {
	var a, b int
	if err := workflow.ExecuteChildWorkflow(ctx, Child, n).Get(ctx, &a); err != nil {
		return "", err
	}
	if err := workflow.ExecuteChildWorkflow(ctx, Child, n+1).Get(ctx, &b); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d %d at +%v", a, b, workflow.Now(ctx).Sub(start)), nil
}

// OnWorkflow mocks a child: by values, after a wait on the clock, and by a
// function that runs as the child's code.
func (s *UnitTestSuite) TestChildWorkflowMocks() {
	s.env.SetStartTime(start)
	s.env.OnWorkflow(Child, mock.Anything, 1).Return(7, nil).After(time.Hour).Once()
	s.env.OnWorkflow(Child, mock.Anything, 2).Return(func(ctx workflow.Context, n int) (int, error) {
		return n * 100, workflow.Sleep(ctx, time.Minute)
	}).Once()
	s.env.ExecuteWorkflow(Parent, 1)
	var got string
	s.NoError(s.env.GetWorkflowResult(&got))
	s.Equal("7 200 at +1h1m0s", got)
	s.env.AssertWorkflowNumberOfCalls(s.T(), "Child", 2)

	// Unmocked, the child runs its code.
	env := s.NewTestWorkflowEnvironment()
	env.SetStartTime(start)
	env.RegisterWorkflow(Child)
	env.ExecuteWorkflow(Parent, 1)
	s.NoError(env.GetWorkflowResult(&got))
	s.Equal("10 20 at +0s", got)
}

// Mailbox collects "mail" signals until it has three or a week passes.
func Mailbox(ctx workflow.Context) (string, error) {
	var got []string
	if err := workflow.SetQueryHandler(ctx, "count", func() (int, error) { return len(got), nil }); err != nil {
		return "", err
	}
	ch := workflow.GetSignalChannel(ctx, "mail")
	timeout := workflow.NewTimer(ctx, 7*24*time.Hour)
	for len(got) < 3 {
		timedOut := false
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(ch, func(c workflow.ReceiveChannel, _ bool) {
			var v string
			c.Receive(ctx, &v)
			got = append(got, fmt.Sprintf("%s@+%v", v, workflow.Now(ctx).Sub(start)))
		})
		sel.AddFuture(timeout, func(workflow.Future) { timedOut = true })
		sel.Select(ctx)
		if timedOut {
			return strings.Join(got, " ") + " (a week passed)", nil
		}
	}
	return strings.Join(got, " "), nil
}

// Delayed callbacks signal at their times on the skipping clock, and a
// query answers from a callback and after the run.
func (s *UnitTestSuite) TestDelayedCallbacksSignalAndQuery() {
	s.env.SetStartTime(start)
	s.env.SignalWorkflow("mail", "first") // before the start: delivered before the first turn
	var counts []int
	s.env.RegisterDelayedCallback(func() {
		s.env.SignalWorkflow("mail", "second")
	}, 2*time.Hour)
	s.env.RegisterDelayedCallback(func() {
		v, err := s.env.QueryWorkflow("count")
		s.Require().NoError(err)
		var n int
		s.NoError(v.Get(&n))
		counts = append(counts, n)
		s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow("mail", "third") }, 24*time.Hour)
	}, 3*time.Hour)
	s.env.ExecuteWorkflow(Mailbox)
	var got string
	s.NoError(s.env.GetWorkflowResult(&got))
	s.Equal("first@+0s second@+2h0m0s third@+27h0m0s", got)
	s.Equal([]int{2}, counts)
	v, err := s.env.QueryWorkflow("count")
	s.Require().NoError(err)
	var n int
	s.NoError(v.Get(&n))
	s.Equal(3, n)
	_, err = s.env.QueryWorkflow("nope")
	s.ErrorIs(err, workflow.ErrUnknownQuery)

	// Without the third signal, the week's timer ends it.
	env := s.NewTestWorkflowEnvironment()
	env.SetStartTime(start)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow("mail", "only") }, time.Minute)
	env.ExecuteWorkflow(Mailbox)
	s.NoError(env.GetWorkflowResult(&got))
	s.Equal("only@+1m0s (a week passed)", got)
	s.Equal(start.Add(7*24*time.Hour), env.Now())
}

// A callback due at the same instant as a workflow timer runs first.
func (s *UnitTestSuite) TestCallbackBeforeTimerOfTheSameInstant() {
	s.env.SetStartTime(start)
	s.env.RegisterDelayedCallback(func() { s.env.SignalWorkflow("mail", "a") }, 7*24*time.Hour)
	s.env.ExecuteWorkflow(Mailbox)
	var got string
	s.NoError(s.env.GetWorkflowResult(&got))
	// The signal and the timer share an instant: both are in the history
	// before the workflow's code runs again, and the selector takes the
	// signal (it came first).
	s.Equal("a@+168h0m0s", strings.TrimSuffix(got, " (a week passed)"))
}

// CancelWorkflow from a callback cancels the workflow's context.
func (s *UnitTestSuite) TestCancelWorkflow() {
	s.env.RegisterDelayedCallback(s.env.CancelWorkflow, time.Hour)
	s.env.ExecuteWorkflow(func(ctx workflow.Context) error {
		return workflow.Sleep(ctx, 24*time.Hour)
	})
	s.True(s.env.IsWorkflowCompleted())
	s.ErrorIs(s.env.GetWorkflowError(), workflow.ErrCanceled)
	// As in Temporal, the run's error is a WorkflowExecutionError wrapping
	// a CanceledError.
	var wee *temporal.WorkflowExecutionError
	s.Require().ErrorAs(s.env.GetWorkflowError(), &wee)
	s.True(temporal.IsCanceledError(errors.Unwrap(wee)), "%v", wee)
}

// An activity mock with After waits on the clock: the clock skips the
// wait, and a timer of the workflow that ends first wins the race.
func (s *UnitTestSuite) TestMockAfterRacesATimer() {
	s.env.SetStartTime(start)
	s.env.OnActivity(Greet, mock.Anything, "slow").Return("late", nil).After(3 * time.Hour)
	race := func(ctx workflow.Context, who string) (string, error) {
		var out string
		f := workflow.ExecuteActivity(actCtx(ctx), Greet, who)
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(f, func(f workflow.Future) { _ = f.Get(ctx, &out) })
		sel.AddFuture(workflow.NewTimer(ctx, 2*time.Hour), func(workflow.Future) { out = "timer" })
		sel.Select(ctx)
		return fmt.Sprintf("%s at +%v", out, workflow.Now(ctx).Sub(start)), nil
	}
	s.env.RegisterWorkflowWithOptions(race, workflow.RegisterOptions{Name: "Race"})
	began := time.Now()
	s.env.ExecuteWorkflow("Race", "slow")
	var got string
	s.NoError(s.env.GetWorkflowResult(&got))
	s.Equal("timer at +2h0m0s", got)

	env := s.NewTestWorkflowEnvironment()
	env.SetStartTime(start)
	env.OnActivity(Greet, mock.Anything, "fast").Return("early", nil).After(time.Hour)
	env.RegisterWorkflowWithOptions(race, workflow.RegisterOptions{Name: "Race"})
	env.ExecuteWorkflow("Race", "fast")
	s.NoError(env.GetWorkflowResult(&got))
	s.Equal("early at +1h0m0s", got)
	s.Less(time.Since(began), 2*time.Second)
}

// While activity code runs, timers fall due in real time, as in Temporal:
// a 50 ms timer beats an activity that runs until it is cancelled.
func (s *UnitTestSuite) TestTimerDuringRunningActivityFiresInRealTime() {
	s.env.SetStartTime(start)
	s.env.RegisterActivityWithOptions(func(ctx context.Context) (string, error) {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(30 * time.Second):
			return "activity", nil
		}
	}, activity.RegisterOptions{Name: "Slow"})
	s.env.ExecuteWorkflow(func(ctx workflow.Context) (string, error) {
		actx, cancel := workflow.WithCancel(actCtx(ctx))
		out := ""
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(workflow.ExecuteActivity(actx, "Slow"), func(f workflow.Future) { _ = f.Get(ctx, &out) })
		sel.AddFuture(workflow.NewTimer(ctx, 50*time.Millisecond), func(workflow.Future) { out = "timer" })
		sel.Select(ctx)
		cancel()
		return out, nil
	})
	var got string
	s.NoError(s.env.GetWorkflowResult(&got))
	s.Equal("timer", got)
	s.Equal(start.Add(50*time.Millisecond), s.env.Now())
}

// The run timeout ends a run that sleeps past it.
func (s *UnitTestSuite) TestWorkflowRunTimeout() {
	s.env.SetWorkflowRunTimeout(time.Hour)
	s.env.ExecuteWorkflow(func(ctx workflow.Context) error { return workflow.Sleep(ctx, 24*time.Hour) })
	s.True(s.env.IsWorkflowCompleted())
	err := s.env.GetWorkflowError()
	s.Require().Error(err)
	s.Contains(err.Error(), "timed out")
}

// A workflow that continues as new ends the test run with a
// ContinueAsNewError that names the next run, as in Temporal.
func (s *UnitTestSuite) TestContinueAsNew() {
	s.env.RegisterWorkflow(Child)
	s.env.ExecuteWorkflow(func(ctx workflow.Context, n int) (int, error) {
		return 0, workflow.NewContinueAsNewError(ctx, Child, n+1)
	}, 4)
	s.True(s.env.IsWorkflowCompleted())
	var can *workflow.ContinueAsNewError
	s.Require().ErrorAs(s.env.GetWorkflowError(), &can)
	s.Equal("Child", can.WorkflowType.Name)
	s.ErrorAs(s.env.GetWorkflowError(), new(*temporal.WorkflowExecutionError))
	s.JSONEq("[5]", string(can.Input))
}

// The workflow id and task queue come from SetStartWorkflowOptions (or
// Temporal's defaults), and the by-id reads find children.
func (s *UnitTestSuite) TestStartOptionsAndByID() {
	info := func(ctx workflow.Context) (string, error) {
		i := workflow.GetInfo(ctx)
		var child int
		err := workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: "kid"}), Child, 4).Get(ctx, &child)
		return fmt.Sprintf("%s %s %d", i.WorkflowID, i.TaskQueue, child), err
	}
	s.env.RegisterWorkflow(Child)
	s.env.RegisterWorkflowWithOptions(info, workflow.RegisterOptions{Name: "Info"})
	s.env.ExecuteWorkflow("Info")
	var got string
	s.NoError(s.env.GetWorkflowResult(&got))
	s.Equal(testsuite.DefaultWorkflowID+" "+testsuite.DefaultTaskQueue+" 40", got)
	var kid int
	s.NoError(s.env.GetWorkflowResultByID("kid", &kid))
	s.Equal(40, kid)
	s.ErrorIs(s.env.GetWorkflowErrorByID("nobody"), testsuite.ErrUnknownWorkflow)

	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(Child)
	env.RegisterWorkflowWithOptions(info, workflow.RegisterOptions{Name: "Info"})
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "mine", TaskQueue: "q"})
	env.ExecuteWorkflow("Info")
	s.NoError(env.GetWorkflowResult(&got))
	s.Equal("mine q 40", got)
}

// Registration errors panic, as in Temporal: a name twice, a name that is
// not registered, a second run, a read before the run.
func (s *UnitTestSuite) TestMisusePanics() {
	s.env.RegisterActivity(Greet)
	s.Panics(func() { s.env.RegisterActivity(Greet) })
	s.NotPanics(func() {
		s.env.RegisterActivityWithOptions(Greet, activity.RegisterOptions{DisableAlreadyRegisteredCheck: true})
	})
	s.Panics(func() { s.env.OnActivity("Nope") })
	s.Panics(func() { s.env.ExecuteWorkflow("Nope") })
	s.Panics(func() { _ = s.env.GetWorkflowResult(nil) })
	s.Panics(func() { s.env.RegisterWorkflow(func() {}) }) // not a workflow function's shape
	s.env.ExecuteWorkflow(Child, 1)
	s.Panics(func() { s.env.ExecuteWorkflow(Child, 1) })
	s.Panics(func() { s.env.RegisterWorkflow(Parent) })
}

// A run that waits for a signal nobody sends times out, as in Temporal's
// test environment: its default run timeout is ten years of workflow time,
// and the clock skips to it since nothing else is scheduled.
func TestWaitingForeverTimesOutAfterTheDefaultRunTimeout(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.SetTestTimeout(time.Minute) // a hang would fail the test below, not wait
	start := env.Now()
	env.ExecuteWorkflow(func(ctx workflow.Context) error {
		workflow.GetSignalChannel(ctx, "never").Receive(ctx, nil)
		return nil
	})
	if !env.IsWorkflowCompleted() {
		t.Fatal("the run is not completed")
	}
	err := env.GetWorkflowError()
	var te *temporal.TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("error %v (%T), want a *temporal.TimeoutError", err, err)
	}
	if got := env.Now().Sub(start); got < testsuite.DefaultWorkflowRunTimeout {
		t.Fatalf("the clock moved %v, want at least the run timeout %v", got, testsuite.DefaultWorkflowRunTimeout)
	}
}

// A callback a few nanoseconds past a second leaves the clock between two
// milliseconds; the engine's deadlines are whole milliseconds, and the
// clock skipped to them still fires them: here a timer after each of a few
// such signals, then the default run timeout of a run that waits forever.
// (Whether a missed deadline hangs depends on what else commits after the
// clock moved, so the pattern repeats to make a regression show.)
func TestDeadlinesFireAfterCallbacksBetweenMilliseconds(t *testing.T) {
	const rounds = 10
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.SetTestTimeout(time.Minute) // a hang would fail the test below, not wait
	start := env.Now()
	for k := range rounds {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow("go", nil) }, time.Duration(k)*time.Second+2*time.Nanosecond)
	}
	// Indexed by round, not appended: a replay of the run runs the loop
	// again and writes the same values.
	var slept [rounds]time.Duration
	env.ExecuteWorkflow(func(ctx workflow.Context) error {
		for k := range rounds {
			workflow.GetSignalChannel(ctx, "go").Receive(ctx, nil)
			before := workflow.Now(ctx)
			if err := workflow.Sleep(ctx, 500*time.Millisecond); err != nil {
				return err
			}
			slept[k] = workflow.Now(ctx).Sub(before)
		}
		workflow.GetSignalChannel(ctx, "never").Receive(ctx, nil)
		return nil
	})
	if !env.IsWorkflowCompleted() {
		t.Fatal("the run is not completed")
	}
	for k, d := range slept {
		if d < 500*time.Millisecond {
			t.Fatalf("sleep %d lasted %v, want at least 500ms", k, d)
		}
	}
	var te *temporal.TimeoutError
	if err := env.GetWorkflowError(); !errors.As(err, &te) {
		t.Fatalf("error %v (%T), want a *temporal.TimeoutError", err, err)
	}
	if got := env.Now().Sub(start); got < testsuite.DefaultWorkflowRunTimeout {
		t.Fatalf("the clock moved %v, want at least the run timeout %v", got, testsuite.DefaultWorkflowRunTimeout)
	}
}

// An activity that runs on with nothing else happening panics after the
// test timeout, saying what every run was doing.
func TestTestTimeoutPanicsWithTheRunsState(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.SetTestTimeout(100 * time.Millisecond)
	release := make(chan struct{})
	defer close(release)
	env.RegisterActivityWithOptions(func(ctx context.Context) error {
		<-release
		return nil
	}, activity.RegisterOptions{Name: "Stall"})
	var msg string
	func() {
		defer func() { msg = fmt.Sprint(recover()) }()
		env.ExecuteWorkflow(func(ctx workflow.Context) error {
			ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Hour})
			return workflow.ExecuteActivity(ctx, "Stall").Get(ctx, nil)
		})
	}()
	for _, want := range []string{"test timeout", "activity calls of run", "are running"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("panic %q lacks %q", msg, want)
		}
	}
	if env.IsWorkflowCompleted() {
		t.Fatal("a run that timed out is completed")
	}
}

// A child workflow type nobody registered stops the run at once with the
// engine's reason.
func TestUnregisteredChildPanics(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	var msg string
	func() {
		defer func() { msg = fmt.Sprint(recover()) }()
		env.ExecuteWorkflow(func(ctx workflow.Context) error {
			return workflow.ExecuteChildWorkflow(ctx, "Ghost").Get(ctx, nil)
		})
	}()
	if !strings.Contains(msg, `"Ghost"`) || !strings.Contains(msg, "register") {
		t.Fatalf("panic %q does not name the unregistered type", msg)
	}
}

// fakeT records what testify reports through it.
type fakeT struct {
	mu     sync.Mutex
	logs   []string
	errors []string
}

func (f *fakeT) Logf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}
func (f *fakeT) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}
func (f *fakeT) FailNow() { panic("FailNow") }
func (f *fakeT) Helper()  {}

// AssertExpectations fails when an expected call never happened, and
// passes when every one did (or was optional).
func TestAssertExpectations(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterActivity(Greet)
	env.OnActivity(Farewell, mock.Anything, "ann").Return("bye", nil).Once()
	env.OnActivity(Notify, mock.Anything, mock.Anything).Return(nil).Once() // Day never calls it
	env.OnActivity(Farewell, mock.Anything, "zed").Return("", nil).Maybe()  // optional
	env.ExecuteWorkflow(Day, "ann")
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var ft fakeT
	if env.AssertExpectations(&ft) {
		t.Fatal("AssertExpectations passed with Notify never called")
	}
	if len(ft.errors) == 0 || !strings.Contains(strings.Join(ft.logs, "\n"), "Notify") {
		t.Fatalf("the failure does not name Notify: %q %q", ft.errors, ft.logs)
	}

	env = ts.NewTestWorkflowEnvironment()
	env.RegisterActivity(Greet)
	env.OnActivity(Farewell, mock.Anything, "ann").Return("bye", nil).Once()
	env.ExecuteWorkflow(Day, "ann")
	ft = fakeT{}
	if !env.AssertExpectations(&ft) || len(ft.errors) > 0 {
		t.Fatalf("AssertExpectations failed with every expectation met: %q", ft.errors)
	}
	// Twice expected, once called: a failure too.
	env = ts.NewTestWorkflowEnvironment()
	env.RegisterActivity(Greet)
	env.OnActivity(Farewell, mock.Anything, "ann").Return("bye", nil).Times(2)
	env.ExecuteWorkflow(Day, "ann")
	ft = fakeT{}
	if env.AssertExpectations(&ft) {
		t.Fatal("AssertExpectations passed with one of two expected calls")
	}
}

// InOrderMockCalls makes the second expectation wait for the first.
func TestInOrderMockCalls(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	first := env.OnActivity(Greet, mock.Anything, mock.Anything).Return("one", nil).Once()
	second := env.OnActivity(Greet, mock.Anything, mock.Anything).Return("two", nil).Once()
	env.InOrderMockCalls(first, second)
	env.ExecuteWorkflow(func(ctx workflow.Context) (string, error) {
		var a, b string
		if err := workflow.ExecuteActivity(actCtx(ctx), Greet, "x").Get(ctx, &a); err != nil {
			return "", err
		}
		err := workflow.ExecuteActivity(actCtx(ctx), Greet, "y").Get(ctx, &b)
		return a + b, err
	})
	var got string
	if err := env.GetWorkflowResult(&got); err != nil || got != "onetwo" {
		t.Fatalf("got %q, %v", got, err)
	}
	env.AssertExpectations(t)
}

// NoContext is an activity that takes no context.
func NoContext(n int) (int, error) { return n, nil }

// A mocked After is skipped for an activity on another task queue (run by
// its own job) and for one that takes no context, as for any other.
func TestMockAfterOnOtherQueueAndWithoutContext(t *testing.T) {
	for _, queue := range []string{"", "elsewhere"} {
		t.Run("queue="+queue, func(t *testing.T) {
			var ts testsuite.WorkflowTestSuite
			env := ts.NewTestWorkflowEnvironment()
			env.SetStartTime(start)
			env.OnActivity(Greet, mock.Anything, "x").Return("g", nil).After(5 * time.Hour)
			env.OnActivity(NoContext, 1).Return(2, nil).After(3 * time.Hour)
			began := time.Now()
			env.ExecuteWorkflow(func(ctx workflow.Context) (string, error) {
				ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{TaskQueue: queue, StartToCloseTimeout: time.Minute})
				g := workflow.ExecuteActivity(ctx, Greet, "x")
				var n int
				if err := workflow.ExecuteActivity(ctx, NoContext, 1).Get(ctx, &n); err != nil {
					return "", err
				}
				at := workflow.Now(ctx).Sub(start)
				var s string
				if err := g.Get(ctx, &s); err != nil {
					return "", err
				}
				return fmt.Sprintf("%d at +%v, %s at +%v", n, at, s, workflow.Now(ctx).Sub(start)), nil
			})
			var got string
			if err := env.GetWorkflowResult(&got); err != nil {
				t.Fatal(err)
			}
			if want := "2 at +3h0m0s, g at +5h0m0s"; got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
			if wall := time.Since(began); wall > 2*time.Second {
				t.Fatalf("took %v of real time", wall)
			}
			env.AssertExpectations(t)
		})
	}
}
