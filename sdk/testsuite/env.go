package testsuite

import (
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stretchr/testify/mock"

	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// TestWorkflowEnvironment runs one workflow (with its children and
// activities) on an in-memory engine, with mocks and a skipping clock. Set
// it up (Register*, On*, Set*, RegisterDelayedCallback) and then call
// ExecuteWorkflow once; read the outcome with IsWorkflowCompleted,
// GetWorkflowResult and GetWorkflowError.
//
// ExecuteWorkflow runs on the test's goroutine and returns when the
// workflow has ended. Delayed callbacks run on that goroutine too, while the
// clock stands at their time; SignalWorkflow, CancelWorkflow and
// QueryWorkflow may be called from them. Mocked activities run on the
// worker's goroutines, like real ones.
type TestWorkflowEnvironment struct {
	logger *slog.Logger

	// Set up before ExecuteWorkflow (the test's goroutine).
	workflows   map[string]*registration
	activities  map[string]*registration
	dynWorkflow *registration // RegisterDynamicWorkflow; nil: none
	dynActivity *registration // RegisterDynamicActivity; nil: none
	startTime   time.Time
	testTimeout time.Duration
	startOpts   client.StartWorkflowOptions
	workerOpts  worker.Options

	workflowMock mock.Mock
	activityMock mock.Mock
	mocks        mockTable
	hooks        testHooks // OnGetVersion, SetLastCompletionResult
	listen       listeners // the SetOn*Listener callbacks
	updates      updates   // UpdateWorkflow's waits for outcomes

	// mu guards what the driver shares with the workers' goroutines and
	// with delayed callbacks.
	mu        sync.Mutex
	callbacks []*delayedCallback
	cbSeq     int
	turns     map[uint64]turnState
	// running counts the activity calls inside their function, by the run
	// id their activity.Info names (the workflow's run for an inline
	// activity, the task's own job for an activity on another queue; ""
	// when the function takes no context); parked are those of them that
	// are mocked calls waiting for the clock.
	running map[string]int
	parked  []parkedCall
	pending pendingCalls // inline activities' tokens (pending.go)
	errs    []error      // what the workers reported through OnError
	notify  chan struct{}

	tl  *timeline
	run *liveRun // the engine and workers while ExecuteWorkflow runs

	// The outcome, once ExecuteWorkflow has returned.
	started   bool
	completed bool
	result    []byte
	err       error
	after     *recorded // the runs' records, read after the engine closed
}

// registration is a registered workflow or activity: the user's function
// and the wrapper the workers run instead.
type registration struct {
	name    string
	fn      any
	wrapped any
	// quiet marks a registration made by the call that used the function
	// (OnActivity, say): an explicit registration later replaces it, as in
	// Temporal, where registering after mocking is common.
	quiet bool
}

// parkedCall is a mocked activity call waiting for the clock to reach at.
type parkedCall struct {
	at  time.Time
	run string
}

// turnState is what a run's idle turn told the driver (sdkhook.TurnProbe).
type turnState struct {
	seenSeq  uint64
	inflight int
	wakeAt   time.Time
	token    *int // tells a turn's later wait from an earlier one's done
}

func newEnvironment(logger *slog.Logger) *TestWorkflowEnvironment {
	return &TestWorkflowEnvironment{
		logger:      logger,
		workflows:   map[string]*registration{},
		activities:  map[string]*registration{},
		startTime:   time.Now().Truncate(time.Millisecond),
		testTimeout: DefaultTestTimeout,
		mocks:       mockTable{workflows: map[string]bool{}, activities: map[string]bool{}, outcomes: map[int]mockOutcome{}},
		turns:       map[uint64]turnState{},
		running:     map[string]int{},
		notify:      make(chan struct{}, 1),
	}
}

// poke wakes the driver to look again.
func (env *TestWorkflowEnvironment) poke() {
	select {
	case env.notify <- struct{}{}:
	default:
	}
}

// RegisterWorkflow registers a workflow function under its name.
func (env *TestWorkflowEnvironment) RegisterWorkflow(w any) {
	env.RegisterWorkflowWithOptions(w, workflow.RegisterOptions{})
}

// RegisterWorkflowWithOptions registers a workflow function under
// options.Name (or its own name). A second registration of a name panics
// unless options.DisableAlreadyRegisteredCheck is set.
func (env *TestWorkflowEnvironment) RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions) {
	env.mustNotHaveStarted("RegisterWorkflow")
	name := options.Name
	if name == "" {
		name = functionName("workflow", w)
	}
	if err := checkFunc(w); err != nil {
		panic(fmt.Sprintf("testsuite: RegisterWorkflow %s: %v", name, err))
	}
	env.register(env.workflows, "workflow", name, w, options.DisableAlreadyRegisteredCheck, env.wrapWorkflow)
}

// RegisterActivity registers an activity function under its name, or every
// exported method of a struct (a pointer to one, usually) under the
// method's name, as Temporal does.
func (env *TestWorkflowEnvironment) RegisterActivity(a any) {
	env.RegisterActivityWithOptions(a, activity.RegisterOptions{})
}

// RegisterActivityWithOptions registers an activity function under
// options.Name (or its own name), or a struct's exported methods under
// options.Name followed by each method's name. A second registration of a
// name panics unless options.DisableAlreadyRegisteredCheck is set; a
// struct method that is not an activity panics unless
// options.SkipInvalidStructFunctions is set.
func (env *TestWorkflowEnvironment) RegisterActivityWithOptions(a any, options activity.RegisterOptions) {
	env.mustNotHaveStarted("RegisterActivity")
	v := reflect.ValueOf(a)
	if v.Kind() == reflect.Func {
		name := options.Name
		if name == "" {
			name = functionName("activity", a)
		}
		if err := checkFunc(a); err != nil {
			panic(fmt.Sprintf("testsuite: RegisterActivity %s: %v", name, err))
		}
		env.register(env.activities, "activity", name, a, options.DisableAlreadyRegisteredCheck, env.wrapActivity)
		return
	}
	// A nil pointer to a struct registers its methods too, as in Temporal
	// (var a *Activities; env.RegisterActivity(a)): tests that mock every
	// method never call them on the nil receiver.
	if !v.IsValid() || (v.Kind() != reflect.Struct && (v.Kind() != reflect.Pointer || v.Type().Elem().Kind() != reflect.Struct)) {
		panic(fmt.Sprintf("testsuite: RegisterActivity: %T is neither an activity function nor a struct of them", a))
	}
	// Every method is checked before any is registered, so that a
	// registration that panics registers nothing.
	t := v.Type()
	fns := map[string]any{}
	for i := range t.NumMethod() {
		m := t.Method(i)
		fn := v.Method(i).Interface()
		if err := checkFunc(fn); err != nil {
			if options.SkipInvalidStructFunctions {
				continue
			}
			panic(fmt.Sprintf("testsuite: RegisterActivity: method %s of %s: %v", m.Name, t, err))
		}
		name := options.Name + m.Name
		if old := env.activities[name]; old != nil && !old.quiet && !options.DisableAlreadyRegisteredCheck {
			panic(fmt.Sprintf("testsuite: activity type %q is already registered", name))
		}
		fns[name] = fn
	}
	if len(fns) == 0 {
		panic(fmt.Sprintf("testsuite: RegisterActivity: %s has no exported activity methods", t))
	}
	for name, fn := range fns {
		env.register(env.activities, "activity", name, fn, true, env.wrapActivity)
	}
}

func (env *TestWorkflowEnvironment) register(into map[string]*registration, kind, name string, fn any, replace bool,
	wrap func(name string, fn any) any) {
	if old := into[name]; old != nil && !replace && !old.quiet {
		panic(fmt.Sprintf("testsuite: %s type %q is already registered", kind, name))
	}
	into[name] = &registration{name: name, fn: fn, wrapped: wrap(name, fn)}
}

// registerQuietly registers fn unless its name is registered, for the
// calls that register what they are given (ExecuteWorkflow, OnActivity,
// OnWorkflow), as Temporal's do.
func (env *TestWorkflowEnvironment) registerQuietly(into map[string]*registration, kind string, fn any,
	wrap func(name string, fn any) any) string {
	name := functionName(kind, fn)
	if err := checkFunc(fn); err != nil {
		panic(fmt.Sprintf("testsuite: %s %s: %v", kind, name, err))
	}
	if into[name] == nil {
		into[name] = &registration{name: name, fn: fn, wrapped: wrap(name, fn), quiet: true}
	}
	return name
}

// registered returns the registration of name, panicking with the list of
// registered names when there is none (as Temporal does).
func registered(from map[string]*registration, kind, name string) *registration {
	r := from[name]
	if r == nil {
		names := make([]string, 0, len(from))
		for n := range from {
			names = append(names, n)
		}
		slices.Sort(names)
		panic(fmt.Sprintf("testsuite: %s %q is not registered with the TestWorkflowEnvironment; registered types are: %s",
			kind, name, strings.Join(names, ", ")))
	}
	return r
}

func functionName(kind string, fn any) string {
	if v := reflect.ValueOf(fn); !v.IsValid() || v.Kind() != reflect.Func || v.IsNil() {
		panic(fmt.Sprintf("testsuite: a %s is a function, not a %T", kind, fn))
	}
	return workflow.ActivityName(fn)
}

// checkFunc checks that fn is a function the environment can wrap and the
// worker can call: not variadic, returning error or (T, error).
func checkFunc(fn any) error {
	v := reflect.ValueOf(fn)
	if !v.IsValid() || v.Kind() != reflect.Func || v.IsNil() {
		return fmt.Errorf("%T is not a function", fn)
	}
	t := v.Type()
	if t.IsVariadic() {
		return fmt.Errorf("%s is variadic", t)
	}
	if n := t.NumOut(); n == 0 || n > 2 || t.Out(n-1) != errorType {
		return fmt.Errorf("%s must return error or (T, error)", t)
	}
	return nil
}

var errorType = reflect.TypeFor[error]()

func (env *TestWorkflowEnvironment) mustNotHaveStarted(what string) {
	if env.started {
		panic(fmt.Sprintf("testsuite: %s after ExecuteWorkflow: set the environment up before it runs", what))
	}
}

// SetStartTime sets the time the clock reads when the workflow starts
// (workflow.Now at its first line); the default is the real time when the
// environment was made. It is kept to the millisecond, the resolution of
// workflow time.
func (env *TestWorkflowEnvironment) SetStartTime(startTime time.Time) {
	env.mustNotHaveStarted("SetStartTime")
	env.startTime = startTime.Truncate(time.Millisecond)
}

// Now returns the environment's current time: the start time before
// ExecuteWorkflow, the clock's time while and after it runs.
func (env *TestWorkflowEnvironment) Now() time.Time {
	if env.tl == nil {
		return env.startTime
	}
	return env.tl.Now()
}

// SetTestTimeout sets how long ExecuteWorkflow waits, in real time, with
// nothing happening (no commit, no activity starting or ending, no
// deadline to skip to) before it panics with what every run was doing. The
// default is DefaultTestTimeout. It bounds idleness, not the whole run: a
// long run that keeps moving is not cut short.
func (env *TestWorkflowEnvironment) SetTestTimeout(idleTimeout time.Duration) *TestWorkflowEnvironment {
	env.testTimeout = idleTimeout
	return env
}

// SetStartWorkflowOptions sets the options ExecuteWorkflow starts the run
// with: its workflow id (default DefaultWorkflowID), task queue (default
// DefaultTaskQueue), retry policy and timeouts.
func (env *TestWorkflowEnvironment) SetStartWorkflowOptions(options client.StartWorkflowOptions) *TestWorkflowEnvironment {
	env.mustNotHaveStarted("SetStartWorkflowOptions")
	env.startOpts = options
	return env
}

// SetWorkflowRunTimeout sets the run's timeout, in workflow time: a run
// still open when it passes ends as timed out.
func (env *TestWorkflowEnvironment) SetWorkflowRunTimeout(runTimeout time.Duration) *TestWorkflowEnvironment {
	env.mustNotHaveStarted("SetWorkflowRunTimeout")
	env.startOpts.WorkflowRunTimeout = runTimeout
	return env
}

// SetWorkerOptions sets the options of the environment's workers. The
// environment keeps its own Clock, LeaseTTL and RetryInlineThreshold (its
// clock and its skipping rely on them); everything else is taken, and
// OnError is called besides the environment's own handler.
func (env *TestWorkflowEnvironment) SetWorkerOptions(options worker.Options) *TestWorkflowEnvironment {
	env.mustNotHaveStarted("SetWorkerOptions")
	env.workerOpts = options
	return env
}

// SetIdentity sets the identity the environment's workers lease jobs as.
func (env *TestWorkflowEnvironment) SetIdentity(identity string) *TestWorkflowEnvironment {
	env.mustNotHaveStarted("SetIdentity")
	env.workerOpts.Identity = identity
	return env
}

// reportError keeps an error a worker reported, for the message of a test
// that times out.
func (env *TestWorkflowEnvironment) reportError(err error) {
	env.mu.Lock()
	defer env.mu.Unlock()
	if len(env.errs) < 20 {
		env.errs = append(env.errs, err)
	}
}
