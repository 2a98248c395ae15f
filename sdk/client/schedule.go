package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// ErrSkipScheduleUpdate, returned by a ScheduleUpdateOptions.DoUpdate, makes
// Update change nothing (as Temporal's).
var ErrSkipScheduleUpdate = errors.New("client: skip schedule update")

// ScheduleOverlapPolicy says what a schedule does when an action falls due
// while a run it started is open; the numbers are Temporal's.
type ScheduleOverlapPolicy = engine.OverlapPolicy

// The overlap policies.
const (
	ScheduleOverlapPolicyUnspecified    = engine.OverlapUnspecified
	ScheduleOverlapPolicySkip           = engine.OverlapSkip
	ScheduleOverlapPolicyBufferOne      = engine.OverlapBufferOne
	ScheduleOverlapPolicyBufferAll      = engine.OverlapBufferAll
	ScheduleOverlapPolicyCancelOther    = engine.OverlapCancelOther
	ScheduleOverlapPolicyTerminateOther = engine.OverlapTerminateOther
	ScheduleOverlapPolicyAllowAll       = engine.OverlapAllowAll
)

// ScheduleIntervalSpec matches the times Every apart, counted from the Unix
// epoch and moved by Offset.
type ScheduleIntervalSpec struct {
	Every  time.Duration
	Offset time.Duration
}

// ScheduleSpec is the set of times a schedule acts at: the union of its
// cron expressions' and intervals' times within [StartAt, EndAt]. Times are
// UTC; TimeZoneName must be "" or "UTC".
type ScheduleSpec struct {
	// Calendars are turned into cron expressions (see ScheduleCalendarSpec).
	Calendars       []ScheduleCalendarSpec
	Intervals       []ScheduleIntervalSpec
	CronExpressions []string
	StartAt         time.Time
	EndAt           time.Time
	// Jitter delays each action by up to this much, by an amount derived
	// from the schedule id and the time.
	Jitter       time.Duration
	TimeZoneName string
}

// ScheduleAction is what a schedule does; *ScheduleWorkflowAction is the one kind.
type ScheduleAction interface{ isScheduleAction() }

// ScheduleWorkflowAction starts a workflow run. Its workflow id is ID (the
// schedule id when empty) followed by "-" and the action's time in RFC 3339.
type ScheduleWorkflowAction struct {
	ID                       string
	Workflow                 any // a function or a type name
	Args                     []any
	TaskQueue                string
	WorkflowExecutionTimeout time.Duration
	WorkflowRunTimeout       time.Duration
	RetryPolicy              *workflow.RetryPolicy

	// input is the encoded Args of an action read back by Describe, sent
	// again by Update when Args is left nil.
	input []byte
}

func (*ScheduleWorkflowAction) isScheduleAction() {}

// ScheduleOptions configure ScheduleClient.Create.
type ScheduleOptions struct {
	ID     string
	Spec   ScheduleSpec
	Action ScheduleAction
	// Overlap defaults to Skip.
	Overlap ScheduleOverlapPolicy
	// CatchupWindow: times missed by more than this (the engine was down)
	// are skipped; 0 means one year, and it must be at least 10 s.
	CatchupWindow time.Duration
	// PauseOnFailure pauses the schedule when a run it started fails or
	// times out.
	PauseOnFailure bool
	Note           string
	Paused         bool
	// RemainingActions, when positive, limits the actions the spec takes.
	RemainingActions int
	// TriggerImmediately takes one action at once.
	TriggerImmediately bool
	// ScheduleBackfill takes the actions of these ranges of the spec's
	// times once the schedule is created (see ScheduleHandle.Backfill).
	ScheduleBackfill []ScheduleBackfill
}

// ScheduleBackfill is a range of a spec's times to act on now, under
// Overlap (unspecified: the schedule's policy). One range may hold at most
// engine.MaxBackfillTimes times.
type ScheduleBackfill struct {
	Start   time.Time
	End     time.Time
	Overlap ScheduleOverlapPolicy
}

// ScheduleBackfillOptions configure Backfill.
type ScheduleBackfillOptions struct {
	Backfill []ScheduleBackfill
}

// SchedulePolicies are a schedule's policies.
type SchedulePolicies struct {
	Overlap        ScheduleOverlapPolicy
	CatchupWindow  time.Duration
	PauseOnFailure bool
}

// ScheduleState is a schedule's state.
type ScheduleState struct {
	Note             string
	Paused           bool
	LimitedActions   bool
	RemainingActions int
}

// Schedule is a schedule's action, spec, policies and state.
type Schedule struct {
	Action ScheduleAction
	Spec   *ScheduleSpec
	Policy *SchedulePolicies
	State  *ScheduleState
}

// ScheduleWorkflowExecution is a run a schedule started.
type ScheduleWorkflowExecution struct {
	WorkflowID          string
	FirstExecutionRunID string
}

// ScheduleActionResult is one action a schedule took.
type ScheduleActionResult struct {
	// ScheduleTime is the action's time, jitter included; ActualTime when
	// it was taken.
	ScheduleTime        time.Time
	ActualTime          time.Time
	StartWorkflowResult *ScheduleWorkflowExecution
}

// ScheduleInfo is what a schedule did and will do.
type ScheduleInfo struct {
	NumActions                    int
	NumActionsMissedCatchupWindow int
	NumActionsSkippedOverlap      int
	RunningWorkflows              []ScheduleWorkflowExecution
	RecentActions                 []ScheduleActionResult
	NextActionTimes               []time.Time
	CreatedAt                     time.Time
	LastUpdateAt                  time.Time
}

// ScheduleDescription is what Describe returns.
type ScheduleDescription struct {
	Schedule Schedule
	Info     ScheduleInfo
}

// ScheduleUpdate is the schedule an update replaces the current one with.
type ScheduleUpdate struct {
	Schedule *Schedule
}

// ScheduleUpdateInput is the current schedule, given to DoUpdate.
type ScheduleUpdateInput struct {
	Description ScheduleDescription
}

// ScheduleUpdateOptions configure Update: DoUpdate gets the current
// description and returns the new schedule, or ErrSkipScheduleUpdate.
type ScheduleUpdateOptions struct {
	DoUpdate func(ScheduleUpdateInput) (*ScheduleUpdate, error)
}

// ScheduleTriggerOptions configure Trigger; an unspecified Overlap takes
// the schedule's.
type ScheduleTriggerOptions struct {
	Overlap ScheduleOverlapPolicy
}

// SchedulePauseOptions configure Pause; the note defaults to "Paused via Go SDK".
type SchedulePauseOptions struct{ Note string }

// ScheduleUnpauseOptions configure Unpause; the note defaults to "Unpaused via Go SDK".
type ScheduleUnpauseOptions struct{ Note string }

// ScheduleHandle is a schedule by id. Its methods are safe for concurrent
// use; two Updates racing may lose one, as in Temporal.
type ScheduleHandle interface {
	GetID() string
	Delete(ctx context.Context) error
	// Backfill takes the actions of the spec's times in each range now, as
	// if they were passing, paused or not and whatever the catch-up window.
	Backfill(ctx context.Context, options ScheduleBackfillOptions) error
	Update(ctx context.Context, options ScheduleUpdateOptions) error
	Describe(ctx context.Context) (*ScheduleDescription, error)
	Trigger(ctx context.Context, options ScheduleTriggerOptions) error
	Pause(ctx context.Context, options SchedulePauseOptions) error
	Unpause(ctx context.Context, options ScheduleUnpauseOptions) error
}

// ScheduleWorkflowType names the workflow a listed schedule starts.
type ScheduleWorkflowType struct{ Name string }

// ScheduleListEntry is one schedule in a list.
type ScheduleListEntry struct {
	ID              string
	Spec            *ScheduleSpec
	Note            string
	Paused          bool
	WorkflowType    ScheduleWorkflowType
	RecentActions   []ScheduleActionResult
	NextActionTimes []time.Time
}

// ScheduleListOptions configure List; PageSize defaults to 1000.
type ScheduleListOptions struct {
	PageSize int
}

// ScheduleListIterator walks a list of schedules, fetching pages as needed.
type ScheduleListIterator interface {
	HasNext() bool
	Next() (*ScheduleListEntry, error)
}

// ScheduleClient creates, lists and finds schedules.
type ScheduleClient interface {
	Create(ctx context.Context, options ScheduleOptions) (ScheduleHandle, error)
	List(ctx context.Context, options ScheduleListOptions) (ScheduleListIterator, error)
	GetHandle(ctx context.Context, scheduleID string) ScheduleHandle
}

// ScheduleClient returns the client's schedule client. Its calls fail when
// the engine service does not implement engine.ScheduleService.
func (c *workflowClient) ScheduleClient() ScheduleClient { return &scheduleClient{c: c} }

type scheduleClient struct{ c *workflowClient }

func (sc *scheduleClient) svc() (engine.ScheduleService, error) {
	s, ok := sc.c.e.(engine.ScheduleService)
	if !ok {
		return nil, fmt.Errorf("client: the service %T has no schedules", sc.c.e)
	}
	return s, nil
}

func (sc *scheduleClient) Create(ctx context.Context, o ScheduleOptions) (ScheduleHandle, error) {
	svc, err := sc.svc()
	if err != nil {
		return nil, err
	}
	sched := &Schedule{Action: o.Action, Spec: &o.Spec,
		Policy: &SchedulePolicies{Overlap: o.Overlap, CatchupWindow: o.CatchupWindow, PauseOnFailure: o.PauseOnFailure},
		State:  &ScheduleState{Note: o.Note, Paused: o.Paused, LimitedActions: o.RemainingActions > 0, RemainingActions: o.RemainingActions}}
	spec, act, pol, st, err := toEngineSchedule(sc.c, sched)
	if err != nil {
		return nil, err
	}
	if _, err := svc.CreateSchedule(ctx, engine.CreateSchedule{ID: o.ID, Spec: spec, Action: act, Policy: pol, State: st,
		TriggerImmediately: o.TriggerImmediately}); err != nil {
		return nil, err
	}
	h := &scheduleHandle{sc: sc, id: o.ID}
	if len(o.ScheduleBackfill) > 0 {
		if err := h.Backfill(ctx, ScheduleBackfillOptions{Backfill: o.ScheduleBackfill}); err != nil {
			return h, fmt.Errorf("client: schedule %q created, but its backfill failed: %w", o.ID, err)
		}
	}
	return h, nil
}

func (sc *scheduleClient) GetHandle(_ context.Context, id string) ScheduleHandle {
	return &scheduleHandle{sc: sc, id: id}
}

func (sc *scheduleClient) List(ctx context.Context, o ScheduleListOptions) (ScheduleListIterator, error) {
	svc, err := sc.svc()
	if err != nil {
		return nil, err
	}
	size := o.PageSize
	if size <= 0 || size > engine.MaxPage {
		size = engine.MaxPage
	}
	it := &scheduleIterator{ctx: ctx, svc: svc, size: size}
	it.fetch()
	return it, nil
}

type scheduleIterator struct {
	ctx  context.Context
	svc  engine.ScheduleService
	size int
	page []*engine.ScheduleDescription
	next string
	done bool
	err  error
}

func (it *scheduleIterator) fetch() {
	p, err := it.svc.ListSchedules(it.ctx, engine.ScheduleListQuery{After: it.next, Limit: it.size})
	if err != nil {
		it.err = err
		return
	}
	it.page, it.next, it.done = p.Schedules, p.Next, p.Next == ""
}

func (it *scheduleIterator) HasNext() bool {
	if len(it.page) == 0 && !it.done && it.err == nil {
		it.fetch()
	}
	return len(it.page) > 0 || it.err != nil
}

func (it *scheduleIterator) Next() (*ScheduleListEntry, error) {
	if !it.HasNext() {
		return nil, errors.New("client: no more schedules")
	}
	if it.err != nil {
		err := it.err
		it.err, it.done = nil, true
		return nil, err
	}
	d := it.page[0]
	it.page = it.page[1:]
	desc := fromEngineSchedule(d)
	return &ScheduleListEntry{ID: d.Schedule.ID, Spec: desc.Schedule.Spec, Note: d.Schedule.State.Note, Paused: d.Schedule.State.Paused,
		WorkflowType: ScheduleWorkflowType{Name: d.Schedule.Action.Type}, RecentActions: desc.Info.RecentActions,
		NextActionTimes: desc.Info.NextActionTimes}, nil
}

type scheduleHandle struct {
	sc *scheduleClient
	id string
}

func (h *scheduleHandle) GetID() string { return h.id }

func (h *scheduleHandle) Delete(ctx context.Context) error {
	svc, err := h.sc.svc()
	if err != nil {
		return err
	}
	return svc.DeleteSchedule(ctx, engine.DeleteSchedule{ID: h.id})
}

func (h *scheduleHandle) Describe(ctx context.Context) (*ScheduleDescription, error) {
	svc, err := h.sc.svc()
	if err != nil {
		return nil, err
	}
	d, err := svc.DescribeSchedule(ctx, h.id)
	if err != nil {
		return nil, err
	}
	return fromEngineSchedule(d), nil
}

func (h *scheduleHandle) Update(ctx context.Context, o ScheduleUpdateOptions) error {
	if o.DoUpdate == nil {
		return errors.New("client: ScheduleUpdateOptions.DoUpdate is required")
	}
	d, err := h.Describe(ctx)
	if err != nil {
		return err
	}
	up, err := o.DoUpdate(ScheduleUpdateInput{Description: *d})
	if errors.Is(err, ErrSkipScheduleUpdate) {
		return nil
	}
	if err != nil {
		return err
	}
	if up == nil || up.Schedule == nil {
		return errors.New("client: DoUpdate returned no schedule")
	}
	spec, act, pol, st, err := toEngineSchedule(h.sc.c, up.Schedule)
	if err != nil {
		return err
	}
	svc, err := h.sc.svc()
	if err != nil {
		return err
	}
	_, err = svc.UpdateSchedule(ctx, engine.UpdateSchedule{ID: h.id, Spec: spec, Action: act, Policy: pol, State: st})
	return err
}

func (h *scheduleHandle) Backfill(ctx context.Context, o ScheduleBackfillOptions) error {
	svc, err := h.sc.svc()
	if err != nil {
		return err
	}
	for _, b := range o.Backfill {
		if _, err := svc.BackfillSchedule(ctx, engine.BackfillSchedule{ID: h.id, StartMS: b.Start.UnixMilli(), EndMS: b.End.UnixMilli(),
			Overlap: b.Overlap}); err != nil {
			return err
		}
	}
	return nil
}

func (h *scheduleHandle) Trigger(ctx context.Context, o ScheduleTriggerOptions) error {
	svc, err := h.sc.svc()
	if err != nil {
		return err
	}
	_, err = svc.TriggerSchedule(ctx, engine.TriggerSchedule{ID: h.id, Overlap: o.Overlap})
	return err
}

func (h *scheduleHandle) Pause(ctx context.Context, o SchedulePauseOptions) error {
	return h.pause(ctx, true, o.Note, "Paused via Go SDK")
}

func (h *scheduleHandle) Unpause(ctx context.Context, o ScheduleUnpauseOptions) error {
	return h.pause(ctx, false, o.Note, "Unpaused via Go SDK")
}

func (h *scheduleHandle) pause(ctx context.Context, paused bool, note, def string) error {
	svc, err := h.sc.svc()
	if err != nil {
		return err
	}
	if note == "" {
		note = def
	}
	_, err = svc.PauseSchedule(ctx, engine.PauseSchedule{ID: h.id, Paused: paused, Note: note})
	return err
}

func unixMS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromUnixMS(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// toEngineSchedule converts a schedule to the engine's parts.
func toEngineSchedule(c *workflowClient, s *Schedule) (engine.ScheduleSpec, engine.ScheduleAction, engine.SchedulePolicy, engine.ScheduleState, error) {
	var (
		spec engine.ScheduleSpec
		act  engine.ScheduleAction
		pol  engine.SchedulePolicy
		st   engine.ScheduleState
	)
	if s.Spec == nil {
		return spec, act, pol, st, errors.New("client: a schedule needs a Spec")
	}
	if z := s.Spec.TimeZoneName; z != "" && z != "UTC" {
		return spec, act, pol, st, fmt.Errorf("client: ScheduleSpec.TimeZoneName %q: schedules run in UTC", z)
	}
	spec = engine.ScheduleSpec{CronExpressions: append([]string(nil), s.Spec.CronExpressions...), StartAtMS: unixMS(s.Spec.StartAt), EndAtMS: unixMS(s.Spec.EndAt),
		JitterMS: s.Spec.Jitter.Milliseconds()}
	for _, cal := range s.Spec.Calendars {
		line, err := cal.cron()
		if err != nil {
			return spec, act, pol, st, err
		}
		spec.CronExpressions = append(spec.CronExpressions, line)
	}
	for _, iv := range s.Spec.Intervals {
		spec.Intervals = append(spec.Intervals, engine.ScheduleInterval{EveryMS: iv.Every.Milliseconds(), OffsetMS: iv.Offset.Milliseconds()})
	}
	wa, ok := s.Action.(*ScheduleWorkflowAction)
	if !ok || wa == nil {
		return spec, act, pol, st, fmt.Errorf("client: a schedule's Action must be a *ScheduleWorkflowAction, not %T", s.Action)
	}
	name, ok := wa.Workflow.(string)
	if !ok {
		name = workflow.ActivityName(wa.Workflow)
	}
	input := wa.input
	if wa.Args != nil || input == nil {
		var err error
		if input, err = c.encode(wa.Args...); err != nil {
			return spec, act, pol, st, fmt.Errorf("client: schedule workflow arguments: %w", err)
		}
	}
	act = engine.ScheduleAction{WorkflowID: wa.ID, Type: name, Queue: wa.TaskQueue, Input: input,
		ExecutionTimeoutMS: wa.WorkflowExecutionTimeout.Milliseconds(), RunTimeoutMS: wa.WorkflowRunTimeout.Milliseconds()}
	if p := wa.RetryPolicy; p != nil {
		if err := p.Validate(); err != nil {
			return spec, act, pol, st, fmt.Errorf("client: ScheduleWorkflowAction.RetryPolicy: %w", err)
		}
		act.Retry = &engine.RetryPolicy{InitialIntervalMS: p.InitialInterval.Milliseconds(), BackoffCoefficient: p.BackoffCoefficient,
			MaximumIntervalMS: p.MaximumInterval.Milliseconds(), MaximumAttempts: p.MaximumAttempts,
			NonRetryableErrorTypes: p.NonRetryableErrorTypes, Backoff: uint8(p.Backoff)}
	}
	if s.Policy != nil {
		pol = engine.SchedulePolicy{Overlap: s.Policy.Overlap, CatchupWindowMS: s.Policy.CatchupWindow.Milliseconds(), PauseOnFailure: s.Policy.PauseOnFailure}
	}
	if s.State != nil {
		st = engine.ScheduleState{Note: s.State.Note, Paused: s.State.Paused, LimitedActions: s.State.LimitedActions, RemainingActions: int64(s.State.RemainingActions)}
	}
	return spec, act, pol, st, nil
}

// fromEngineSchedule converts an engine description to the SDK's.
func fromEngineSchedule(d *engine.ScheduleDescription) *ScheduleDescription {
	s := d.Schedule
	spec := &ScheduleSpec{CronExpressions: s.Spec.CronExpressions, StartAt: fromUnixMS(s.Spec.StartAtMS), EndAt: fromUnixMS(s.Spec.EndAtMS),
		Jitter: time.Duration(s.Spec.JitterMS) * time.Millisecond}
	for _, iv := range s.Spec.Intervals {
		spec.Intervals = append(spec.Intervals, ScheduleIntervalSpec{Every: time.Duration(iv.EveryMS) * time.Millisecond, Offset: time.Duration(iv.OffsetMS) * time.Millisecond})
	}
	act := &ScheduleWorkflowAction{ID: s.Action.WorkflowID, Workflow: s.Action.Type, TaskQueue: s.Action.Queue,
		WorkflowExecutionTimeout: time.Duration(s.Action.ExecutionTimeoutMS) * time.Millisecond,
		WorkflowRunTimeout:       time.Duration(s.Action.RunTimeoutMS) * time.Millisecond, input: s.Action.Input}
	if r := s.Action.Retry; r != nil {
		act.RetryPolicy = &workflow.RetryPolicy{InitialInterval: time.Duration(r.InitialIntervalMS) * time.Millisecond,
			BackoffCoefficient: r.BackoffCoefficient, MaximumInterval: time.Duration(r.MaximumIntervalMS) * time.Millisecond,
			MaximumAttempts: r.MaximumAttempts, NonRetryableErrorTypes: r.NonRetryableErrorTypes, Backoff: workflow.BackoffKind(r.Backoff)}
	}
	out := &ScheduleDescription{
		Schedule: Schedule{Action: act, Spec: spec,
			Policy: &SchedulePolicies{Overlap: s.Policy.Overlap, CatchupWindow: time.Duration(s.Policy.CatchupWindowMS) * time.Millisecond, PauseOnFailure: s.Policy.PauseOnFailure},
			State:  &ScheduleState{Note: s.State.Note, Paused: s.State.Paused, LimitedActions: s.State.LimitedActions, RemainingActions: int(s.State.RemainingActions)}},
		Info: ScheduleInfo{NumActions: int(s.NumActions), NumActionsMissedCatchupWindow: int(s.NumMissedCatchup),
			NumActionsSkippedOverlap: int(s.NumSkippedOverlap), CreatedAt: fromUnixMS(s.CreatedMS), LastUpdateAt: fromUnixMS(s.UpdatedMS)},
	}
	for _, r := range s.Running {
		out.Info.RunningWorkflows = append(out.Info.RunningWorkflows, scheduleExecution(r))
	}
	for _, r := range s.Recent {
		scheduled := r.NominalMS // a trigger's: no jitter
		if r.ActualMS != r.NominalMS {
			scheduled += engine.ScheduleJitter(s.ID, r.NominalMS, s.Spec.JitterMS)
		}
		started := scheduleExecution(r)
		out.Info.RecentActions = append(out.Info.RecentActions, ScheduleActionResult{
			ScheduleTime: fromUnixMS(scheduled), ActualTime: fromUnixMS(r.ActualMS),
			StartWorkflowResult: &started})
	}
	for _, at := range d.NextActionTimesMS {
		out.Info.NextActionTimes = append(out.Info.NextActionTimes, fromUnixMS(at))
	}
	return out
}

// scheduleExecution is a schedule's run as Temporal's client shows it. A
// run on its way to another shard of a sharded cluster has no run id yet:
// it shows none, as a run Temporal's server has not started.
func scheduleExecution(r engine.ScheduleRun) ScheduleWorkflowExecution {
	e := ScheduleWorkflowExecution{WorkflowID: r.WorkflowID}
	if r.Job != 0 {
		e.FirstExecutionRunID = fmt.Sprint(r.Job)
	}
	return e
}
