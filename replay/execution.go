package replay

import (
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// Resolution is the outcome of a command, taken from its result event.
type Resolution struct {
	Payload []byte // the result, or the failure's details
	Failed  bool
	Event   *engine.Event
}

// Command is one thing workflow code asked for, named by its step id. Steps
// are numbered in the order the code issues them, which is what makes them
// matchable against the history on every replay.
type Command struct {
	Step    string
	Kind    CommandKind
	Name    string // activity type, child workflow type or marker name
	Input   []byte
	Options CommandOptions // the SDK's options for the command; opaque to replay
	FireAt  int64          // a timer's firing time, Unix ms
	// IssuedAtMS is the workflow time when the code issued the command: the
	// same on every replay, so deadlines measured from it are too.
	IssuedAtMS int64
	Where      string
	// Recorded is true once the history holds an event of the step: the
	// command happened before and must not be issued to the engine again.
	Recorded bool
	Resolved bool
	// CancelRequested is set by workflow code (RequestCancel) when the
	// command's context is cancelled before its result arrived: the worker
	// then cancels the running activity, cancels the timer, asks the child
	// to cancel itself, or never starts the command at all.
	CancelRequested bool
	// CancelHandled and Started belong to the worker: it sets CancelHandled
	// once it acted on CancelRequested, and Started once it created the job
	// of a remote command (whose scheduled record may not be written yet).
	CancelHandled bool
	Started       bool
	// OnRecord, set by the SDK, is called with each record event of the
	// step as it is applied (a child's child_scheduled, say), on the
	// worker's goroutine while no coroutine runs.
	OnRecord func(ev *engine.Event)
	// WaitsForRecord, set by the SDK, says the code waits for the step's
	// record (a child's execution): the worker writes a record it made at
	// once instead of with its next wait.
	WaitsForRecord bool
	resolve        func(Resolution)
}

// Entry runs a workflow from its input inside the root coroutine and reports
// its end with Finish. The SDK supplies it.
type Entry func(x *Execution, input []byte)

// Execution is one workflow run as a worker holds it: the coroutines of its
// code, the commands they issued, and how far into the history it is. The
// worker drives it from one goroutine: Advance with new history events, then
// act on Unresolved and DrainMarkers; workflow code calls Issue, Marker and
// Finish from its coroutines. Nothing in it reads a clock but the
// dispatcher's deadlock watchdog: workflow time is the time of the event
// being applied.
type Execution struct {
	Job   engine.JobID
	entry Entry
	d     *Dispatcher

	nowMS     int64
	replaying bool
	lastSeq   uint64
	// historyBytes sums the payloads of the events applied.
	historyBytes int64
	// frontier is the seq of the newest known event that workflow code
	// produced (a step event, a wait, its end). Code running before it
	// re-executes decisions the history already holds: it is replaying.
	frontier uint64
	nextStep uint64
	// paused: the last pause event applied paused the run (Paused);
	// unpausedSeq is the seq of the last unpause applied.
	paused      bool
	unpausedSeq uint64
	cmds        map[string]*Command
	open        map[string]*Command        // the unresolved non-marker commands, for Unresolved
	byStep      map[string][]*engine.Event // the known history, by step
	markers     []engine.NewEvent

	onSignal func(name string, payload []byte)
	onCancel func()
	local    any // the SDK's per-execution state
	// lastResult is a cron run's last completion result, from its job_created.
	lastResult []byte
	// heldBack: the run's job_created is followed by a hold-back (a cron
	// run waiting for its time, a start delay), so its code has not
	// started yet: it starts at the first event after the hold, and so
	// sees workflow time as the time it started, not when it was created.
	heldBack bool
	// deferred are the events that came during the hold (signals, a
	// cancel request): applied once the code has started.
	deferred []*engine.Event

	fault    error // nondeterminism, a panic or a deadlock: the run cannot go on
	finished bool
	result   []byte
	failure  error

	// DeadlockTimeout is passed to the dispatcher; 0 means its default.
	DeadlockTimeout time.Duration
	// Shadow marks an execution that replays a history only to look at the
	// state it reaches (an update's validation): nothing it does is ever
	// recorded, so IsReplaying reports true even past the history's last
	// decision, where the code would otherwise look live to loggers and
	// interceptors.
	Shadow bool

	// configured is the input of the last job_configured written before
	// the job's activation (a Draft job's new input), when there is one.
	configured *[]byte
}

// NewExecution returns an execution of job that will run entry when the
// history's job_created event is applied.
func NewExecution(job engine.JobID, entry Entry) *Execution {
	return &Execution{Job: job, entry: entry, cmds: map[string]*Command{}, open: map[string]*Command{},
		byStep: map[string][]*engine.Event{}}
}

// Dispatcher returns the dispatcher running the workflow's coroutines.
func (x *Execution) Dispatcher() *Dispatcher { return x.d }

// Now returns workflow time: the time of the history event being applied.
func (x *Execution) Now() time.Time { return time.UnixMilli(x.nowMS) }

// IsReplaying reports whether the code is re-executing decisions the
// history already holds: the events being applied were given as replayed,
// and the history records a step of the code further on. Past the last
// recorded step the code decides anew, even within a replayed stretch (a
// new run's first turn is live from its first event). A Shadow execution
// is always replaying.
func (x *Execution) IsReplaying() bool { return x.replaying || x.Shadow }

// LastSeq is the seq of the last history event applied.
func (x *Execution) LastSeq() uint64 { return x.lastSeq }

// HistoryBytes is the size of the payloads of the events applied.
func (x *Execution) HistoryBytes() int64 { return x.historyBytes }

// OnSignal installs the receiver of signal_received events.
func (x *Execution) OnSignal(fn func(name string, payload []byte)) { x.onSignal = fn }

// SetLocal keeps the SDK's per-execution state with the execution, so the
// worker can reach it (to answer queries) through the execution alone.
func (x *Execution) SetLocal(v any) { x.local = v }

// Local returns what SetLocal kept.
func (x *Execution) Local() any { return x.local }

// OnCancel installs what a cancel_requested event triggers.
func (x *Execution) OnCancel(fn func()) { x.onCancel = fn }

// Advance applies new history events in order (events at or below LastSeq
// are skipped, a gap is an error) and runs the workflow code after each, as
// far as it can go. replaying marks events that were in the history before
// this turn. The first nondeterminism, panic or deadlock stops the execution
// for good and is returned by this and every later call.
func (x *Execution) Advance(events []engine.Event, replaying bool) error {
	if x.fault != nil {
		return x.fault
	}
	start, expect := -1, x.lastSeq+1
	activated := x.d != nil // the code runs already: its input is settled
	for i := range events {
		ev := &events[i]
		if ev.Seq < expect && start < 0 {
			continue // already applied
		}
		// A Draft job configured before its activation runs with the new
		// input; the first stretch a run applies starts at seq 1, so it
		// holds every such event.
		switch {
		case ev.Type == engine.EventJobActivated || ev.Type == engine.EventJobCreated:
			activated = true // a created job runs at once: nothing configures it
		case ev.Type == engine.EventJobConfigured && !activated:
			in := ev.Payload
			x.configured = &in
		}
		if ev.Seq != expect {
			return fmt.Errorf("replay: job %d history jumps to seq %d where %d was due", x.Job, ev.Seq, expect)
		}
		if start < 0 {
			start = i
		}
		expect++
		// Index the whole new stretch before running code: the code may
		// issue a step whose record lies ahead of the event being applied.
		if step := stepOf(ev); step != "" {
			x.byStep[step] = append(x.byStep[step], ev)
			if !engine.IsActivityControlEvent(ev.Type) {
				x.frontier = ev.Seq
			}
		}
		if decidedByCode(ev.Type) {
			x.frontier = ev.Seq
		}
	}
	if start < 0 {
		return nil
	}
	for i := start; i < len(events); i++ {
		ev := &events[i]
		if ev.Type == engine.EventJobDrafted && x.configured != nil {
			// The job runs with the input configured before its activation.
			drafted := *ev
			drafted.Payload = *x.configured
			ev = &drafted
		}
		x.lastSeq, x.nowMS, x.replaying = ev.Seq, ev.AtMS, replaying && ev.Seq < x.frontier
		x.historyBytes += int64(len(ev.Payload))
		if x.heldBack && ev.Type == engine.EventJobLeased {
			// The hold is over: the code starts at the time of the lease
			// that ends it, then takes what came during the hold.
			x.heldBack = false
			if err := x.run(); err != nil {
				return err
			}
			for _, d := range x.deferred {
				if err := x.apply(d); err != nil {
					x.fault = err
					return err
				}
				if err := x.run(); err != nil {
					return err
				}
			}
			x.deferred = nil
		}
		if x.heldBack && !isHoldBack(ev) {
			held := *ev // the caller's slice may be reused before the lease comes
			x.deferred = append(x.deferred, &held)
			continue
		}
		if err := x.apply(ev); err != nil {
			x.fault = err
			return err
		}
		if (ev.Type == engine.EventJobCreated || ev.Type == engine.EventJobDrafted) && i+1 < len(events) && isHoldBack(&events[i+1]) {
			x.heldBack = true
		}
		if x.heldBack {
			continue
		}
		if err := x.run(); err != nil {
			return err
		}
	}
	return nil
}

// isHoldBack reports whether ev holds a new run back before it starts: the
// wait of a cron run for its time, or a start delay. The engine writes it
// right after the run's job_created, in the same command.
func isHoldBack(ev *engine.Event) bool {
	return ev.Type == engine.EventJobRequeued && (ev.Reason == engine.ReasonCronNext || ev.Reason == engine.ReasonStartDelay)
}

func (x *Execution) apply(ev *engine.Event) error {
	switch ev.Type {
	case engine.EventJobCreated, engine.EventJobDrafted:
		if x.d == nil {
			input := ev.Payload
			x.lastResult = ev.LastResult
			x.d = NewDispatcher(func() { x.entry(x, input) })
			x.d.DeadlockTimeout = x.DeadlockTimeout
		}
		return nil
	case engine.EventSignalReceived:
		if x.onSignal != nil {
			x.onSignal(ev.Name, ev.Payload)
		}
		return nil
	case engine.EventCancelRequested:
		if x.onCancel != nil {
			x.onCancel()
		}
		return nil
	case engine.EventWorkflowPaused, engine.EventWorkflowUnpaused:
		if ev.Name != engine.PauseParent {
			x.paused = ev.Type == engine.EventWorkflowPaused
			if !x.paused {
				x.unpausedSeq = ev.Seq
			}
		}
		return nil
	}
	step := stepOf(ev)
	if step == "" {
		return nil // status events and others that do not touch the code
	}
	cmd := x.cmds[step]
	if cmd == nil {
		return &NondeterminismError{Step: step, Event: ev, Did: "never issued this step"}
	}
	se := stepEvents[ev.Type]
	cmd.Recorded = true // issued live, its record has now come back through the history
	if se.role == roleRecord && cmd.OnRecord != nil {
		cmd.OnRecord(ev)
	}
	if se.role != roleRecord && !cmd.Resolved {
		cmd.Resolved = true
		delete(x.open, step)
		if cmd.resolve != nil {
			cmd.resolve(Resolution{Payload: ev.Payload, Failed: se.role == roleFail, Event: ev})
		}
	}
	return nil
}

func (x *Execution) run() error {
	if x.d == nil {
		return nil
	}
	if err := x.d.ExecuteUntilAllBlocked(); err != nil && x.fault == nil {
		x.fault = err
	}
	return x.fault
}

// Issue records a command the workflow code gives and returns it. It must be
// called from workflow code. When the history already holds events of the
// command's step, they must be of the same kind and name, or the execution
// stops with a NondeterminismError (and the calling coroutine blocks for
// good). resolve is called, on the worker's goroutine while no coroutine
// runs, when the command's result event is applied. opts, when not nil, must
// be options of kind (CommandOptions.CommandKind): other options are a bug
// of the SDK, and Issue panics.
func (x *Execution) Issue(kind CommandKind, name string, input []byte, opts CommandOptions, fireAt int64, resolve func(Resolution)) *Command {
	if opts != nil && opts.CommandKind() != kind {
		panic(fmt.Sprintf("replay: %T are options of %s commands, not of %s commands", opts, opts.CommandKind(), kind))
	}
	x.nextStep++
	return x.issue(strconv.FormatUint(x.nextStep, 10), kind, name, input, opts, fireAt, resolve)
}

func (x *Execution) issue(step string, kind CommandKind, name string, input []byte, opts CommandOptions, fireAt int64, resolve func(Resolution)) *Command {
	cmd := &Command{Step: step, Kind: kind, Name: name, Input: input, Options: opts, FireAt: fireAt, resolve: resolve,
		IssuedAtMS: x.nowMS, Where: callerOutsideSDK()}
	if rec := firstOwnRecord(x.byStep[step]); rec != nil {
		if stepEvents[rec.Type].kind != kind || (kind != KindTimer && rec.Name != name) {
			x.stop(&NondeterminismError{Step: step, Event: rec, Did: fmt.Sprintf("issued %s %q", kind, name), Where: cmd.Where})
		}
		cmd.Recorded = true
	}
	x.cmds[step] = cmd
	if kind != KindMarker {
		x.open[step] = cmd
	}
	return cmd
}

// firstOwnRecord returns the first of a step's records that the worker or
// the engine wrote for the command, skipping an operator's commands on the
// activity, which may come first and may not know its name; nil when
// there is none.
func firstOwnRecord(recs []*engine.Event) *engine.Event {
	for _, r := range recs {
		if !engine.IsActivityControlEvent(r.Type) {
			return r
		}
	}
	return nil
}

// RequestCancel marks cmd as cancelled by workflow code. It must be called
// from workflow code; a command whose result was applied already is left
// alone. What the cancellation does is the worker's: see CancelRequested.
func (x *Execution) RequestCancel(cmd *Command) {
	if !cmd.Resolved {
		cmd.CancelRequested = true
	}
}

// stop ends the execution with err from inside workflow code: the calling
// coroutine blocks for good and Advance reports err.
func (x *Execution) stop(err error) {
	if x.fault == nil {
		x.fault = err
	}
	x.d.Block(func() bool { return false })
}

// Marker records a value the workflow computes once and must see the same
// on every replay (a side effect). On replay it returns the recorded value;
// live, it calls compute and queues a marker event for the worker to append
// (DrainMarkers) before the workflow's next write.
func (x *Execution) Marker(name string, compute func() ([]byte, error)) ([]byte, error) {
	cmd := x.Issue(KindMarker, name, nil, nil, 0, nil)
	return x.marker(cmd, compute)
}

func (x *Execution) marker(cmd *Command, compute func() ([]byte, error)) ([]byte, error) {
	if cmd.Recorded {
		cmd.Resolved = true
		return x.byStep[cmd.Step][0].Payload, nil
	}
	v, err := compute()
	if err != nil {
		return nil, err
	}
	cmd.Resolved, cmd.Recorded = true, true
	x.markers = append(x.markers, engine.NewEvent{Type: engine.EventMarkerRecorded, Step: cmd.Step, Name: cmd.Name, Payload: v})
	return v, nil
}

// KeyedMarker is Marker under a step named by key rather than by the step
// counter, for markers that later code versions may add or remove without
// shifting the steps of everything after them (GetVersion). It reports
// whether a value was recorded or computed; when the history has no such
// marker and the events being applied are replayed ones, nothing is
// computed: the code reached this point before the marker existed.
func (x *Execution) KeyedMarker(key, name string, compute func() ([]byte, error)) ([]byte, bool, error) {
	step := "k:" + key
	if prev := x.cmds[step]; prev != nil && prev.Resolved {
		return x.byStepPayload(step, prev), true, nil
	}
	if len(x.byStep[step]) == 0 && x.replaying {
		return nil, false, nil
	}
	cmd := x.issue(step, KindMarker, name, nil, nil, 0, nil)
	v, err := x.marker(cmd, compute)
	return v, err == nil, err
}

// HasKeyedMarker reports whether the history holds the keyed marker key.
func (x *Execution) HasKeyedMarker(key string) bool { return len(x.byStep["k:"+key]) > 0 }

func (x *Execution) byStepPayload(step string, cmd *Command) []byte {
	if recs := x.byStep[step]; len(recs) > 0 {
		return recs[0].Payload
	}
	for _, m := range x.markers {
		if m.Step == step {
			return m.Payload
		}
	}
	return nil
}

// DrainMarkers returns the marker events recorded live since the last call.
func (x *Execution) DrainMarkers() []engine.NewEvent {
	m := x.markers
	x.markers = nil
	return m
}

// Unresolved returns the commands whose result has not been applied, in step
// order: the worker's to-do list. Recorded ones happened before (an inline
// activity's failed tries, a scheduled timer or child): they must not be
// issued to the engine again, only waited for, resumed or caught up.
func (x *Execution) Unresolved() []*Command {
	out := make([]*Command, 0, len(x.open))
	for _, c := range x.open {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return stepLess(out[i].Step, out[j].Step) })
	return out
}

// Records returns the history events of a step, in seq order.
func (x *Execution) Records(step string) []*engine.Event { return x.byStep[step] }

func stepLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// Finish records the workflow's end. The SDK's Entry calls it once, from
// the root coroutine, when the workflow function returns.
func (x *Execution) Finish(result []byte, err error) {
	x.finished, x.result, x.failure = true, result, err
}

// Finished reports whether the workflow function returned, with its result
// or error.
func (x *Execution) Finished() (done bool, result []byte, err error) {
	return x.finished, x.result, x.failure
}

// Paused reports whether the events applied so far leave the run paused
// by an operator (workflow_paused): its worker starts nothing more and ends
// the turn. The code itself does not see it.
func (x *Execution) Paused() bool { return x.paused }

// UnpausedSeq returns the seq of the last unpause of the run applied so
// far (0: none).
func (x *Execution) UnpausedSeq() uint64 { return x.unpausedSeq }

// Fault returns the error that stopped the execution, if any.
func (x *Execution) Fault() error { return x.fault }

// Close ends the coroutines; the execution cannot be used afterwards.
func (x *Execution) Close() {
	if x.d != nil {
		x.d.Close()
	}
}

// callerOutsideSDK names the first frame of workflow code above the SDK, so
// a nondeterminism report points at the user's line.
func callerOutsideSDK() string {
	pcs := make([]uintptr, 32)
	n := runtime.Callers(3, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		inSDK := strings.HasPrefix(f.Function, "github.com/heddlewf/heddle/replay.") ||
			strings.HasPrefix(f.Function, "github.com/heddlewf/heddle/sdk/")
		if !inSDK || strings.HasSuffix(f.File, "_test.go") {
			return fmt.Sprintf("%s:%d", f.File, f.Line)
		}
		if !more {
			return ""
		}
	}
}

// decidedByCode reports status events that record a decision of the
// workflow code: blocking (job_waiting) and ending.
func decidedByCode(t engine.EventType) bool {
	switch t {
	case engine.EventJobWaiting, engine.EventJobCompleted, engine.EventJobFailed, engine.EventJobCancelled:
		return true
	}
	return false
}
