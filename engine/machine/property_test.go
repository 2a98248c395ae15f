package machine_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// The property test drives Apply with thousands of random command sequences
// and checks every command against a reference model written from the
// documented semantics (docs/state-machines.md and the doc comments of the
// commands), plus properties that need no model: errors are sentinel errors,
// failed commands write nothing, request ids replay, fencing admits at most
// one attempt per job, blocked jobs are never reclaimed, and Verify finds
// nothing wrong with the store.
//
// Every failure names its seed. Replay one with
//
//	go test ./engine -run TestPropertyRandomCommands -property.seed=S -v

var propertySeed = flag.Int64("property.seed", 0,
	"run TestPropertyRandomCommands for this one seed only (0: the default seeds 1..N)")

const (
	propDefaultSeeds = 30 // seeds 1..30, one in-memory store each
	propSeqsPerSeed  = 10 // random sequences per seed, applied to the same store
	propCmdsPerSeq   = 60 // commands per sequence
	propFullEvery    = 1  // the first sequence of each seed is fully checked after every command
)

func TestPropertyRandomCommands(t *testing.T) {
	seeds := make([]int64, 0, propDefaultSeeds)
	for s := int64(1); s <= propDefaultSeeds; s++ {
		seeds = append(seeds, s)
	}
	seqs := propSeqsPerSeed
	if testing.Short() {
		seeds = seeds[:5]
	}
	if *propertySeed != 0 {
		seeds = []int64{*propertySeed}
	}
	seen := &meterSeen{}
	if *propertySeed == 0 && !testing.Short() {
		// Once every seed ran (parallel subtests end before cleanups).
		t.Cleanup(func() { seen.check(t, "jobs", "closed", "late", "reclaimed", "transition") })
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel() // each seed has its own store; its run is deterministic
			t.Logf("seed %d (replay: go test ./engine -run TestPropertyRandomCommands -property.seed=%d -v)", seed, seed)
			runPropertySeed(t, seed, seqs, seen)
		})
	}
}

// propSentinels are the errors every refusal of Apply must match.
var propSentinels = []error{engine.ErrStaleAttempt, engine.ErrUnknownJob, engine.ErrIllegalTransition, engine.ErrInvalidCommand,
	engine.ErrPayloadTooLarge, engine.ErrWorkflowExists, engine.ErrJobClosed, engine.ErrStepCommitted,
	engine.ErrStepState, engine.ErrNoResource, engine.ErrDependencyFailed, engine.ErrUnknownResource, engine.ErrResourceExists, engine.ErrResourceBusy}

func propMatchesSentinel(err error, extra ...error) bool {
	for _, s := range slices.Concat(propSentinels, extra) {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// propBogusCmd is a command of a kind Apply does not know.
type propBogusCmd struct{ engine.Header }

func (*propBogusCmd) Kind() engine.CommandKind   { return 99 }
func (*propBogusCmd) Check(*engine.Limits) error { return nil }

// ---------------------------------------------------------------------------
// The specification's transition table (docs/state-machines.md §1 and §4, with the
// project's extensions: cancel from Queued/Retrying, and the engine-owned
// ends job_timed_out and job_terminated from every status that is not an
// end), written out again here so that the engine's table is checked against
// the document, not itself.

var propSpecTable = map[engine.Status]map[engine.EventType]engine.Status{
	engine.StatusNone: {engine.EventJobCreated: engine.StatusQueued, engine.EventJobQueued: engine.StatusQueued,
		engine.EventJobRequeued: engine.StatusQueued, engine.EventJobDrafted: engine.StatusDraft},
	engine.StatusQueued: {engine.EventJobRequeued: engine.StatusQueued, engine.EventJobLeased: engine.StatusRunning, engine.EventJobRunning: engine.StatusRunning,
		engine.EventWaitCompleted: engine.StatusQueued, engine.EventJobCancelled: engine.StatusCancelled, engine.EventJobSuspended: engine.StatusSuspended,
		engine.EventJobTimedOut: engine.StatusTimedOut, engine.EventJobTerminated: engine.StatusTerminated},
	engine.StatusRunning: {engine.EventJobRequeued: engine.StatusQueued, engine.EventJobWaiting: engine.StatusWaiting, engine.EventWaitCompleted: engine.StatusQueued,
		engine.EventJobCompleted: engine.StatusCompleted, engine.EventJobFailed: engine.StatusFailed, engine.EventJobCancelled: engine.StatusCancelled,
		engine.EventJobSuspended: engine.StatusSuspended, engine.EventJobTimedOut: engine.StatusTimedOut, engine.EventJobTerminated: engine.StatusTerminated},
	engine.StatusWaiting: {engine.EventWaitCompleted: engine.StatusQueued, engine.EventJobCancelled: engine.StatusCancelled, engine.EventJobSuspended: engine.StatusSuspended,
		engine.EventJobTimedOut: engine.StatusTimedOut, engine.EventJobTerminated: engine.StatusTerminated},
	engine.StatusParked: {engine.EventWaitCompleted: engine.StatusQueued, engine.EventJobCancelled: engine.StatusCancelled, engine.EventJobSuspended: engine.StatusSuspended,
		engine.EventJobTimedOut: engine.StatusTimedOut, engine.EventJobTerminated: engine.StatusTerminated},
	engine.StatusRetrying: {engine.EventJobRequeued: engine.StatusQueued, engine.EventJobLeased: engine.StatusRunning, engine.EventJobRunning: engine.StatusRunning,
		engine.EventWaitCompleted: engine.StatusQueued, engine.EventJobCancelled: engine.StatusCancelled, engine.EventJobSuspended: engine.StatusSuspended,
		engine.EventJobTimedOut: engine.StatusTimedOut, engine.EventJobTerminated: engine.StatusTerminated},
	engine.StatusCompleted:  {},
	engine.StatusFailed:     {engine.EventJobRequeued: engine.StatusQueued},
	engine.StatusCancelled:  {},
	engine.StatusTimedOut:   {},
	engine.StatusTerminated: {},
	engine.StatusDraft: {engine.EventJobActivated: engine.StatusQueued, engine.EventJobSuspended: engine.StatusSuspended, engine.EventJobCancelled: engine.StatusCancelled,
		engine.EventJobTimedOut: engine.StatusTimedOut, engine.EventJobTerminated: engine.StatusTerminated},
	engine.StatusSuspended: {engine.EventJobResumed: engine.StatusQueued, engine.EventJobCancelled: engine.StatusCancelled,
		engine.EventJobTimedOut: engine.StatusTimedOut, engine.EventJobTerminated: engine.StatusTerminated},
}

var propSpecStatusEvents = []engine.EventType{
	engine.EventJobCreated, engine.EventJobQueued, engine.EventJobRequeued, engine.EventJobLeased, engine.EventJobRunning,
	engine.EventJobWaiting, engine.EventWaitCompleted, engine.EventJobCompleted, engine.EventJobFailed, engine.EventJobCancelled,
	engine.EventJobDrafted, engine.EventJobActivated, engine.EventJobSuspended, engine.EventJobResumed,
	engine.EventJobTimedOut, engine.EventJobTerminated,
}

func propIsStatus(t engine.EventType) bool { return slices.Contains(propSpecStatusEvents, t) }

// propIsEngineOwned lists the non-status events only the engine writes.
func propIsEngineOwned(t engine.EventType) bool {
	return slices.Contains([]engine.EventType{"signal_received", "timer_fired", "step_committed", "cancel_requested", "effect_recorded"}, t)
}

func propTerminal(s engine.Status) bool {
	return s == engine.StatusCompleted || s == engine.StatusFailed || s == engine.StatusCancelled || s == engine.StatusTimedOut || s == engine.StatusTerminated
}

// propSpecNext is the documented Next: the table's cell, refined to Parked by a
// parked wait and to Retrying by a delayed requeue.
func propSpecNext(from engine.Status, ev *engine.Event) (engine.Status, bool) {
	if !propIsStatus(ev.Type) {
		return from, true
	}
	to, ok := propSpecTable[from][ev.Type]
	if !ok {
		return from, false
	}
	if to == engine.StatusWaiting && ev.Wait != nil && ev.Wait.Park {
		to = engine.StatusParked
	}
	if to == engine.StatusQueued && ev.Type == engine.EventJobRequeued && ev.DelayMS > 0 {
		to = engine.StatusRetrying
	}
	return to, true
}

// ---------------------------------------------------------------------------
// The reference model.

const (
	propMaxPayload  = 1 << 20
	propMaxName     = 256
	propMaxEvents   = 1000
	propMaxBatch    = 1000
	propMaxLeaseMS  = 3600_000
	propRetentionMS = 3600_000
	propPruneBatch  = machine.RequestPruneBatch
	propUnknownCode = "unknown_job"
)

type propJob struct {
	ID              engine.JobID
	WF, Type, Queue string
	Input           []byte
	Status          engine.Status
	Attempt         uint64
	Owner           string
	LeaseExp        int64
	// Token is the current attempt's lease token ("" for a claim without a
	// nonce), kept while the attempt runs or waits.
	Token               string
	ReadyAt, ReleaseAt  int64
	Wait                *engine.WaitSpec
	Timers              []engine.Timer
	Retries             uint32
	Parent              engine.JobID
	ParentStep          string
	ParentClose         engine.ParentClosePolicy
	CancelReq           bool
	CreatedMS, ClosedMS int64
	Events              []engine.Event
	Effects             map[string]*engine.Effect
	// The deadlines (execution, run, schedule-to-start) and the time of the
	// job's entry in the deadline index.
	Deadline, RunDeadline, StartDeadline, TimeoutAt int64
	RunTimeout                                      int64
	// Deferrals by claimers that do not run the job's type.
	Deferrals     uint32
	DeferReason   string
	DeferredUntil int64
}

type propReq struct {
	at   int64
	kind engine.CommandKind
	res  engine.Result
	body []byte // the command's msgpack with NowMS and By cleared
}

type propModel struct {
	jobs    []*propJob
	wfs     map[string]engine.JobID   // workflow id -> newest run
	byWF    map[string][]engine.JobID // workflow id -> every run
	reqs    map[string]*propReq
	lastNow int64
	now     int64
	// touched lists the jobs the current command changed, with their last
	// seq before it.
	touched    map[engine.JobID]uint64
	touchOrder []engine.JobID
	// wrote: the current command writes something (then, and only then,
	// it also records its Now as the latest).
	wrote bool
	// leases and timers model the swept indexes: every entry a record ever
	// implied, until the sweep that reaches its time removes it (entries the
	// record no longer needs stay behind, stale).
	leases    map[propDue]bool
	timers    map[propDue]bool
	deadlines map[propDue]bool
}

func newPropModel() *propModel {
	return &propModel{wfs: map[string]engine.JobID{}, byWF: map[string][]engine.JobID{}, reqs: map[string]*propReq{},
		leases: map[propDue]bool{}, timers: map[propDue]bool{}, deadlines: map[propDue]bool{}}
}

// noteSwept places the changed jobs' deadline entries and adds the lease,
// timer and deadline entries they now imply.
func (m *propModel) noteSwept() {
	for _, id := range m.touchOrder {
		j := m.job(id)
		m.armDeadline(j)
		if j.TimeoutAt > 0 {
			m.deadlines[propDue{at: j.TimeoutAt, job: j}] = true
		}
		if j.Status == engine.StatusRunning {
			m.leases[propDue{at: j.LeaseExp, job: j}] = true
		}
		for _, t := range j.Timers {
			m.timers[propDue{at: t.FireMS, job: j, tid: t.ID}] = true
		}
	}
}

// dueEntries removes and returns, oldest first, up to max entries of set due
// by now, setting res.More when more were due.
func (m *propModel) dueEntries(set map[propDue]bool, max int, res *engine.SweepResult) []propDue {
	var dues []propDue
	for d := range set {
		if d.at <= m.now {
			dues = append(dues, d)
		}
	}
	propSortDues(dues)
	dues = propCapDues(dues, max, res)
	for _, d := range dues {
		delete(set, d)
	}
	if len(dues) > 0 {
		m.wrote = true
	}
	return dues
}

// nextDeadline is the documented earliest deadline of an open job, with the
// reason its passing records (ties: schedule-to-start, execution, run).
func propNextDeadline(j *propJob) (int64, string) {
	if propTerminal(j.Status) {
		return 0, ""
	}
	at, reason := int64(0), ""
	for _, d := range []struct {
		at     int64
		reason string
	}{{j.StartDeadline, engine.ReasonScheduleToStart}, {j.Deadline, engine.ReasonExecutionTimeout}, {j.RunDeadline, engine.ReasonRunTimeout}} {
		if d.at > 0 && (at == 0 || d.at < at) {
			at, reason = d.at, d.reason
		}
	}
	return at, reason
}

// armDeadline places j's deadline entry: at its earliest deadline, never
// below now, following that deadline when it moves unless the entry is
// already due.
func (m *propModel) armDeadline(j *propJob) {
	next, _ := propNextDeadline(j)
	switch t := j.TimeoutAt; {
	case next == 0:
		j.TimeoutAt = 0
	case t == 0 || next > t || (next < t && t > m.now):
		j.TimeoutAt = max(next, m.now)
	}
}

func (m *propModel) job(id engine.JobID) *propJob {
	if id == 0 || int(id) > len(m.jobs) {
		return nil
	}
	return m.jobs[id-1]
}

func (m *propModel) touch(j *propJob) {
	m.wrote = true
	if _, ok := m.touched[j.ID]; !ok {
		m.touched[j.ID] = uint64(len(j.Events))
		m.touchOrder = append(m.touchOrder, j.ID)
	}
}

// apply predicts cmd: its result or the sentinel error it must fail with, and
// whether the result is the replay of a recorded request. The model changes
// only when the command succeeds.
func (m *propModel) apply(cmd engine.Command) (res engine.Result, err error, replay bool) {
	m.touched, m.touchOrder, m.wrote = map[engine.JobID]uint64{}, nil, false
	if err := propValidate(cmd); err != nil {
		return nil, err, false
	}
	h := cmd.Head()
	if h.RequestID != "" {
		if r, ok := m.reqs[h.RequestID]; ok {
			// Another kind, or the same kind with another body, is a
			// conflict; only the same command is answered from the record.
			if r.kind != cmd.Kind() || !bytes.Equal(r.body, propBody(cmd)) {
				return nil, engine.ErrRequestConflict, false
			}
			return r.res, nil, true
		}
	}
	m.now = max(m.lastNow, h.NowMS)
	res, err = m.dispatch(cmd)
	if err != nil {
		if len(m.touched) > 0 {
			panic(fmt.Sprintf("model bug: %s failed after changing jobs %v", cmd.Kind(), m.touchOrder))
		}
		return nil, err, false
	}
	m.noteSwept()
	// A request id is used up only by a command that wrote something, and
	// never by a claim that took no job (even if it deferred some).
	if cr, ok := res.(*engine.ClaimResult); h.RequestID != "" && m.wrote && (!ok || len(cr.Jobs) > 0) {
		m.record(h.RequestID, cmd.Kind(), res, propBody(cmd))
	}
	if m.wrote {
		m.lastNow = m.now
	}
	return res, nil, false
}

// record keeps a request's result and, on the command's prune turn (one
// command in eight, by its request id and time), prunes the oldest expired
// records.
func (m *propModel) record(rid string, kind engine.CommandKind, res engine.Result, body []byte) {
	m.reqs[rid] = &propReq{at: m.now, kind: kind, res: res, body: body}
	if !machine.PruneTurn(rid, m.now) {
		return
	}
	type aged struct {
		at  int64
		rid string
	}
	var exp []aged
	for id, r := range m.reqs {
		if r.at < m.now-propRetentionMS {
			exp = append(exp, aged{r.at, id})
		}
	}
	sort.Slice(exp, func(i, k int) bool {
		if exp[i].at != exp[k].at {
			return exp[i].at < exp[k].at
		}
		return exp[i].rid < exp[k].rid
	})
	if len(exp) > propPruneBatch {
		exp = exp[:propPruneBatch]
	}
	for _, e := range exp {
		delete(m.reqs, e.rid)
	}
}

// propBody is the body a request id's record names: the command's msgpack
// with the header's NowMS and By cleared, on a copy.
func propBody(cmd engine.Command) []byte {
	b, err := msgpack.Marshal(cmd)
	if err != nil {
		panic(err)
	}
	c, _ := engine.NewCommand(cmd.Kind())
	if err := msgpack.Unmarshal(b, c); err != nil {
		panic(err)
	}
	c.Head().NowMS, c.Head().By = 0, ""
	if b, err = msgpack.Marshal(c); err != nil {
		panic(err)
	}
	return b
}

// propValidate is the documented field validation (command.go, limits.go).
func propValidate(cmd engine.Command) error {
	var err error
	fail := func(e error) {
		if err == nil {
			err = e
		}
	}
	name := func(v string, required bool) {
		switch {
		case required && v == "":
			fail(engine.ErrInvalidCommand)
		case len(v) > propMaxName:
			fail(engine.ErrPayloadTooLarge)
		}
	}
	payload := func(b []byte) {
		if len(b) > propMaxPayload {
			fail(engine.ErrPayloadTooLarge)
		}
	}
	batch := func(n int) {
		switch {
		case n <= 0:
			fail(engine.ErrInvalidCommand)
		case n > propMaxBatch:
			fail(engine.ErrPayloadTooLarge)
		}
	}
	lease := func(ms int64) {
		if ms <= 0 || ms > propMaxLeaseMS {
			fail(engine.ErrInvalidCommand)
		}
	}
	ref := func(r engine.LeaseRef) {
		if r.Job == 0 || r.Attempt == 0 {
			fail(engine.ErrInvalidCommand)
		}
	}
	target := func(t engine.Target) {
		if t.Job == 0 && t.WorkflowID == "" {
			fail(engine.ErrInvalidCommand)
		}
		name(t.WorkflowID, false)
	}
	userEvent := func(t engine.EventType) {
		name(string(t), true)
		if propIsStatus(t) || propIsEngineOwned(t) {
			fail(engine.ErrInvalidCommand)
		}
	}
	h := cmd.Head()
	name(h.RequestID, false)
	if h.NowMS <= 0 {
		fail(engine.ErrInvalidCommand)
	}
	switch c := cmd.(type) {
	case *engine.CreateJob:
		name(c.WorkflowID, false)
		name(c.Type, true)
		name(c.Queue, true)
		payload(c.Input)
		if c.ReusePolicy > engine.IDReuseReturnExisting {
			fail(engine.ErrInvalidCommand)
		}
		name(c.ParentStep, c.ParentID != 0)
		if r := c.Retry; r != nil && (r.InitialIntervalMS < 0 || r.MaximumIntervalMS < 0 || r.MaximumAttempts < 0 ||
			!(r.BackoffCoefficient >= 0) || math.IsInf(r.BackoffCoefficient, 1)) {
			fail(engine.ErrInvalidCommand)
		}
		for _, d := range []int64{c.ExecutionTimeoutMS, c.RunTimeoutMS, c.ScheduleToStartTimeoutMS} {
			if d < 0 || d > 100*365*24*3600*1000 {
				fail(engine.ErrInvalidCommand)
			}
		}
		if c.ParentID == 0 && c.ParentStep != "" {
			fail(engine.ErrInvalidCommand)
		}
		legacy := c.ParentID != 0 && c.ParentLease == nil && len(c.Nonce) == 0 // an old log's create
		if pl := c.ParentLease; !legacy && ((c.ParentID == 0) != (pl == nil) || pl != nil && (pl.Job != c.ParentID || pl.Attempt == 0)) {
			fail(engine.ErrInvalidCommand)
		}
	case *engine.Claim:
		name(c.Queue, true)
		name(c.Owner, true)
		batch(c.Max)
		lease(c.LeaseMS)
		if len(c.Types) > propMaxBatch {
			fail(engine.ErrPayloadTooLarge)
		}
		for _, t := range c.Types {
			name(t, true)
		}
		if c.TailEvents < 0 || c.TailEvents > engine.MaxTailEvents {
			fail(engine.ErrInvalidCommand)
		}
	case *engine.Heartbeat:
		batch(len(c.Leases))
		for _, r := range c.Leases {
			ref(r)
		}
		lease(c.LeaseMS)
	case *engine.AppendEvents:
		ref(c.LeaseRef)
		if len(c.Events) == 0 {
			fail(engine.ErrInvalidCommand)
		} else if len(c.Events) > propMaxEvents {
			fail(engine.ErrPayloadTooLarge)
		}
		for _, e := range c.Events {
			userEvent(e.Type)
			name(e.Step, false)
			name(e.Name, false)
			payload(e.Payload)
		}
	case *engine.CommitStep:
		ref(c.LeaseRef)
		name(c.Step, true)
		userEvent(c.Type)
		payload(c.Payload)
		if c.CatchUp && len(c.Payload) > 0 {
			fail(engine.ErrInvalidCommand)
		}
	case *engine.Wait:
		ref(c.LeaseRef)
		s := c.Spec
		if s.TimerAtMS == 0 && len(s.Signals) == 0 && len(s.Steps) == 0 {
			fail(engine.ErrInvalidCommand)
		}
		if s.TimerAtMS < 0 {
			fail(engine.ErrInvalidCommand)
		}
		name(s.TimerID, s.TimerAtMS > 0)
		if s.TimerAtMS == 0 && s.TimerID != "" {
			fail(engine.ErrInvalidCommand)
		}
		if len(s.Signals)+len(s.Steps) > propMaxBatch {
			fail(engine.ErrPayloadTooLarge)
		}
		for _, v := range append(append([]string(nil), s.Signals...), s.Steps...) {
			name(v, true)
		}
		// The generator gives a Wait events only to forge one the engine
		// owns, which the model then refuses; it never models their append.
		for _, e := range c.Events {
			userEvent(e.Type)
		}
	case *engine.Signal:
		target(c.Target)
		name(c.Name, true)
		payload(c.Payload)
	case *engine.FireTimers:
		batch(c.Max)
	case *engine.Reclaim:
		batch(c.Max)
	case *engine.ReleaseDelayed:
		batch(c.Max)
	case *engine.ExpireDeadlines:
		batch(c.Max)
	case *engine.Cancel:
		target(c.Target)
		name(c.Reason, false)
	case *engine.Terminate:
		target(c.Target)
		name(c.Reason, false)
	case *engine.Activate:
		target(c.Target)
	case *engine.Suspend:
		target(c.Target)
		name(c.Reason, false)
	case *engine.Resume:
		target(c.Target)
	case *engine.Complete:
		ref(c.LeaseRef)
		payload(c.Result)
	case *engine.Fail:
		ref(c.LeaseRef)
		payload(c.Error)
	case *engine.Requeue:
		if c.Job == 0 {
			fail(engine.ErrInvalidCommand)
		}
		if c.DelayMS < 0 {
			fail(engine.ErrInvalidCommand)
		}
		name(c.Reason, false)
	default:
		return engine.ErrUnknownCommand
	}
	return err
}

func (m *propModel) dispatch(cmd engine.Command) (engine.Result, error) {
	switch c := cmd.(type) {
	case *engine.CreateJob:
		return m.create(c)
	case *engine.Claim:
		return m.claim(c)
	case *engine.Heartbeat:
		return m.heartbeat(c)
	case *engine.AppendEvents:
		return m.appendEvents(c)
	case *engine.CommitStep:
		return m.commitStep(c)
	case *engine.Wait:
		return m.wait(c)
	case *engine.Signal:
		return m.signal(c)
	case *engine.FireTimers:
		return m.fireTimers(c)
	case *engine.Reclaim:
		return m.reclaim(c)
	case *engine.ReleaseDelayed:
		return m.release(c)
	case *engine.ExpireDeadlines:
		return m.expire(c)
	case *engine.Terminate:
		return m.lifecycle(c.Target, engine.Event{Type: engine.EventJobTerminated, Reason: c.Reason, Payload: propTerminatedPayload(c.Reason)})
	case *engine.Cancel:
		return m.lifecycle(c.Target, engine.Event{Type: engine.EventJobCancelled, Reason: c.Reason})
	case *engine.Activate:
		return m.lifecycle(c.Target, engine.Event{Type: engine.EventJobActivated})
	case *engine.Suspend:
		return m.lifecycle(c.Target, engine.Event{Type: engine.EventJobSuspended, Reason: c.Reason})
	case *engine.Resume:
		return m.lifecycle(c.Target, engine.Event{Type: engine.EventJobResumed})
	case *engine.Complete:
		return m.finish(c.LeaseRef, engine.Event{Type: engine.EventJobCompleted, Payload: c.Result})
	case *engine.Fail:
		return m.finish(c.LeaseRef, engine.Event{Type: engine.EventJobFailed, Payload: c.Error})
	case *engine.Requeue:
		return m.requeue(c)
	}
	return nil, engine.ErrUnknownCommand
}

// legal reports whether ev may be appended to j.
func (m *propModel) legal(j *propJob, ev engine.Event) bool {
	_, ok := propSpecNext(j.Status, &ev)
	return ok
}

// appendEv appends ev to j's history and moves j to the status it leads to.
// The caller has checked legality.
func (m *propModel) appendEv(j *propJob, ev engine.Event) uint64 {
	to, ok := propSpecNext(j.Status, &ev)
	if !ok {
		panic(fmt.Sprintf("model bug: %s illegal in %s", ev.Type, j.Status))
	}
	m.touch(j)
	ev.Seq = uint64(len(j.Events)) + 1
	ev.AtMS = m.now
	j.Events = append(j.Events, ev)
	if propIsStatus(ev.Type) {
		m.enter(j, to, &ev)
	}
	return ev.Seq
}

// propSatAdd is a+b without wrapping: a delay that runs past the end of time
// never ends.
func propSatAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func (m *propModel) enter(j *propJob, to engine.Status, ev *engine.Event) {
	j.Status = to
	j.Owner, j.LeaseExp, j.ReadyAt, j.ReleaseAt, j.DeferredUntil, j.Wait = "", 0, 0, 0, 0, nil
	if to != engine.StatusWaiting && to != engine.StatusParked {
		j.Token = ""
	}
	switch to {
	case engine.StatusQueued:
		j.ReadyAt = m.now
	case engine.StatusRunning:
		j.Owner, j.LeaseExp = ev.Name, ev.LeaseExpiryMS
	case engine.StatusRetrying:
		j.ReleaseAt = propSatAdd(m.now, ev.DelayMS)
	case engine.StatusWaiting, engine.StatusParked:
		w := *ev.Wait
		j.Wait = &w
	case engine.StatusCompleted, engine.StatusFailed, engine.StatusCancelled, engine.StatusTimedOut, engine.StatusTerminated:
		j.ClosedMS = m.now
		j.Timers = nil
	}
}

func (m *propModel) resolve(t engine.Target) (*propJob, error) {
	if t.Job != 0 {
		if j := m.job(t.Job); j != nil {
			return j, nil
		}
		return nil, engine.ErrUnknownJob
	}
	id, ok := m.wfs[t.WorkflowID]
	if !ok {
		return nil, engine.ErrUnknownJob
	}
	return m.job(id), nil
}

func (m *propModel) fenced(ref engine.LeaseRef) (*propJob, error) {
	j := m.job(ref.Job)
	if j == nil {
		return nil, engine.ErrUnknownJob
	}
	if j.Status != engine.StatusRunning || j.Attempt != ref.Attempt || j.Token != ref.Token {
		return nil, engine.ErrStaleAttempt
	}
	return j, nil
}

func (m *propModel) create(c *engine.CreateJob) (engine.Result, error) {
	if c.ParentID != 0 && (c.ParentLease != nil || len(c.Nonce) > 0) {
		// Only the holder of the parent's lease starts its children.
		if _, err := m.fenced(*c.ParentLease); err != nil {
			return nil, err
		}
	}
	if c.WorkflowID != "" {
		if id, ok := m.wfs[c.WorkflowID]; ok {
			cur := m.job(id)
			open := !propTerminal(cur.Status)
			switch c.ReusePolicy {
			case engine.IDReuseRejectDuplicate:
				return nil, engine.ErrWorkflowExists
			case engine.IDReuseReturnExisting:
				if open && cur.Type == c.Type && cur.Queue == c.Queue && bytes.Equal(cur.Input, c.Input) {
					return &engine.CreateResult{Job: cur.ID, WorkflowID: cur.WF, Existing: true}, nil
				}
			}
			if open {
				return nil, engine.ErrWorkflowExists
			}
		}
	}
	if c.ParentID != 0 {
		p := m.job(c.ParentID)
		if p == nil {
			return nil, engine.ErrUnknownJob
		}
		if propTerminal(p.Status) {
			return nil, engine.ErrJobClosed
		}
	}

	id := engine.JobID(len(m.jobs) + 1)
	wf := c.WorkflowID
	if wf == "" {
		// "job-<id>", or "job-<id>.<n>" when a user took that name.
		wf = fmt.Sprintf("job-%d", id)
		for n := 1; m.byWF[wf] != nil; n++ {
			wf = fmt.Sprintf("job-%d.%d", id, n)
		}
	}
	j := &propJob{ID: id, WF: wf, Type: c.Type, Queue: c.Queue, Input: c.Input, Parent: c.ParentID,
		ParentStep: c.ParentStep, ParentClose: c.ParentClosePolicy, CreatedMS: m.now, Effects: map[string]*engine.Effect{}}
	at := func(d int64) int64 {
		if d == 0 {
			return 0
		}
		return m.now + d
	}
	j.Deadline, j.RunDeadline, j.StartDeadline = at(c.ExecutionTimeoutMS), at(c.RunTimeoutMS), at(c.ScheduleToStartTimeoutMS)
	j.RunTimeout = c.RunTimeoutMS
	m.jobs = append(m.jobs, j)
	ev := engine.Event{Type: engine.EventJobCreated, Name: c.Type, Payload: c.Input}
	if c.Draft {
		ev.Type = engine.EventJobDrafted
	}
	m.appendEv(j, ev)
	m.wfs[wf] = id
	m.byWF[wf] = append(m.byWF[wf], id)
	return &engine.CreateResult{Job: id, WorkflowID: wf}, nil
}

func (m *propModel) claim(c *engine.Claim) (engine.Result, error) {
	var ready []*propJob
	for _, j := range m.jobs {
		if j.Status == engine.StatusQueued && j.DeferredUntil == 0 && j.Queue == c.Queue {
			ready = append(ready, j)
		}
	}
	sort.Slice(ready, func(a, b int) bool {
		if ready[a].ReadyAt != ready[b].ReadyAt {
			return ready[a].ReadyAt < ready[b].ReadyAt
		}
		return ready[a].ID < ready[b].ID
	})
	// In ready order: a job of a type the claimer runs is taken, another is
	// passed over (deferred), until Max are taken or engine.MaxDeferralsPerClaim
	// passed over.
	var take, pass []*propJob
	for _, j := range ready {
		if len(take) == c.Max || len(pass) == engine.MaxDeferralsPerClaim {
			break
		}
		if len(c.Types) == 0 || slices.Contains(c.Types, j.Type) {
			take = append(take, j)
		} else {
			pass = append(pass, j)
		}
	}
	res := &engine.ClaimResult{}
	for _, j := range take {
		j.Attempt++
		token := machine.LeaseToken(c.Nonce, "job", uint64(j.ID), j.Attempt)
		seq := m.appendEv(j, engine.Event{Type: engine.EventJobLeased, Attempt: j.Attempt, Name: c.Owner, LeaseExpiryMS: m.now + c.LeaseMS, TokenIssued: token != ""})
		j.Token = token
		j.Deferrals, j.DeferReason, j.StartDeadline = 0, "", 0
		cj := engine.ClaimedJob{Job: j.ID, WorkflowID: j.WF, Type: j.Type, Attempt: j.Attempt,
			LeaseExpiryMS: j.LeaseExp, LeaseToken: token, LastSeq: seq, DeadlineMS: j.Deadline, ParentID: j.Parent, RunAttempt: 1}
		if p := m.job(j.Parent); p != nil {
			cj.ParentWorkflowID = p.WF
		}
		res.Jobs = append(res.Jobs, cj)
	}
	for _, j := range pass {
		m.touch(j)
		j.Deferrals++
		delay := int64(30_000)
		if j.Deferrals <= 5 {
			delay = min(int64(1000)<<(j.Deferrals-1), 30_000)
		}
		j.DeferredUntil = m.now + delay
		j.DeferReason = fmt.Sprintf("no worker on queue %q registers type %q (asked by owner %q)", c.Queue, j.Type, c.Owner)
		res.Deferred = append(res.Deferred, j.ID)
	}
	if len(take)+len(pass) > 0 {
		m.wrote = true // the ready index's low-water mark moves
	}
	return res, nil
}

func (m *propModel) heartbeat(c *engine.Heartbeat) (engine.Result, error) {
	res := &engine.HeartbeatResult{LeaseExpiryMS: m.now + c.LeaseMS}
	for _, ref := range c.Leases {
		j, err := m.fenced(ref)
		switch {
		case errors.Is(err, engine.ErrUnknownJob):
			ref.Token = ""
			res.Refused = append(res.Refused, engine.Refusal{LeaseRef: ref, Code: propUnknownCode})
		case err != nil:
			ref.Token = ""
			res.Refused = append(res.Refused, engine.Refusal{LeaseRef: ref, Code: engine.StaleAttemptCode})
		default:
			if m.now+c.LeaseMS > j.LeaseExp {
				m.touch(j)
				j.LeaseExp = m.now + c.LeaseMS
			}
			if j.CancelReq {
				res.CancelRequested = append(res.CancelRequested, j.ID)
			}
		}
	}
	return res, nil
}

func (m *propModel) appendEvents(c *engine.AppendEvents) (engine.Result, error) {
	j, err := m.fenced(c.LeaseRef)
	if err != nil {
		return nil, err
	}
	res := &engine.AppendResult{AtMS: m.now}
	for _, ne := range c.Events {
		seq := m.appendEv(j, engine.Event{Type: ne.Type, Attempt: c.Attempt, Step: ne.Step, Name: ne.Name, Payload: ne.Payload})
		if res.FirstSeq == 0 {
			res.FirstSeq = seq
		}
		res.LastSeq = seq
	}
	for _, id := range c.CancelTimers {
		if i := slices.IndexFunc(j.Timers, func(x engine.Timer) bool { return x.ID == id }); i >= 0 {
			j.Timers = slices.Delete(j.Timers, i, i+1)
		}
	}
	for _, t := range c.Timers {
		t.FireMS = max(t.FireMS, m.now)
		if i := slices.IndexFunc(j.Timers, func(x engine.Timer) bool { return x.ID == t.ID }); i >= 0 {
			j.Timers[i] = t
		} else {
			j.Timers = append(j.Timers, t)
		}
	}
	return res, nil
}

func (m *propModel) commitStep(c *engine.CommitStep) (engine.Result, error) {
	j, err := m.fenced(c.LeaseRef)
	if err != nil {
		return nil, err
	}
	eff := j.Effects[c.Step]
	payload := c.Payload
	switch {
	case eff != nil && eff.CommittedSeq != 0:
		return nil, engine.ErrStepCommitted
	case c.CatchUp && eff == nil:
		return nil, engine.ErrInvalidCommand
	case !c.CatchUp && eff != nil:
		return nil, engine.ErrStepCommitted
	case c.CatchUp:
		payload = eff.Payload
		e := *eff
		eff = &e
	default:
		eff = &engine.Effect{Step: c.Step, Attempt: c.Attempt, Failed: c.Failed, AtMS: m.now}
	}
	seq := m.appendEv(j, engine.Event{Type: c.Type, Attempt: c.Attempt, Step: c.Step, Payload: payload, Commit: true})
	eff.CommittedSeq = seq
	j.Effects[c.Step] = eff
	return &engine.AppendResult{FirstSeq: seq, LastSeq: seq, AtMS: m.now}, nil
}

func (m *propModel) alreadyHappened(j *propJob, spec *engine.WaitSpec, seen uint64) bool {
	for _, s := range spec.Steps {
		if j.Effects[s] != nil {
			return true
		}
	}
	for _, ev := range j.Events[seen:] {
		if ev.Type == engine.EventSignalReceived && slices.Contains(spec.Signals, ev.Name) {
			return true
		}
		if ev.Type == engine.EventTimerFired && spec.TimerAtMS > 0 && spec.TimerID == ev.Name {
			return true
		}
		if ev.Type == engine.EventCancelRequested {
			return true // the workflow must see a cancel request before it waits
		}
	}
	return false
}

func (m *propModel) wait(c *engine.Wait) (engine.Result, error) {
	j, err := m.fenced(c.LeaseRef)
	if err != nil {
		return nil, err
	}
	if c.SeenSeq > uint64(len(j.Events)) {
		return nil, engine.ErrInvalidCommand
	}
	if m.alreadyHappened(j, &c.Spec, c.SeenSeq) {
		return &engine.WaitResult{Woken: true, Status: engine.StatusRunning, Seq: uint64(len(j.Events))}, nil
	}
	spec := c.Spec
	if spec.TimerAtMS > 0 && spec.TimerAtMS < m.now {
		spec.TimerAtMS = m.now // a due timer waits and fires at the next sweep
	}
	seq := m.appendEv(j, engine.Event{Type: engine.EventJobWaiting, Attempt: c.Attempt, Wait: &spec})
	j.Timers = nil // the wait's timers replace the job's pending ones
	if spec.TimerAtMS > 0 {
		t := engine.Timer{ID: spec.TimerID, FireMS: spec.TimerAtMS}
		if i := slices.IndexFunc(j.Timers, func(x engine.Timer) bool { return x.ID == t.ID }); i >= 0 {
			j.Timers[i] = t
		} else {
			j.Timers = append(j.Timers, t)
		}
	}
	return &engine.WaitResult{Status: j.Status, Seq: seq}, nil
}

// wake ends j's wait if it is blocked.
func (m *propModel) wake(j *propJob, reason, name string) bool {
	if j.Status != engine.StatusWaiting && j.Status != engine.StatusParked {
		return false
	}
	m.appendEv(j, engine.Event{Type: engine.EventWaitCompleted, Reason: reason, Name: name})
	return true
}

func (m *propModel) signal(c *engine.Signal) (engine.Result, error) {
	j, err := m.resolve(c.Target)
	if err != nil {
		return nil, err
	}
	if propTerminal(j.Status) {
		return nil, engine.ErrJobClosed
	}
	waits := j.Wait != nil && slices.Contains(j.Wait.Signals, c.Name)
	seq := m.appendEv(j, engine.Event{Type: engine.EventSignalReceived, Name: c.Name, Payload: c.Payload})
	woke := false
	if waits {
		woke = m.wake(j, "signal", c.Name)
	}
	return &engine.SignalResult{Job: j.ID, Seq: seq, Woke: woke}, nil
}

type propDue struct {
	at  int64
	job *propJob
	tid string
}

func propSortDues(d []propDue) {
	sort.Slice(d, func(a, b int) bool {
		if d[a].at != d[b].at {
			return d[a].at < d[b].at
		}
		if d[a].job.ID != d[b].job.ID {
			return d[a].job.ID < d[b].job.ID
		}
		return d[a].tid < d[b].tid
	})
}

func propCapDues(d []propDue, max int, res *engine.SweepResult) []propDue {
	if len(d) > max {
		res.More = true
		return d[:max]
	}
	return d
}

func (m *propModel) fireTimers(c *engine.FireTimers) (engine.Result, error) {
	res := &engine.SweepResult{}
	for _, d := range m.dueEntries(m.timers, c.Max, res) {
		j := d.job
		i := slices.Index(j.Timers, engine.Timer{ID: d.tid, FireMS: d.at})
		if i < 0 {
			continue // stale
		}
		j.Timers = slices.Delete(j.Timers, i, i+1)
		m.appendEv(j, engine.Event{Type: engine.EventTimerFired, Name: d.tid})
		res.Jobs = append(res.Jobs, j.ID)
		if j.Wait != nil && j.Wait.TimerAtMS > 0 && j.Wait.TimerID == d.tid && m.wake(j, "timer", d.tid) {
			res.Ready = append(res.Ready, j.ID)
		}
	}
	return res, nil
}

func (m *propModel) reclaim(c *engine.Reclaim) (engine.Result, error) {
	res := &engine.SweepResult{}
	for _, d := range m.dueEntries(m.leases, c.Max, res) {
		if d.job.Status != engine.StatusRunning || d.job.LeaseExp != d.at {
			continue // stale
		}
		m.appendEv(d.job, engine.Event{Type: engine.EventJobRequeued, Reason: engine.ReasonLeaseExpired, Attempt: d.job.Attempt})
		res.Jobs = append(res.Jobs, d.job.ID)
		res.Ready = append(res.Ready, d.job.ID)
	}
	return res, nil
}

func (m *propModel) release(c *engine.ReleaseDelayed) (engine.Result, error) {
	var dues []propDue
	for _, j := range m.jobs {
		switch {
		case j.Status == engine.StatusRetrying && j.ReleaseAt <= m.now:
			dues = append(dues, propDue{j.ReleaseAt, j, ""})
		case j.Status == engine.StatusQueued && j.DeferredUntil != 0 && j.DeferredUntil <= m.now:
			dues = append(dues, propDue{j.DeferredUntil, j, ""})
		}
	}
	propSortDues(dues)
	res := &engine.SweepResult{}
	for _, d := range propCapDues(dues, c.Max, res) {
		if d.job.Status == engine.StatusQueued {
			// A deferred job is ready again, with no event.
			m.touch(d.job)
			d.job.DeferredUntil, d.job.ReadyAt = 0, m.now
		} else {
			m.appendEv(d.job, engine.Event{Type: engine.EventJobRequeued, Reason: engine.ReasonRetryDelay})
		}
		res.Jobs = append(res.Jobs, d.job.ID)
		res.Ready = append(res.Ready, d.job.ID)
	}
	return res, nil
}

func (m *propModel) lifecycle(t engine.Target, ev engine.Event) (engine.Result, error) {
	j, err := m.resolve(t)
	if err != nil {
		return nil, err
	}
	ev.Attempt = j.Attempt
	if !m.legal(j, ev) {
		return nil, engine.ErrIllegalTransition
	}
	seq := m.appendEv(j, ev)
	if propTerminal(j.Status) {
		m.closed(j, ev)
	}
	return &engine.StatusResult{Job: j.ID, Status: j.Status, Seq: seq}, nil
}

func (m *propModel) finish(ref engine.LeaseRef, ev engine.Event) (engine.Result, error) {
	j, err := m.fenced(ref)
	if err != nil {
		return nil, err
	}
	ev.Attempt = ref.Attempt
	seq := m.appendEv(j, ev)
	m.closed(j, ev)
	return &engine.StatusResult{Job: j.ID, Status: j.Status, Seq: seq}, nil
}

// closed records a finished child's result as its parent's step effect; a
// parent waiting for it is woken, a parent not blocked at all is told with
// effect_recorded. The first result for a step wins.
func (m *propModel) closed(j *propJob, ev engine.Event) {
	if ev.Type == engine.EventJobTerminated || ev.Type == engine.EventJobTimedOut {
		m.closeChildren(j)
	}
	if j.Parent == 0 {
		return
	}
	p := m.job(j.Parent)
	if p == nil || propTerminal(p.Status) || p.Effects[j.ParentStep] != nil {
		return
	}
	m.wrote = true
	p.Effects[j.ParentStep] = &engine.Effect{Step: j.ParentStep, Payload: ev.Payload, Failed: ev.Type != engine.EventJobCompleted, AtMS: m.now}
	switch {
	case p.Wait != nil && slices.Contains(p.Wait.Steps, j.ParentStep):
		m.wake(p, "step", j.ParentStep)
	case p.Status != engine.StatusWaiting && p.Status != engine.StatusParked:
		m.appendEv(p, engine.Event{Type: engine.EventEffectRecorded, Step: j.ParentStep})
	}
}

// closeChildren applies the parent-close policy of each open child of a
// job the engine ended, in job id order.
func (m *propModel) closeChildren(p *propJob) {
	for _, c := range m.jobs {
		if c.Parent != p.ID || propTerminal(c.Status) {
			continue
		}
		reason := "parent " + p.WF + " ended"
		switch c.ParentClose {
		case engine.ParentCloseTerminate:
			m.wrote = true
			ev := engine.Event{Type: engine.EventJobTerminated, Attempt: c.Attempt, Reason: reason, Payload: propTerminatedPayload(reason)}
			m.appendEv(c, ev)
			m.closed(c, ev)
		case engine.ParentCloseRequestCancel:
			m.wrote = true
			c.CancelReq = true
			m.appendEv(c, engine.Event{Type: engine.EventCancelRequested, Reason: reason})
			m.wake(c, "cancel", "")
		}
	}
}

// propTerminatedPayload is the documented TerminatedError failure.
func propTerminatedPayload(reason string) []byte {
	msg := "terminated"
	if reason != "" {
		msg += ": " + reason
	}
	return []byte(fmt.Sprintf(`{"type":"TerminatedError","message":%q,"nonRetryable":true}`, msg))
}

// propTimeoutPayload is the documented TimeoutError failure of j's deadline.
func propTimeoutPayload(j *propJob, reason string) []byte {
	tt, what := "WorkflowRun", "run timeout"
	switch {
	case reason == engine.ReasonExecutionTimeout && strings.HasPrefix(j.Type, "@activity:"):
		tt, what = "ScheduleToClose", "schedule-to-close timeout"
	case reason == engine.ReasonExecutionTimeout:
		tt, what = "WorkflowExecution", "execution timeout"
	case reason == engine.ReasonScheduleToStart:
		tt, what = "ScheduleToStart", "schedule-to-start timeout"
	}
	msg := fmt.Sprintf("job %d (workflow id %q, type %q) timed out: its %s passed", j.ID, j.WF, j.Type, what)
	return []byte(fmt.Sprintf(`{"type":"TimeoutError","message":%q,"nonRetryable":true,"timeout_type":%q}`, msg, tt))
}

// expire ends as TimedOut the jobs whose live deadline entry is due.
func (m *propModel) expire(c *engine.ExpireDeadlines) (engine.Result, error) {
	res := &engine.SweepResult{}
	for _, d := range m.dueEntries(m.deadlines, c.Max, res) {
		j := d.job
		if j.TimeoutAt != d.at || propTerminal(j.Status) {
			continue // stale, or ended earlier in this sweep with its parent
		}
		_, reason := propNextDeadline(j)
		ev := engine.Event{Type: engine.EventJobTimedOut, Attempt: j.Attempt, Reason: reason, Payload: propTimeoutPayload(j, reason)}
		m.appendEv(j, ev)
		m.closed(j, ev)
		res.Jobs = append(res.Jobs, j.ID)
	}
	return res, nil
}

func (m *propModel) requeue(c *engine.Requeue) (engine.Result, error) {
	var j *propJob
	if c.Attempt == 0 {
		if j = m.job(c.Job); j == nil {
			return nil, engine.ErrUnknownJob
		}
		if j.Status != engine.StatusFailed {
			return nil, engine.ErrIllegalTransition
		}
		// A failed run that a newer run of its workflow id replaced stays
		// closed: a workflow id has at most one open run.
		if m.wfs[j.WF] != j.ID {
			return nil, engine.ErrWorkflowExists
		}
	} else {
		var err error
		if j, err = m.fenced(c.LeaseRef); err != nil {
			return nil, err
		}
	}
	reason := c.Reason
	if reason == "" {
		reason = engine.ReasonRetry
	}
	if c.Attempt == 0 || reason == engine.ReasonRetry {
		j.Retries++
	}
	seq := m.appendEv(j, engine.Event{Type: engine.EventJobRequeued, Attempt: c.Attempt, DelayMS: c.DelayMS, Reason: reason})
	return &engine.StatusResult{Job: j.ID, Status: j.Status, Seq: seq}, nil
}

// ---------------------------------------------------------------------------
// The driver: generates commands, applies them to the engine and the model,
// and compares.

type propRid struct {
	rid string
	cmd engine.Command
}

type propDriver struct {
	t    *testing.T
	seed int64
	r    *rand.Rand
	h    *harness
	m    *propModel
	// meter compares the metrics' diff of every command with the
	// read-back reference model (meter_reference_test.go).
	meter *meterCheck

	seq, cmdN int
	trace     []string

	// Fencing, tracked from command outcomes alone: the newest attempt
	// each job was claimed with, and whether it still holds the job.
	claimed map[engine.JobID]uint64
	live    map[engine.JobID]uint64

	rids     []propRid
	ridN     int
	firstRes map[string]engine.Result // the engine's result for each recorded request id

	snapshots int
	stats     map[string]int // outcomes, for the -v coverage line

	// Group commit, as LocalLog does it: commands of a sequence may share
	// one batch, committed every groupMax commands; reads in between go
	// through the batch.
	batch    *storage.Batch
	pending  int
	groupMax int
}

func runPropertySeed(t *testing.T, seed int64, seqs int, seen *meterSeen) {
	p := &propDriver{t: t, seed: seed, r: rand.New(rand.NewPCG(uint64(seed), 0x6865646c65)), h: newHarness(t), m: newPropModel(), meter: newMeterCheck(t, seen),
		claimed: map[engine.JobID]uint64{}, live: map[engine.JobID]uint64{}, firstRes: map[string]engine.Result{},
		stats: map[string]int{}}
	for p.seq = 0; p.seq < seqs; p.seq++ {
		p.groupMax = 1
		if p.seq >= propFullEvery && p.chance(50) {
			p.groupMax = 2 + p.r.IntN(30)
		}
		for p.cmdN = 0; p.cmdN < propCmdsPerSeq; p.cmdN++ {
			p.step()
			if p.seq < propFullEvery {
				p.fullCheck(false)
			}
		}
		p.commit()
		p.fullCheck(true)
	}
	keys := make([]string, 0, len(p.stats))
	for k := range p.stats {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%d", k, p.stats[k])
	}
	t.Logf("seed %d: %d sequences, %d jobs, %d store snapshots compared; outcomes:%s", seed, seqs, len(p.m.jobs), p.snapshots, b.String())
}

func (p *propDriver) fail(format string, a ...any) {
	p.t.Helper()
	p.t.Fatalf("seed=%d seq=%d cmd=%d: %s\nreplay: go test ./engine -run TestPropertyRandomCommands -property.seed=%d -v\nlast commands (seq.cmd):\n%s",
		p.seed, p.seq, p.cmdN, fmt.Sprintf(format, a...), p.seed, strings.Join(p.trace, "\n"))
}

func (p *propDriver) addTrace(s string) {
	const keep = 40
	if len(p.trace) == keep {
		copy(p.trace, p.trace[1:])
		p.trace = p.trace[:keep-1]
	}
	p.trace = append(p.trace, s)
}

func propFmtCmd(c engine.Command) string {
	if c == nil {
		return "<nil>"
	}
	s := fmt.Sprintf("%+v", reflect.ValueOf(c).Elem().Interface())
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return c.Kind().String() + s
}

func propFmtRes(r engine.Result) string {
	if r == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%T%+v", r, reflect.ValueOf(r).Elem().Interface())
}

// engineApply applies cmd in the open batch (opening one if needed) and
// adds its writes to it on success, committing every groupMax commands. It
// returns how many keys the command wrote.
func (p *propDriver) engineApply(cmd engine.Command) (res engine.Result, writes int, err error) {
	if p.batch == nil {
		p.batch = p.h.db.NewBatch()
	}
	tx := p.batch.Begin()
	func() {
		defer func() {
			if r := recover(); r != nil {
				p.fail("Apply(%s) panicked: %v", propFmtCmd(cmd), r)
			}
		}()
		res, err = p.meter.apply(p.h.m, tx, cmd, func() string { return strings.Join(p.trace, "\n") })
	}()
	if err != nil {
		return nil, 0, err // the command's Tx is dropped; the batch goes on
	}
	err = p.batch.Add(tx)
	if errors.Is(err, storage.ErrBatchFull) {
		p.commit()
		p.batch = p.h.db.NewBatch()
		err = p.batch.Add(tx)
	}
	if err != nil {
		p.fail("batch add: %v", err)
	}
	if p.pending++; p.pending >= p.groupMax {
		p.commit()
	}
	return res, tx.Len(), nil
}

func (p *propDriver) commit() {
	if p.batch == nil {
		return
	}
	if err := p.batch.Commit(); err != nil {
		p.fail("commit: %v", err)
	}
	if p.pending > 1 {
		p.stats["~group-commits"]++
	}
	p.batch, p.pending = nil, 0
}

// view reads the store as the next command will see it: through the open
// batch, or the committed store.
func (p *propDriver) view(fn func(get func([]byte) ([]byte, error)) error) error {
	if p.batch != nil {
		return fn(p.batch.Begin().Get)
	}
	return p.h.db.Badger().View(func(txn *badger.Txn) error {
		return fn(func(k []byte) ([]byte, error) {
			item, err := txn.Get(k)
			if errors.Is(err, badger.ErrKeyNotFound) {
				return nil, storage.ErrNotFound
			}
			if err != nil {
				return nil, err
			}
			return item.ValueCopy(nil)
		})
	})
}

// snapshot is harness.snapshot as the next command sees the store.
func (p *propDriver) snapshot() map[string]string {
	if p.batch == nil {
		return propSnapshot(p.h.db)
	}
	out := map[string]string{}
	err := p.batch.Begin().Scan(nil, nil, true, func(k, v []byte) (bool, error) {
		out[string(k)] = string(v)
		return true, nil
	})
	if err != nil {
		p.fail("snapshot: %v", err)
	}
	return out
}

// propScan calls fn for every key under prefix at or after start, with its
// value, reading Badger directly: storage.Reader.Scan prefetches values with
// one goroutine per item, which dominates the test's time under -race.
func propScan(db *storage.DB, prefix, start []byte, fn func(k, v []byte) error) error {
	return db.Badger().View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		opts.Prefix = prefix
		it := txn.NewIterator(opts)
		defer it.Close()
		seek := prefix
		if start != nil {
			seek = start
		}
		for it.Seek(seek); it.ValidForPrefix(prefix); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			if err := fn(it.Item().KeyCopy(nil), v); err != nil {
				return err
			}
		}
		return nil
	})
}

// propSnapshot is harness.snapshot through propScan.
func propSnapshot(db *storage.DB) map[string]string {
	out := map[string]string{}
	if err := propScan(db, nil, nil, func(k, v []byte) error { out[string(k)] = string(v); return nil }); err != nil {
		panic(err)
	}
	return out
}

func (p *propDriver) advanceClock() {
	r := p.r
	switch n := r.IntN(100); {
	case n < 60:
		p.h.now += int64(r.IntN(500))
	case n < 90:
		p.h.now += int64(r.IntN(10_000))
	case n < 98:
		p.h.now += int64(r.IntN(120_000))
	default:
		p.h.now += int64(r.IntN(2 * 3600_000)) // past leases, timers, delays and request retention
	}
}

func (p *propDriver) step() {
	p.advanceClock()
	cmd, note, want := p.gen()
	stamp := p.h.now
	if p.r.IntN(100) < 3 {
		stamp -= 1 + int64(p.r.IntN(5000)) // a late stamp: Apply keeps time monotonic
	}
	if note != "now=0" {
		cmd.Head().NowMS = stamp
	}

	// A retry delay that runs past the end of int64 time means "never": the
	// engine may refuse it as invalid, or keep the job Retrying for good
	// (the model's choice); it must not wrap around into the past.
	if c, ok := cmd.(*engine.Requeue); ok && c.DelayMS > math.MaxInt64-max(stamp, p.m.lastNow) {
		b := p.batch
		if b == nil {
			b = p.h.db.NewBatch()
		}
		_, err := p.h.m.Apply(b.Begin(), cmd) // not added: a dry run
		if b != p.batch {
			b.Discard()
		}
		if errors.Is(err, engine.ErrInvalidCommand) || errors.Is(err, engine.ErrPayloadTooLarge) {
			p.addTrace(fmt.Sprintf("%d.%d now=%d %s -> error: %v", p.seq, p.cmdN, stamp, propFmtCmd(cmd), err))
			p.stats["Requeue:endless-delay-refused"]++
			return
		}
	}

	var blocked map[engine.JobID]bool
	if _, ok := cmd.(*engine.Reclaim); ok {
		blocked = map[engine.JobID]bool{}
		for _, j := range p.m.jobs {
			if j.Status == engine.StatusWaiting || j.Status == engine.StatusParked {
				blocked[j.ID] = true
			}
		}
	}
	mres, merr, replay := p.m.apply(cmd)
	if want != nil && !errors.Is(merr, want) {
		p.fail("test bug: the model predicts %v for a command generated to fail with %v: %s", merr, want, propFmtCmd(cmd))
	}

	// Snapshot the store around refusals: every one in the first sequence,
	// while the store is small, then a sample.
	var before map[string]string
	if merr != nil && (p.seq < 1 || p.cmdN < 50 && p.r.IntN(10) == 0) {
		before = p.snapshot()
	}
	res, writes, err := p.engineApply(cmd)

	outcome := ""
	if err != nil {
		outcome = "error: " + err.Error()
	} else {
		outcome = propFmtRes(res)
	}
	if note != "" {
		note = " [" + note + "]"
	}
	p.addTrace(fmt.Sprintf("%d.%d now=%d %s%s -> %s", p.seq, p.cmdN, stamp, propFmtCmd(cmd), note, outcome))

	if err != nil && !propMatchesSentinel(err, engine.ErrUnknownCommand) {
		p.fail("%s returned an error matching no sentinel: %v", cmd.Kind(), err)
	}
	if errors.Is(err, engine.ErrUnknownCommand) && cmd.Kind() != 99 {
		p.fail("%s returned ErrUnknownCommand: %v", cmd.Kind(), err)
	}
	switch {
	case merr != nil && err == nil:
		p.fail("%s succeeded with %s; the model expects %v", cmd.Kind(), propFmtRes(res), merr)
	case merr == nil && err != nil:
		p.fail("%s failed with %v; the model expects %s", cmd.Kind(), err, propFmtRes(mres))
	case merr != nil && !errors.Is(err, merr):
		p.fail("%s failed with %v; the model expects %v", cmd.Kind(), err, merr)
	}
	if before != nil {
		p.snapshots++
		after := p.snapshot()
		if diff := propStoreDiff(before, after); diff != "" {
			p.fail("%s (error %v, replay %v) changed the store: %s", cmd.Kind(), err, replay, diff)
		}
	}
	p.count(cmd, res, err, replay)
	if err != nil {
		return
	}
	// A replay writes nothing, nor does a command that changes nothing (an
	// empty claim or sweep, a wait already over): idle polling costs no sync.
	if p.m.wrote != (writes > 0) {
		p.fail("%s (replay %v) wrote %d keys; the model expects a write: %v", cmd.Kind(), replay, writes, p.m.wrote)
	}

	rid := cmd.Head().RequestID
	if replay {
		first, ok := p.firstRes[rid]
		if !ok {
			p.fail("test bug: replay of request %q with no first result", rid)
		}
		if !reflect.DeepEqual(res, first) {
			p.fail("request %q replayed %s, the first result was %s", rid, propFmtRes(res), propFmtRes(first))
		}
	} else if rid != "" {
		p.firstRes[rid] = res
	}
	if !reflect.DeepEqual(res, mres) {
		p.fail("%s returned %s; the model expects %s", cmd.Kind(), propFmtRes(res), propFmtRes(mres))
	}
	for id := range blocked {
		if !replay && slices.Contains(res.(*engine.SweepResult).Jobs, id) {
			p.fail("Reclaim took job %d, which was Waiting/Parked", id)
		}
	}
	if !replay {
		p.checkFencing(cmd, res)
	}
	p.checkTouched()
	p.checkOpenRuns()
}

func (p *propDriver) count(cmd engine.Command, res engine.Result, err error, replay bool) {
	k := cmd.Kind().String()
	switch {
	case err != nil:
		for _, s := range slices.Concat(propSentinels, []error{engine.ErrUnknownCommand}) {
			if errors.Is(err, s) {
				k += ":" + strings.ReplaceAll(strings.TrimPrefix(s.Error(), "engine: "), " ", "_")
				break
			}
		}
	case replay:
		k += ":replay"
	default:
		switch r := res.(type) {
		case *engine.CreateResult:
			if r.Existing {
				k += ":existing"
			}
		case *engine.ClaimResult:
			k += fmt.Sprintf(":%d", min(len(r.Jobs), 2))
			if len(r.Deferred) > 0 {
				k += ":deferred"
			}
		case *engine.WaitResult:
			if r.Woken {
				k += ":woken"
			} else {
				k += ":" + r.Status.String()
			}
		case *engine.SignalResult:
			if r.Woke {
				k += ":woke"
			}
		case *engine.SweepResult:
			if len(r.Ready) > 0 {
				k += ":ready"
			} else if len(r.Jobs) > 0 {
				k += ":some"
			}
		case *engine.StatusResult:
			k += ":" + r.Status.String()
		}
		if c, ok := cmd.(*engine.CommitStep); ok && c.CatchUp {
			k += ":catchup"
		}
		for _, id := range p.m.touchOrder {
			if evs := p.m.job(id).Events; len(evs) > 0 && evs[len(evs)-1].Type == engine.EventWaitCompleted && evs[len(evs)-1].Reason == "step" {
				k += ":woke-parent"
				break
			} else if len(evs) > int(p.m.touched[id]) && evs[len(evs)-1].Type == engine.EventEffectRecorded {
				k += ":effect-recorded"
				break
			}
		}
	}
	p.stats[k]++
}

// checkFencing tracks attempts from command outcomes alone: a claim hands
// out a newer attempt than any before, and a fenced write is accepted only
// from the newest attempt while it still holds the job.
func (p *propDriver) checkFencing(cmd engine.Command, res engine.Result) {
	accept := func(ref engine.LeaseRef) {
		if got, ok := p.live[ref.Job]; !ok || got != ref.Attempt {
			p.fail("%s by attempt %d of job %d accepted; the live attempt is %d (held: %v)", cmd.Kind(), ref.Attempt, ref.Job, got, ok)
		}
	}
	switch c := cmd.(type) {
	case *engine.Claim:
		for _, cj := range res.(*engine.ClaimResult).Jobs {
			if cj.Attempt <= p.claimed[cj.Job] {
				p.fail("claim handed out attempt %d of job %d after attempt %d", cj.Attempt, cj.Job, p.claimed[cj.Job])
			}
			if _, held := p.live[cj.Job]; held {
				p.fail("claim took job %d while attempt %d still held it", cj.Job, p.live[cj.Job])
			}
			p.claimed[cj.Job] = cj.Attempt
			p.live[cj.Job] = cj.Attempt
		}
	case *engine.Heartbeat:
		// A refusal names its lease without the token, so the leases are
		// matched with the refusals in order.
		refused := res.(*engine.HeartbeatResult).Refused
		for _, ref := range c.Leases {
			mj := p.m.job(ref.Job)
			holder := mj != nil && mj.Status == engine.StatusRunning && mj.Attempt == ref.Attempt && mj.Token == ref.Token
			if len(refused) > 0 && refused[0].Job == ref.Job && refused[0].Attempt == ref.Attempt && !holder {
				refused = refused[1:]
				continue
			}
			if got, ok := p.live[ref.Job]; !holder && ok && got == ref.Attempt && mj.Token == ref.Token {
				p.fail("heartbeat of live attempt %d of job %d was refused", ref.Attempt, ref.Job)
			}
			accept(ref)
		}
	case *engine.CreateJob:
		if c.ParentLease != nil && !res.(*engine.CreateResult).Existing {
			accept(*c.ParentLease) // only the parent's holder starts its children
		}
	case *engine.AppendEvents:
		accept(c.LeaseRef)
	case *engine.CommitStep:
		accept(c.LeaseRef)
	case *engine.Wait:
		accept(c.LeaseRef)
		if !res.(*engine.WaitResult).Woken {
			delete(p.live, c.Job)
		}
	case *engine.Complete:
		accept(c.LeaseRef)
		delete(p.live, c.Job)
	case *engine.Fail:
		accept(c.LeaseRef)
		delete(p.live, c.Job)
	case *engine.Requeue:
		if c.Attempt != 0 {
			accept(c.LeaseRef)
			delete(p.live, c.Job)
		}
	case *engine.Reclaim:
		for _, id := range res.(*engine.SweepResult).Jobs {
			if _, held := p.live[id]; !held {
				p.fail("reclaim took job %d, which no attempt held", id)
			}
			delete(p.live, id)
		}
	case *engine.Cancel, *engine.Suspend, *engine.Terminate:
		delete(p.live, res.(*engine.StatusResult).Job)
	case *engine.ExpireDeadlines:
		for _, id := range res.(*engine.SweepResult).Jobs {
			delete(p.live, id) // timed out: a running attempt is fenced out
		}
	}
	// A job the engine ended has no live attempt any more, whichever
	// command ended it: a child terminated with its parent, say.
	for _, id := range p.m.touchOrder {
		if j := p.m.job(id); j != nil && propTerminal(j.Status) {
			delete(p.live, id)
		}
	}
}

// checkTouched compares every job the model says the command changed with
// its stored record and new events, and probes its fencing: of its recent
// attempts, exactly the live one (or none) may renew its lease.
func (p *propDriver) checkTouched() {
	if len(p.m.touchOrder) == 0 {
		return
	}
	type read struct {
		job *engine.Job
		evs []engine.Event
	}
	reads := map[engine.JobID]*read{}
	err := p.view(func(get func([]byte) ([]byte, error)) error {
		for _, id := range p.m.touchOrder {
			rd := &read{}
			reads[id] = rd
			b, err := get(storage.JobKey(uint64(id)))
			if err == nil {
				rd.job, err = machine.DecodeJob(b)
			}
			if err != nil {
				return fmt.Errorf("job %d: %w", id, err)
			}
			for seq := p.m.touched[id] + 1; ; seq++ {
				b, err := get(storage.EventKey(uint64(id), seq))
				if errors.Is(err, storage.ErrNotFound) {
					break
				}
				if err != nil {
					return err
				}
				ev, err := machine.DecodeEvent(b)
				if err != nil {
					return err
				}
				rd.evs = append(rd.evs, *ev)
			}
		}
		return nil
	})
	if err != nil {
		p.fail("reading the changed jobs: %v", err)
	}
	for _, id := range p.m.touchOrder {
		mj := p.m.job(id)
		if d := propJobDiff(mj, reads[id].job); d != "" {
			p.fail("job %d record differs from the model: %s", id, d)
		}
		if want := mj.Events[p.m.touched[id]:]; !reflect.DeepEqual(propNormalize(reads[id].evs), propNormalize(want)) {
			p.fail("job %d new events differ from the model:\n got %+v\nwant %+v", id, reads[id].evs, want)
		}
	}
	p.probe()
}

// probe asks the engine, without committing, which of the recent attempts
// of each changed job it would accept a fenced write from: exactly the live
// one, or none; and that the live one is refused without its lease token.
func (p *propDriver) probe() {
	var refs, forged []engine.LeaseRef
	for _, id := range p.m.touchOrder {
		mj := p.m.job(id)
		if mj.Attempt == 0 {
			continue
		}
		for a := max(1, int64(mj.Attempt)-2); a <= int64(mj.Attempt)+1; a++ {
			ref := engine.LeaseRef{Job: mj.ID, Attempt: uint64(a)}
			if ref.Attempt == mj.Attempt {
				ref.Token = mj.Token
			}
			refs = append(refs, ref)
		}
		if mj.Token != "" {
			forged = append(forged, engine.LeaseRef{Job: mj.ID, Attempt: mj.Attempt}, engine.LeaseRef{Job: mj.ID, Attempt: mj.Attempt, Token: mj.Token[1:]})
		}
	}
	if len(refs) == 0 {
		return
	}
	b := p.batch
	if b == nil {
		b = p.h.db.NewBatch()
		defer b.Discard()
	}
	// The probe's Tx is never added to the batch: it writes nothing.
	res, err := p.h.m.Apply(b.Begin(), &engine.Heartbeat{Header: engine.Header{NowMS: p.h.now}, Leases: refs, LeaseMS: 1000})
	if err != nil {
		p.fail("fencing probe: %v", err)
	}
	refused := map[engine.LeaseRef]bool{}
	for _, rf := range res.(*engine.HeartbeatResult).Refused {
		if rf.Token != "" {
			p.fail("heartbeat refusal %+v echoes a lease token", rf)
		}
		refused[rf.LeaseRef] = true
	}
	if len(forged) > 0 {
		fres, err := p.h.m.Apply(b.Begin(), &engine.Heartbeat{Header: engine.Header{NowMS: p.h.now}, Leases: forged, LeaseMS: 1000})
		if err != nil {
			p.fail("fencing probe: %v", err)
		}
		if n := len(fres.(*engine.HeartbeatResult).Refused); n != len(forged) {
			p.fail("a heartbeat without the lease token was accepted: %d of %d refused (%+v)", n, len(forged), forged)
		}
	}
	accepted := map[engine.JobID][]uint64{}
	for _, ref := range refs {
		if !refused[engine.LeaseRef{Job: ref.Job, Attempt: ref.Attempt}] {
			accepted[ref.Job] = append(accepted[ref.Job], ref.Attempt)
		}
	}
	for _, id := range p.m.touchOrder {
		got := accepted[id]
		live, held := p.live[id]
		switch {
		case len(got) > 1:
			p.fail("job %d accepts fenced writes from attempts %v at once", id, got)
		case held && (len(got) != 1 || got[0] != live):
			p.fail("job %d: live attempt %d, but the engine accepts attempts %v", id, live, got)
		case !held && len(got) != 0:
			p.fail("job %d: no attempt holds it, but the engine accepts attempts %v", id, got)
		}
	}
}

// checkOpenRuns: a workflow id never has two open runs at once (the reuse
// policy refuses a start while the current run is open).
func (p *propDriver) checkOpenRuns() {
	for _, id := range p.m.touchOrder {
		wf := p.m.job(id).WF
		var open []engine.JobID
		for _, rid := range p.m.byWF[wf] {
			if !propTerminal(p.m.job(rid).Status) {
				open = append(open, rid)
			}
		}
		if len(open) > 1 {
			p.fail("workflow id %q has %d open runs at once: jobs %v", wf, len(open), open)
		}
	}
}

func propJobDiff(mj *propJob, j *engine.Job) string {
	var d []string
	cmp := func(field string, got, want any) {
		if !reflect.DeepEqual(propNormalize(got), propNormalize(want)) {
			d = append(d, fmt.Sprintf("%s = %+v, model %+v", field, got, want))
		}
	}
	cmp("ID", j.ID, mj.ID)
	cmp("WorkflowID", j.WorkflowID, mj.WF)
	cmp("Type", j.Type, mj.Type)
	cmp("Queue", j.Queue, mj.Queue)
	cmp("Status", j.Status, mj.Status)
	cmp("Attempt", j.Attempt, mj.Attempt)
	cmp("LeaseOwner", j.LeaseOwner, mj.Owner)
	cmp("LeaseExpiryMS", j.LeaseExpiryMS, mj.LeaseExp)
	cmp("LeaseDigest", j.LeaseDigest, machine.LeaseDigest(mj.Token))
	cmp("LastSeq", j.LastSeq, uint64(len(mj.Events)))
	cmp("ReadyAtMS", j.ReadyAtMS, mj.ReadyAt)
	cmp("ReleaseAtMS", j.ReleaseAtMS, mj.ReleaseAt)
	cmp("Wait", j.Wait, mj.Wait)
	cmp("Timers", j.Timers, mj.Timers)
	cmp("Retries", j.Retries, mj.Retries)
	cmp("ParentID", j.ParentID, mj.Parent)
	cmp("ParentStep", j.ParentStep, mj.ParentStep)
	cmp("ParentClosePolicy", j.ParentClosePolicy, mj.ParentClose)
	cmp("CreatedMS", j.CreatedMS, mj.CreatedMS)
	cmp("ClosedMS", j.ClosedMS, mj.ClosedMS)
	cmp("DeadlineMS", j.DeadlineMS, mj.Deadline)
	cmp("RunDeadlineMS", j.RunDeadlineMS, mj.RunDeadline)
	cmp("RunTimeoutMS", j.RunTimeoutMS, mj.RunTimeout)
	cmp("StartDeadlineMS", j.StartDeadlineMS, mj.StartDeadline)
	cmp("TimeoutAtMS", j.TimeoutAtMS, mj.TimeoutAt)
	cmp("Deferrals", j.Deferrals, mj.Deferrals)
	cmp("DeferredReason", j.DeferredReason, mj.DeferReason)
	cmp("DeferredUntilMS", j.DeferredUntilMS, mj.DeferredUntil)
	return strings.Join(d, "; ")
}

// fullCheck runs Verify and, with model, compares the whole store with the
// model: every record, history and effect, the workflow ids and the request
// records.
func (p *propDriver) fullCheck(model bool) {
	var problems []string
	add := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	viewOK(p.h.t, p.h.db, func(r *storage.Reader) error {
		for _, e := range machine.Verify(r, 10) {
			add("Verify: %v", e)
		}
		return nil
	})
	if !model {
		if len(problems) > 0 {
			p.fail("Verify:\n%s", strings.Join(problems, "\n"))
		}
		return
	}
	jobs := map[engine.JobID]*engine.Job{}
	hists := map[engine.JobID][]engine.Event{}
	effs := map[engine.JobID]map[string]*engine.Effect{}
	wfs := map[string]engine.JobID{}
	reqs := map[string]bool{}
	err := propScan(p.h.db, nil, nil, func(k, v []byte) error {
		var err error
		switch k[0] {
		case storage.PrefixJob:
			var j *engine.Job
			if j, err = machine.DecodeJob(v); err == nil {
				jobs[j.ID] = j
			}
		case storage.PrefixEvent:
			var ev *engine.Event
			if ev, err = machine.DecodeEvent(v); err == nil {
				id, _, _ := storage.ParseEventKey(k)
				hists[engine.JobID(id)] = append(hists[engine.JobID(id)], *ev)
			}
		case storage.PrefixEffect:
			var e *engine.Effect
			if e, err = machine.DecodeEffect(v); err == nil {
				id, _ := storage.TrailingJob(k[:9])
				if effs[engine.JobID(id)] == nil {
					effs[engine.JobID(id)] = map[string]*engine.Effect{}
				}
				effs[engine.JobID(id)][string(k[9:])] = e
			}
		case storage.PrefixWorkflow:
			id, err := storage.ParseU64(v)
			if err != nil {
				return err
			}
			wfs[string(k[1:])] = engine.JobID(id)
		case storage.PrefixRequest:
			reqs[string(k[1:])] = true
		}
		return err
	})
	if err != nil {
		add("reading the store: %v", err)
	}
	if len(jobs) != len(p.m.jobs) {
		add("store holds %d job records, the model %d", len(jobs), len(p.m.jobs))
	}
	for _, mj := range p.m.jobs {
		j := jobs[mj.ID]
		if j == nil {
			add("job %d has no record", mj.ID)
			continue
		}
		if d := propJobDiff(mj, j); d != "" {
			add("job %d record differs from the model: %s", mj.ID, d)
		}
		hist := hists[mj.ID]
		if !reflect.DeepEqual(propNormalize(hist), propNormalize(mj.Events)) {
			add("job %d history differs from the model:\n got %+v\nwant %+v", mj.ID, hist, mj.Events)
		}
		if engine.DeriveStatus(hist) != mj.Status {
			add("job %d: DeriveStatus(history) = %s, model %s", mj.ID, engine.DeriveStatus(hist), mj.Status)
		}
		if !reflect.DeepEqual(propNormalize(effs[mj.ID]), propNormalize(mj.Effects)) {
			add("job %d effects differ from the model:\n got %s\nwant %s", mj.ID, propFmtEffects(effs[mj.ID]), propFmtEffects(mj.Effects))
		}
	}
	if !reflect.DeepEqual(wfs, p.m.wfs) {
		add("workflow ids %v, the model %v", wfs, p.m.wfs)
	}
	for rid := range reqs {
		if _, ok := p.m.reqs[rid]; !ok {
			add("request record %q is not in the model (pruned there)", rid)
		}
	}
	if len(reqs) != len(p.m.reqs) {
		add("store holds %d request records, the model %d", len(reqs), len(p.m.reqs))
	}
	if len(problems) > 0 {
		if len(problems) > 10 {
			problems = problems[:10]
		}
		p.fail("full check after seq %d:\n%s", p.seq, strings.Join(problems, "\n"))
	}
}

func propFmtEffects(m map[string]*engine.Effect) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%q:%+v ", k, *m[k])
	}
	return b.String()
}

func propStoreDiff(before, after map[string]string) string {
	var d []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			d = append(d, fmt.Sprintf("deleted %q", k))
		} else if w != v {
			d = append(d, fmt.Sprintf("changed %q", k))
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			d = append(d, fmt.Sprintf("added %q", k))
		}
	}
	sort.Strings(d)
	if len(d) > 10 {
		d = append(d[:10], "…")
	}
	return strings.Join(d, ", ")
}

// propNormalize returns a deep copy of v in which every empty slice or map
// is nil, so values that went through msgpack's omitempty compare equal.
func propNormalize(v any) any {
	if v == nil {
		return nil
	}
	src := reflect.ValueOf(v)
	dst := reflect.New(src.Type()).Elem()
	propNormValue(dst, src)
	return dst.Interface()
}

func propNormValue(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		p := reflect.New(src.Type().Elem())
		propNormValue(p.Elem(), src.Elem())
		dst.Set(p)
	case reflect.Interface:
		if src.IsNil() {
			return
		}
		inner := reflect.New(src.Elem().Type()).Elem()
		propNormValue(inner, src.Elem())
		dst.Set(inner)
	case reflect.Struct:
		for i := 0; i < src.NumField(); i++ {
			if dst.Field(i).CanSet() {
				propNormValue(dst.Field(i), src.Field(i))
			}
		}
	case reflect.Slice:
		if src.Len() == 0 {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := 0; i < src.Len(); i++ {
			propNormValue(s.Index(i), src.Index(i))
		}
		dst.Set(s)
	case reflect.Map:
		if src.Len() == 0 {
			return
		}
		mp := reflect.MakeMapWithSize(src.Type(), src.Len())
		it := src.MapRange()
		for it.Next() {
			val := reflect.New(src.Type().Elem()).Elem()
			propNormValue(val, it.Value())
			mp.SetMapIndex(it.Key(), val)
		}
		dst.Set(mp)
	default:
		dst.Set(src)
	}
}

// ---------------------------------------------------------------------------
// The generator.

var (
	propStepNames   = []string{"a", "b", "c-0", "c-1", "c-2"}
	propSignalNames = []string{"s1", "s2", "s3"}
	propTimerIDs    = []string{"t1", "t2", "t3"}
)

func propPick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

func (p *propDriver) chance(pct int) bool { return p.r.IntN(100) < pct }

func (p *propDriver) payload() []byte {
	if p.chance(50) {
		return nil
	}
	return []byte(fmt.Sprintf("p%d", p.r.IntN(100)))
}

func (p *propDriver) unknownID() engine.JobID { return engine.JobID(len(p.m.jobs) + 1 + p.r.IntN(3)) }

// pickJob picks an existing job, mostly a recent one, or nil when there is none.
func (p *propDriver) pickJob() *propJob {
	n := len(p.m.jobs)
	if n == 0 {
		return nil
	}
	if p.chance(70) {
		lo := max(0, n-12)
		return p.m.jobs[lo+p.r.IntN(n-lo)]
	}
	return p.m.jobs[p.r.IntN(n)]
}

// pickWhere picks a job satisfying ok (any job, if none does).
func (p *propDriver) pickWhere(ok func(*propJob) bool) *propJob {
	var c []*propJob
	for _, j := range p.m.jobs {
		if ok(j) {
			c = append(c, j)
		}
	}
	if len(c) == 0 {
		return p.pickJob()
	}
	return c[p.r.IntN(len(c))]
}

func (p *propDriver) status(ss ...engine.Status) func(*propJob) bool {
	return func(j *propJob) bool { return slices.Contains(ss, j.Status) }
}

// pickRef names an attempt for a fenced write: mostly the live attempt of a
// running job, sometimes a stale one, an attempt from the future or an
// unknown job.
func (p *propDriver) pickRef() engine.LeaseRef {
	if p.chance(4) {
		return engine.LeaseRef{Job: p.unknownID(), Attempt: 1}
	}
	if p.chance(80) {
		var running []*propJob
		for _, j := range p.m.jobs {
			if j.Status == engine.StatusRunning {
				running = append(running, j)
			}
		}
		if len(running) > 0 {
			j := running[p.r.IntN(len(running))]
			if p.chance(85) {
				return p.withToken(engine.LeaseRef{Job: j.ID, Attempt: j.Attempt}, j)
			}
			return engine.LeaseRef{Job: j.ID, Attempt: p.otherAttempt(j)}
		}
	}
	j := p.pickJob()
	if j == nil {
		return engine.LeaseRef{Job: p.unknownID(), Attempt: 1}
	}
	if j.Attempt == 0 || p.chance(30) {
		return engine.LeaseRef{Job: j.ID, Attempt: p.otherAttempt(j)}
	}
	return p.withToken(engine.LeaseRef{Job: j.ID, Attempt: j.Attempt}, j)
}

// withToken gives ref the lease token of j's current attempt, or now and
// then a wrong one (a forger knows the attempt, never the token).
func (p *propDriver) withToken(ref engine.LeaseRef, j *propJob) engine.LeaseRef {
	ref.Token = j.Token
	if p.chance(8) {
		ref.Token = propPick(p.r, "", "0123456789abcdef0123456789abcdef", j.Token+"0")
		if ref.Token == j.Token {
			ref.Token = "forged"
		}
	}
	return ref
}

// pickChildRef is pickRef, but often the live attempt of a running child
// whose parent waits for it.
func (p *propDriver) pickChildRef() engine.LeaseRef {
	if p.chance(50) {
		for _, j := range p.m.jobs {
			if j.Status == engine.StatusRunning && j.Parent != 0 && p.m.job(j.Parent).Wait != nil && p.chance(60) {
				return engine.LeaseRef{Job: j.ID, Attempt: j.Attempt, Token: j.Token}
			}
		}
	}
	return p.pickRef()
}

func (p *propDriver) otherAttempt(j *propJob) uint64 {
	if j.Attempt > 1 && p.chance(70) {
		return 1 + uint64(p.r.IntN(int(j.Attempt-1)))
	}
	return j.Attempt + 1
}

func (p *propDriver) pickTarget(j *propJob) engine.Target {
	switch {
	case j == nil || p.chance(3):
		if p.chance(50) {
			return engine.Target{WorkflowID: "wf-none"}
		}
		return engine.Target{Job: p.unknownID()}
	case p.chance(20):
		return engine.Target{WorkflowID: j.WF} // the workflow's newest run, maybe not j
	}
	return engine.Target{Job: j.ID}
}

func (p *propDriver) lease() int64 {
	switch p.r.IntN(4) {
	case 0:
		return 1000
	case 1:
		return 5000
	case 2:
		return 30_000
	}
	return 1 + int64(p.r.IntN(propMaxLeaseMS))
}

func (p *propDriver) sweepMax() int {
	if p.chance(10) {
		return 100
	}
	return 1 + p.r.IntN(4)
}

// gen returns a command, a note for the trace and the sentinel the command
// was generated to fail with (nil for the others): want is what the command
// is expected to answer, not a failure of gen.
func (p *propDriver) gen() (cmd engine.Command, note string, want error) {
	if len(p.rids) > 0 && p.chance(6) {
		u := p.rids[p.r.IntN(len(p.rids))]
		switch p.r.IntN(10) {
		case 0: // the same request id on another command of the same kind
			c := p.genKind(u.cmd.Kind())
			c.Head().RequestID = u.rid
			return c, "request id reused, same kind", nil
		case 1: // … of another kind
			k := propGenKinds[p.r.IntN(len(propGenKinds))].k
			c := p.genKind(k)
			c.Head().RequestID = u.rid
			return c, "request id reused, " + k.String(), nil
		}
		return u.cmd, "request repeated", nil
	}
	n := p.r.IntN(100)
	if n >= 95 {
		return p.genBad()
	}
	var k engine.CommandKind
	for _, e := range propGenKinds {
		if n < e.upto {
			k = e.k
			break
		}
	}
	c := p.genKind(k)
	if p.chance(15) {
		rid := fmt.Sprintf("rq-%d", p.ridN)
		p.ridN++
		c.Head().RequestID = rid
		p.rids = append(p.rids, propRid{rid, c})
	}
	return c, "", nil
}

// propGenKinds are the kinds the generator makes, with the cumulative
// percentage (of 95: the last 5 are bad commands) below which each is made.
var propGenKinds = []struct {
	upto int
	k    engine.CommandKind
}{{14, engine.KindCreateJob}, {25, engine.KindClaim}, {29, engine.KindHeartbeat}, {35, engine.KindAppendEvents}, {42, engine.KindCommitStep},
	{49, engine.KindWait}, {54, engine.KindSignal}, {58, engine.KindFireTimers}, {61, engine.KindReclaim}, {64, engine.KindReleaseDelayed},
	{67, engine.KindExpireDeadlines}, {69, engine.KindCancel}, {71, engine.KindTerminate}, {74, engine.KindActivate}, {77, engine.KindSuspend},
	{80, engine.KindResume}, {85, engine.KindComplete}, {89, engine.KindFail}, {95, engine.KindRequeue}}

// propTypes are the job types the generator uses: two workflow types and
// an activity task.
var propTypes = []string{"order", "ship", engine.ActivityTypePrefix + "charge"}

func (p *propDriver) genKind(k engine.CommandKind) engine.Command {
	r := p.r
	switch k {
	case engine.KindCreateJob:
		return p.genCreate()
	case engine.KindClaim:
		q := propPick(r, "qa", "qb")
		if p.chance(10) {
			q = "qz"
		}
		c := &engine.Claim{Queue: q, Owner: fmt.Sprintf("w%d", r.IntN(3)), Max: 1 + r.IntN(4), LeaseMS: p.lease()}
		if p.chance(70) {
			// The Engine gives a claim a nonce, and the claimed leases
			// tokens; without one (a claim from before tokens existed)
			// they are fenced by their attempts alone.
			c.Nonce = make([]byte, engine.NonceBytes)
			for i := range c.Nonce {
				c.Nonce[i] = byte(r.IntN(256))
			}
		}
		if p.chance(10) {
			c.TailEvents = r.IntN(engine.MaxTailEvents + 2) // Apply ignores it; one over the limit is refused
		}
		if p.chance(35) {
			// A claimer that runs only some types: the others are deferred.
			c.Types = []string{propPick(r, propTypes...)}
			if p.chance(30) {
				c.Types = append(c.Types, propPick(r, propTypes...))
			}
		}
		return c
	case engine.KindHeartbeat:
		c := &engine.Heartbeat{LeaseMS: p.lease()}
		for i := 1 + r.IntN(3); i > 0; i-- {
			c.Leases = append(c.Leases, p.pickRef())
		}
		return c
	case engine.KindAppendEvents:
		c := &engine.AppendEvents{LeaseRef: p.pickRef()}
		for i := 1 + r.IntN(3); i > 0; i-- {
			ev := engine.NewEvent{Type: propPick[engine.EventType](r, "activity_started", "activity_started", "marker", "marker", "note")}
			if r.IntN(25) == 0 {
				// A forgery: only the engine writes these, and the whole
				// append is refused.
				ev.Type, ev.Name = propPick(r, engine.EventSignalReceived, engine.EventTimerFired, engine.EventCancelRequested, engine.EventEffectRecorded, engine.EventStepCommitted), propPick(r, propSignalNames...)
			}
			if p.chance(50) {
				ev.Step = propPick(r, propStepNames...)
			}
			if ev.Name == "" && p.chance(30) {
				ev.Name = "n"
			}
			ev.Payload = p.payload()
			c.Events = append(c.Events, ev)
		}
		if p.chance(20) {
			c.Timers = append(c.Timers, engine.Timer{ID: propPick(r, propTimerIDs...), FireMS: p.m.now + int64(r.IntN(5000)) - 1000})
		}
		if p.chance(15) {
			c.CancelTimers = append(c.CancelTimers, propPick(r, propTimerIDs...))
		}
		return c
	case engine.KindCommitStep:
		ref := p.pickRef()
		c := &engine.CommitStep{LeaseRef: ref, Step: propPick(r, propStepNames...),
			Type: propPick[engine.EventType](r, "activity_completed", "activity_failed", "child_completed")}
		if j := p.m.job(ref.Job); j != nil && p.chance(60) {
			for step, e := range j.Effects {
				if e.CommittedSeq == 0 {
					c.Step, c.CatchUp = step, true
					break
				}
			}
		}
		if !c.CatchUp && p.chance(25) {
			c.CatchUp = true
		}
		if !c.CatchUp {
			c.Payload = p.payload()
			c.Failed = p.chance(20)
		}
		return c
	case engine.KindWait:
		ref := p.pickRef()
		c := &engine.Wait{LeaseRef: ref}
		s := &c.Spec
		if p.chance(55) {
			s.TimerID = propPick(r, propTimerIDs...)
			s.TimerAtMS = p.h.now - 2000 + int64(r.IntN(120_000))
		}
		if p.chance(45) {
			s.Signals = []string{propPick(r, propSignalNames...)}
			if p.chance(30) {
				s.Signals = append(s.Signals, propPick(r, propSignalNames...))
			}
		}
		if p.chance(35) {
			s.Steps = []string{propPick(r, propStepNames...)}
		}
		// Mostly wait for a step an open child of the job will provide.
		if p.chance(50) {
			for _, ch := range p.m.jobs {
				if ch.Parent == ref.Job && !propTerminal(ch.Status) {
					s.Steps = append(s.Steps, ch.ParentStep)
					break
				}
			}
		}
		if s.TimerAtMS == 0 && len(s.Signals) == 0 && len(s.Steps) == 0 {
			s.Signals = []string{propPick(r, propSignalNames...)}
		}
		s.Park = p.chance(30)
		if j := p.m.job(ref.Job); j != nil {
			last := uint64(len(j.Events))
			switch n := r.IntN(100); {
			case n < 55:
				c.SeenSeq = last
			case n < 92:
				c.SeenSeq = uint64(r.IntN(int(last) + 1))
			default:
				c.SeenSeq = last + 1 // beyond the history: invalid
			}
		}
		return c
	case engine.KindSignal:
		c := &engine.Signal{Name: propPick(r, propSignalNames...), Payload: p.payload()}
		j := p.pickJob()
		if p.chance(40) {
			if w := p.pickWhere(p.status(engine.StatusWaiting, engine.StatusParked)); w != nil && w.Wait != nil && len(w.Wait.Signals) > 0 {
				j = w
				c.Name = propPick(r, w.Wait.Signals...)
			}
		}
		c.Target = p.pickTarget(j)
		return c
	case engine.KindFireTimers:
		return &engine.FireTimers{Max: p.sweepMax()}
	case engine.KindReclaim:
		return &engine.Reclaim{Max: p.sweepMax()}
	case engine.KindReleaseDelayed:
		return &engine.ReleaseDelayed{Max: p.sweepMax()}
	case engine.KindExpireDeadlines:
		return &engine.ExpireDeadlines{Max: p.sweepMax()}
	case engine.KindTerminate:
		j := p.pickJob()
		if p.chance(70) {
			j = p.pickWhere(func(j *propJob) bool { return !propTerminal(j.Status) })
		}
		return &engine.Terminate{Target: p.pickTarget(j), Reason: propPick(r, "", "ops")}
	case engine.KindCancel:
		j := p.pickJob()
		if p.chance(60) {
			j = p.pickWhere(func(j *propJob) bool { return !propTerminal(j.Status) })
		}
		return &engine.Cancel{Target: p.pickTarget(j), Reason: propPick(r, "", "user")}
	case engine.KindActivate:
		j := p.pickJob()
		if p.chance(70) {
			j = p.pickWhere(p.status(engine.StatusDraft))
		}
		return &engine.Activate{Target: p.pickTarget(j)}
	case engine.KindSuspend:
		j := p.pickJob()
		if p.chance(60) {
			j = p.pickWhere(p.status(engine.StatusDraft, engine.StatusQueued, engine.StatusRunning, engine.StatusWaiting, engine.StatusParked, engine.StatusRetrying))
		}
		return &engine.Suspend{Target: p.pickTarget(j), Reason: propPick(r, "", "ops")}
	case engine.KindResume:
		j := p.pickJob()
		if p.chance(70) {
			j = p.pickWhere(p.status(engine.StatusSuspended))
		}
		return &engine.Resume{Target: p.pickTarget(j)}
	case engine.KindComplete:
		return &engine.Complete{LeaseRef: p.pickChildRef(), Result: p.payload()}
	case engine.KindFail:
		return &engine.Fail{LeaseRef: p.pickChildRef(), Error: p.payload()}
	case engine.KindRequeue:
		c := &engine.Requeue{Reason: propPick(r, "", "", engine.ReasonRetry, "backoff")}
		if p.chance(5) {
			c.Reason = engine.ReasonLeaseExpired
		}
		if p.chance(35) {
			j := p.pickJob()
			if p.chance(70) {
				j = p.pickWhere(p.status(engine.StatusFailed))
			}
			if j == nil {
				c.Job = p.unknownID()
			} else {
				c.Job = j.ID
			}
		} else {
			c.LeaseRef = p.pickRef()
		}
		switch n := r.IntN(100); {
		case n < 50:
		case n < 97:
			c.DelayMS = 1 + int64(r.IntN(60_000))
		default:
			c.DelayMS = math.MaxInt64 - int64(r.IntN(1000)) // "never": must not wrap around
		}
		return c
	}
	panic(fmt.Sprintf("genKind(%d)", k))
}

func (p *propDriver) genCreate() *engine.CreateJob {
	r := p.r
	c := &engine.CreateJob{Type: propPick(r, propTypes[:2]...), Queue: propPick(r, "qa", "qb")}
	if p.chance(10) {
		c.Type = propTypes[2]
	}
	timeout := func() int64 {
		if p.chance(75) {
			return 0
		}
		return 1 + int64(r.IntN(120_000))
	}
	c.ExecutionTimeoutMS, c.RunTimeoutMS, c.ScheduleToStartTimeoutMS = timeout(), timeout(), timeout()
	if p.chance(35) {
		c.Input = []byte(fmt.Sprintf("in-%d", r.IntN(3)))
	}
	switch n := r.IntN(100); {
	case n < 60:
	case n < 88:
		c.WorkflowID = fmt.Sprintf("wf-%d", r.IntN(8))
	case n < 95:
		// An explicit id that looks like a generated one.
		c.WorkflowID = fmt.Sprintf("job-%d", len(p.m.jobs)+1+r.IntN(3))
	default:
		if j := p.pickJob(); j != nil {
			c.WorkflowID = j.WF
		}
	}
	c.ReusePolicy = engine.IDReusePolicy(r.IntN(3))
	c.Draft = p.chance(15)
	if p.chance(25) {
		j := p.pickJob()
		if p.chance(70) {
			j = p.pickWhere(p.status(engine.StatusRunning, engine.StatusWaiting, engine.StatusParked, engine.StatusQueued))
		}
		if p.chance(60) {
			j = p.pickWhere(p.status(engine.StatusRunning))
		}
		if j != nil && p.chance(95) {
			c.ParentID = j.ID
		} else {
			c.ParentID = p.unknownID()
		}
		// The parent's lease, which only its holder has: mostly the live
		// one, sometimes a stale attempt, a forged token, or none at all.
		switch pj := p.m.job(c.ParentID); {
		case p.chance(5):
		case pj == nil || pj.Attempt == 0 || p.chance(15):
			c.ParentLease = &engine.LeaseRef{Job: c.ParentID, Attempt: 1 + uint64(r.IntN(3))}
		default:
			ref := p.withToken(engine.LeaseRef{Job: pj.ID, Attempt: pj.Attempt}, pj)
			c.ParentLease = &ref
		}
		c.ParentStep = propPick(r, "c-0", "c-1", "c-2")
		if p.chance(90) {
			// The Engine marks every create it proposes with a nonce;
			// one without is an old log's, applied as it was then.
			c.Nonce = []byte("engine-nonce....")
		}
		c.ParentClosePolicy = engine.ParentClosePolicy(r.IntN(3))
	}
	return c
}

// genBad returns a command that must be refused, a note for the trace and
// the sentinel it must be refused with.
func (p *propDriver) genBad() (cmd engine.Command, note string, want error) {
	ref := p.pickRef()
	long := strings.Repeat("x", propMaxName+1)
	switch p.r.IntN(28) {
	case 0:
		return &engine.Claim{Queue: "qa", Owner: "w", Max: 0, LeaseMS: 1000}, "bad", engine.ErrInvalidCommand
	case 1:
		return &engine.Claim{Queue: "qa", Owner: "w", Max: propMaxBatch + 1, LeaseMS: 1000}, "bad", engine.ErrPayloadTooLarge
	case 2:
		return &engine.Claim{Queue: "qa", Owner: "w", Max: 1, LeaseMS: propMaxLeaseMS + 1}, "bad", engine.ErrInvalidCommand
	case 3:
		return &engine.Heartbeat{LeaseMS: 1000}, "bad", engine.ErrInvalidCommand
	case 4:
		return &engine.AppendEvents{LeaseRef: ref, Events: []engine.NewEvent{{Type: engine.EventJobCompleted}}}, "bad", engine.ErrInvalidCommand
	case 5:
		return &engine.AppendEvents{LeaseRef: ref}, "bad", engine.ErrInvalidCommand
	case 6:
		return &engine.CommitStep{LeaseRef: ref, Step: "a", Type: "activity_completed", CatchUp: true, Payload: []byte("x")}, "bad", engine.ErrInvalidCommand
	case 7:
		return &engine.Wait{LeaseRef: ref}, "bad", engine.ErrInvalidCommand
	case 8:
		return &engine.Wait{LeaseRef: ref, Spec: engine.WaitSpec{TimerID: "t1"}}, "bad", engine.ErrInvalidCommand
	case 9:
		return &engine.Signal{Name: "s1"}, "bad", engine.ErrInvalidCommand
	case 10:
		return &engine.Cancel{}, "bad", engine.ErrInvalidCommand
	case 11:
		return &engine.Requeue{}, "bad", engine.ErrInvalidCommand
	case 12:
		return &engine.Requeue{LeaseRef: ref, DelayMS: -1}, "bad", engine.ErrInvalidCommand
	case 13:
		return &engine.Complete{LeaseRef: engine.LeaseRef{Job: ref.Job}}, "bad", engine.ErrInvalidCommand
	case 14:
		return &engine.CreateJob{Queue: "qa"}, "bad", engine.ErrInvalidCommand
	case 15:
		return &engine.CreateJob{Type: "order", Queue: "qa", ReusePolicy: 3}, "bad", engine.ErrInvalidCommand
	case 16:
		return &engine.CreateJob{Type: "order", Queue: "qa", ParentStep: "c-0"}, "bad", engine.ErrInvalidCommand
	case 17:
		return &engine.CreateJob{Type: long, Queue: "qa"}, "bad", engine.ErrPayloadTooLarge
	case 18:
		c := &engine.Resume{Target: engine.Target{Job: ref.Job}}
		c.RequestID = long
		return c, "bad", engine.ErrPayloadTooLarge
	case 19:
		return &engine.CommitStep{LeaseRef: ref, Step: "a", Type: engine.EventJobFailed}, "bad", engine.ErrInvalidCommand
	case 20:
		return &engine.Activate{Target: engine.Target{Job: ref.Job}}, "now=0", engine.ErrInvalidCommand
	case 21:
		return &engine.Claim{Queue: "qa", Owner: "w", Max: 1, LeaseMS: 1000, Types: []string{"order", ""}}, "bad", engine.ErrInvalidCommand
	case 22:
		return &engine.CreateJob{Type: "order", Queue: "qa", RunTimeoutMS: -1}, "bad", engine.ErrInvalidCommand
	case 23:
		return &engine.Terminate{Reason: "ops"}, "bad", engine.ErrInvalidCommand
	case 24:
		return &engine.ExpireDeadlines{Max: 0}, "bad", engine.ErrInvalidCommand
	case 25:
		return &engine.CommitStep{LeaseRef: ref, Step: "a", Type: propPick(p.r, engine.EventSignalReceived, engine.EventTimerFired, engine.EventCancelRequested)}, "forged", engine.ErrInvalidCommand
	case 26:
		return &engine.Wait{LeaseRef: ref, Spec: engine.WaitSpec{Signals: []string{"s1"}}, Events: []engine.NewEvent{{Type: engine.EventCancelRequested}}}, "forged", engine.ErrInvalidCommand
	case 27:
		return &engine.CreateJob{Type: "order", Queue: "qa", Retry: &engine.RetryPolicy{BackoffCoefficient: propPick(p.r, math.NaN(), math.Inf(1), math.Inf(-1))}}, "bad", engine.ErrInvalidCommand
	}
	return &propBogusCmd{}, "bad", engine.ErrUnknownCommand
}

// ---------------------------------------------------------------------------
// DeriveStatus and CheckHistory against the specification's table.

func TestDeriveTransitionTableMatchesSpec(t *testing.T) {
	if got, want := engine.StatusEvents(), propSpecStatusEvents; !slices.Equal(got, want) {
		t.Fatalf("StatusEvents() = %v, the spec's %v", got, want)
	}
	events := append(engine.StatusEvents(), "activity_completed", engine.EventSignalReceived, engine.EventTimerFired)
	for _, from := range append([]engine.Status{engine.StatusNone}, engine.Statuses()...) {
		for _, et := range events {
			if engine.IsStatusEvent(et) != propIsStatus(et) {
				t.Errorf("IsStatusEvent(%s) = %v", et, engine.IsStatusEvent(et))
			}
			if propIsStatus(et) {
				to, ok := engine.BaseTransition(from, et)
				wto, wok := propSpecTable[from][et]
				if ok != wok || to != wto {
					t.Errorf("BaseTransition(%s, %s) = %s, %v; the spec says %s, %v", from, et, to, ok, wto, wok)
				}
			}
			for _, ev := range []engine.Event{{Type: et}, {Type: et, DelayMS: 5}, {Type: et, Wait: &engine.WaitSpec{Park: true}}, {Type: et, Wait: &engine.WaitSpec{}}} {
				to, ok := engine.Next(from, &ev)
				wto, wok := propSpecNext(from, &ev)
				if ok != wok || to != wto {
					t.Errorf("Next(%s, %+v) = %s, %v; the spec says %s, %v", from, ev, to, ok, wto, wok)
				}
			}
		}
	}
}

// propLegalHistory walks the spec's table from StatusNone, mixing in
// non-status events. states[k] is the status after the first k events.
func propLegalHistory(r *rand.Rand) (hist []engine.Event, states []engine.Status) {
	s := engine.StatusNone
	states = []engine.Status{s}
	n := 1 + r.IntN(40)
	var attempt uint64
	for i := 0; i < n; i++ {
		var ev engine.Event
		row := propSpecTable[s]
		if r.IntN(100) < 30 || len(row) == 0 {
			ev = engine.Event{Type: propPick[engine.EventType](r, "activity_completed", engine.EventSignalReceived, engine.EventTimerFired, "marker"), Name: "x"}
		} else {
			var legal []engine.EventType
			for _, et := range propSpecStatusEvents { // table order, so the walk is deterministic
				if _, ok := row[et]; ok {
					legal = append(legal, et)
				}
			}
			ev = engine.Event{Type: propPick(r, legal...)}
			switch ev.Type {
			case engine.EventJobLeased:
				attempt++
				ev.Attempt, ev.Name, ev.LeaseExpiryMS = attempt, "w", int64(1000+i)
			case engine.EventJobWaiting:
				ev.Wait = &engine.WaitSpec{Signals: []string{"s"}, Park: r.IntN(2) == 0}
			case engine.EventJobRequeued:
				if r.IntN(2) == 0 {
					ev.DelayMS = 1 + int64(r.IntN(1000))
				}
				ev.Reason = engine.ReasonRetry
				if s == engine.StatusRunning && r.IntN(2) == 0 {
					ev.Reason = engine.ReasonLeaseExpired
				}
			}
		}
		ev.Seq = uint64(i + 1)
		ev.AtMS = int64(1000 + i)
		to, ok := propSpecNext(s, &ev)
		if !ok {
			panic("propLegalHistory: picked an illegal event")
		}
		s = to
		hist = append(hist, ev)
		states = append(states, s)
	}
	return hist, states
}

func TestDeriveStatusRandomHistories(t *testing.T) {
	seed := int64(1)
	if *propertySeed != 0 {
		seed = *propertySeed
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0xde7))
	rounds := 5000
	if testing.Short() {
		rounds = 500
	}
	for round := 0; round < rounds; round++ {
		hist, states := propLegalHistory(r)
		fail := func(format string, a ...any) {
			t.Helper()
			t.Fatalf("seed=%d round=%d: %s\nhistory: %+v", seed, round, fmt.Sprintf(format, a...), hist)
		}
		final := states[len(states)-1]
		for k := range states {
			if got := engine.DeriveStatus(hist[:k]); got != states[k] {
				fail("DeriveStatus of the first %d events = %s, folding the spec's Next gives %s", k, got, states[k])
			}
		}
		if err := engine.CheckHistory(hist, final); err != nil {
			fail("CheckHistory refused a legal history: %v", err)
		}
		if err := engine.CheckHistory(hist, engine.StatusNone); err != nil {
			fail("CheckHistory (no stored status) refused a legal history: %v", err)
		}
		// A stored status other than the derived one is refused.
		if wrong := engine.Statuses()[r.IntN(len(engine.Statuses()))]; wrong != final {
			if err := engine.CheckHistory(hist, wrong); !errors.Is(err, engine.ErrInvariant) {
				fail("CheckHistory accepted stored status %s for a history deriving %s (err %v)", wrong, final, err)
			}
		}
		// An illegal status event inserted anywhere is refused.
		pos := r.IntN(len(hist) + 1)
		var illegal []engine.EventType
		for _, et := range propSpecStatusEvents {
			if _, ok := propSpecNext(states[pos], &engine.Event{Type: et}); !ok {
				illegal = append(illegal, et)
			}
		}
		bad := engine.Event{Type: propPick(r, illegal...), Wait: &engine.WaitSpec{Signals: []string{"s"}}}
		broken := slices.Insert(slices.Clone(hist), pos, bad)
		for i := range broken {
			broken[i].Seq = uint64(i + 1)
		}
		if err := engine.CheckHistory(broken, engine.StatusNone); !errors.Is(err, engine.ErrInvariant) {
			fail("CheckHistory accepted %s inserted at %d (status %s): err %v", bad.Type, pos+1, states[pos], err)
		}
		// A gap in the seqs is refused.
		if len(hist) > 1 {
			gap := slices.Clone(hist)
			i := 1 + r.IntN(len(gap)-1)
			gap = slices.Delete(gap, i-1, i)
			if err := engine.CheckHistory(gap, engine.StatusNone); !errors.Is(err, engine.ErrInvariant) {
				fail("CheckHistory accepted a history with event %d removed: err %v", i, err)
			}
		}
	}
}
