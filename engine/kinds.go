package engine

import "fmt"

// CommandKind is the stable number of a command type, stored in the log.
type CommandKind uint8

// Command kinds, in number order. They are stored in logs and request
// records: never reuse a number. Each kind has one entry in commandTable
// below, and the machine one entry in its apply table.
const (
	// The job commands.
	KindCreateJob       CommandKind = 1
	KindClaim           CommandKind = 2
	KindHeartbeat       CommandKind = 3
	KindAppendEvents    CommandKind = 4
	KindCommitStep      CommandKind = 5
	KindWait            CommandKind = 6
	KindSignal          CommandKind = 7
	KindFireTimers      CommandKind = 8
	KindReclaim         CommandKind = 9
	KindReleaseDelayed  CommandKind = 10
	KindCancel          CommandKind = 11
	KindActivate        CommandKind = 12
	KindSuspend         CommandKind = 13
	KindResume          CommandKind = 14
	KindComplete        CommandKind = 15
	KindFail            CommandKind = 16
	KindRequeue         CommandKind = 17
	KindRequestCancel   CommandKind = 18
	KindContinueAsNew   CommandKind = 19
	KindTerminate       CommandKind = 20
	KindExpireDeadlines CommandKind = 21

	// The schedule commands.
	KindCreateSchedule  CommandKind = 22
	KindUpdateSchedule  CommandKind = 23
	KindPauseSchedule   CommandKind = 24
	KindTriggerSchedule CommandKind = 25
	KindDeleteSchedule  CommandKind = 26
	KindFireSchedules   CommandKind = 27

	// KindCompleteAsync is CompleteAsync's kind (asynchronous activity
	// completion).
	KindCompleteAsync CommandKind = 28

	// KindBackfillSchedule is BackfillSchedule's kind.
	KindBackfillSchedule CommandKind = 29

	// The step and resource commands.
	KindLeaseStep      CommandKind = 30
	KindStepHeartbeat  CommandKind = 31
	KindEndStepAttempt CommandKind = 32
	KindAnswerStep     CommandKind = 33
	KindExpireSteps    CommandKind = 34
	KindAddResource    CommandKind = 35
	KindDrainResource  CommandKind = 36
	KindRemoveResource CommandKind = 37

	// The review task commands. They start at 40, leaving room for other
	// kinds.
	KindCreateReview    CommandKind = 40
	KindReviewCommand   CommandKind = 41
	KindClaimReviews    CommandKind = 42
	KindReviewReport    CommandKind = 43
	KindReviewHeartbeat CommandKind = 44
	KindReclaimReviews  CommandKind = 45

	// KindConfigureJob is ConfigureJob's kind, a job command that took the
	// next number free after the review task commands.
	KindConfigureJob CommandKind = 46

	// KindResetJob is ResetJob's kind (Temporal's ResetWorkflowExecution).
	KindResetJob CommandKind = 47

	// The pause family: a run's pause and the activity operations. They
	// start at 60, leaving room for other kinds.
	KindPause                 CommandKind = 60
	KindUnpause               CommandKind = 61
	KindPauseActivity         CommandKind = 62
	KindUnpauseActivity       CommandKind = 63
	KindResetActivity         CommandKind = 64
	KindUpdateActivityOptions CommandKind = 65

	// The batch operation commands. They start at 70, leaving room for
	// other kinds.
	KindStartBatch   CommandKind = 70
	KindAdvanceBatch CommandKind = 71
	KindStopBatch    CommandKind = 72

	// The cross-shard delivery commands (docs/sharding.md, "Cross-shard
	// work"). They start at 80, leaving room for other kinds. ChildClosed
	// and CloseChild are applied only inside a Deliver.
	KindDeliver     CommandKind = 80
	KindAckDelivery CommandKind = 81
	KindChildClosed CommandKind = 82
	KindCloseChild  CommandKind = 83
	// KindScheduleRunClosed tells a schedule's shard that a run it
	// started on another shard ended (applied only inside a Deliver).
	KindScheduleRunClosed CommandKind = 84
	// The resource unit commands of a step on another shard than the
	// pool's (outbox_unit.go), applied only inside a Deliver.
	KindAskUnit     CommandKind = 85
	KindUnitGranted CommandKind = 86
	KindReleaseUnit CommandKind = 87
	// KindReviewClosed tells a run's shard that a review task of one of its
	// steps, on another shard, ended (applied only inside a Deliver).
	KindReviewClosed CommandKind = 88
)

// commandSpec is what the contract knows of one command kind: its name
// (for logs, errors and metrics), and the empty command and result that
// its log and request-record forms decode into.
type commandSpec struct {
	name       string
	newCommand func() Command
	newResult  func() Result
}

// commandTable is the one table of command kinds, indexed by kind; an
// entry with no name is a number no command has.
var commandTable = [...]commandSpec{
	KindCreateJob:       {"CreateJob", func() Command { return new(CreateJob) }, func() Result { return new(CreateResult) }},
	KindClaim:           {"Claim", func() Command { return new(Claim) }, func() Result { return new(ClaimResult) }},
	KindHeartbeat:       {"Heartbeat", func() Command { return new(Heartbeat) }, func() Result { return new(HeartbeatResult) }},
	KindAppendEvents:    {"AppendEvents", func() Command { return new(AppendEvents) }, func() Result { return new(AppendResult) }},
	KindCommitStep:      {"CommitStep", func() Command { return new(CommitStep) }, func() Result { return new(AppendResult) }},
	KindWait:            {"Wait", func() Command { return new(Wait) }, func() Result { return new(WaitResult) }},
	KindSignal:          {"Signal", func() Command { return new(Signal) }, func() Result { return new(SignalResult) }},
	KindFireTimers:      {"FireTimers", func() Command { return new(FireTimers) }, func() Result { return new(SweepResult) }},
	KindReclaim:         {"Reclaim", func() Command { return new(Reclaim) }, func() Result { return new(SweepResult) }},
	KindReleaseDelayed:  {"ReleaseDelayed", func() Command { return new(ReleaseDelayed) }, func() Result { return new(SweepResult) }},
	KindCancel:          {"Cancel", func() Command { return new(Cancel) }, func() Result { return new(StatusResult) }},
	KindActivate:        {"Activate", func() Command { return new(Activate) }, func() Result { return new(StatusResult) }},
	KindSuspend:         {"Suspend", func() Command { return new(Suspend) }, func() Result { return new(StatusResult) }},
	KindResume:          {"Resume", func() Command { return new(Resume) }, func() Result { return new(StatusResult) }},
	KindComplete:        {"Complete", func() Command { return new(Complete) }, func() Result { return new(StatusResult) }},
	KindFail:            {"Fail", func() Command { return new(Fail) }, func() Result { return new(StatusResult) }},
	KindRequeue:         {"Requeue", func() Command { return new(Requeue) }, func() Result { return new(StatusResult) }},
	KindRequestCancel:   {"RequestCancel", func() Command { return new(RequestCancel) }, func() Result { return new(StatusResult) }},
	KindContinueAsNew:   {"ContinueAsNew", func() Command { return new(ContinueAsNew) }, func() Result { return new(CreateResult) }},
	KindTerminate:       {"Terminate", func() Command { return new(Terminate) }, func() Result { return new(StatusResult) }},
	KindExpireDeadlines: {"ExpireDeadlines", func() Command { return new(ExpireDeadlines) }, func() Result { return new(SweepResult) }},

	KindCreateSchedule:  {"CreateSchedule", func() Command { return new(CreateSchedule) }, func() Result { return new(ScheduleResult) }},
	KindUpdateSchedule:  {"UpdateSchedule", func() Command { return new(UpdateSchedule) }, func() Result { return new(ScheduleResult) }},
	KindPauseSchedule:   {"PauseSchedule", func() Command { return new(PauseSchedule) }, func() Result { return new(ScheduleResult) }},
	KindTriggerSchedule: {"TriggerSchedule", func() Command { return new(TriggerSchedule) }, func() Result { return new(ScheduleResult) }},
	KindDeleteSchedule:  {"DeleteSchedule", func() Command { return new(DeleteSchedule) }, func() Result { return new(ScheduleResult) }},
	KindFireSchedules:   {"FireSchedules", func() Command { return new(FireSchedules) }, func() Result { return new(SweepResult) }},

	KindCompleteAsync: {"CompleteAsync", func() Command { return new(CompleteAsync) }, func() Result { return new(StatusResult) }},

	KindBackfillSchedule: {"BackfillSchedule", func() Command { return new(BackfillSchedule) }, func() Result { return new(ScheduleResult) }},

	KindLeaseStep:      {"LeaseStep", func() Command { return new(LeaseStep) }, func() Result { return new(StepResult) }},
	KindStepHeartbeat:  {"StepHeartbeat", func() Command { return new(StepHeartbeat) }, func() Result { return new(StepResult) }},
	KindEndStepAttempt: {"EndStepAttempt", func() Command { return new(EndStepAttempt) }, func() Result { return new(StepResult) }},
	KindAnswerStep:     {"AnswerStep", func() Command { return new(AnswerStep) }, func() Result { return new(StepResult) }},
	KindExpireSteps:    {"ExpireSteps", func() Command { return new(ExpireSteps) }, func() Result { return new(SweepResult) }},
	KindAddResource:    {"AddResource", func() Command { return new(AddResource) }, func() Result { return new(ResourceResult) }},
	KindDrainResource:  {"DrainResource", func() Command { return new(DrainResource) }, func() Result { return new(ResourceResult) }},
	KindRemoveResource: {"RemoveResource", func() Command { return new(RemoveResource) }, func() Result { return new(ResourceResult) }},

	// The review task commands keep the names they had before their Go
	// types were renamed from Task to Review: a kind's name is a value of
	// the metrics' "kind" label and is part of the errors' texts on the
	// wire ("CreateTask.Phase is required"), so a new name would break
	// dashboards, alerts and callers matching the texts.
	KindCreateReview:    {"CreateTask", func() Command { return new(CreateReview) }, func() Result { return new(ReviewResult) }},
	KindReviewCommand:   {"TaskCommand", func() Command { return new(ReviewCommand) }, func() Result { return new(ReviewResult) }},
	KindClaimReviews:    {"ClaimTasks", func() Command { return new(ClaimReviews) }, func() Result { return new(ClaimReviewsResult) }},
	KindReviewReport:    {"TaskReport", func() Command { return new(ReviewReport) }, func() Result { return new(ReviewResult) }},
	KindReviewHeartbeat: {"TaskHeartbeat", func() Command { return new(ReviewHeartbeat) }, func() Result { return new(ReviewHeartbeatResult) }},
	KindReclaimReviews:  {"ReclaimTasks", func() Command { return new(ReclaimReviews) }, func() Result { return new(ReviewSweepResult) }},

	KindConfigureJob: {"ConfigureJob", func() Command { return new(ConfigureJob) }, func() Result { return new(StatusResult) }},

	KindResetJob: {"ResetJob", func() Command { return new(ResetJob) }, func() Result { return new(ResetResult) }},

	KindPause:                 {"Pause", func() Command { return new(Pause) }, func() Result { return new(StatusResult) }},
	KindUnpause:               {"Unpause", func() Command { return new(Unpause) }, func() Result { return new(StatusResult) }},
	KindPauseActivity:         {"PauseActivity", func() Command { return new(PauseActivity) }, func() Result { return new(ActivityResult) }},
	KindUnpauseActivity:       {"UnpauseActivity", func() Command { return new(UnpauseActivity) }, func() Result { return new(ActivityResult) }},
	KindResetActivity:         {"ResetActivity", func() Command { return new(ResetActivity) }, func() Result { return new(ActivityResult) }},
	KindUpdateActivityOptions: {"UpdateActivityOptions", func() Command { return new(UpdateActivityOptions) }, func() Result { return new(ActivityResult) }},

	KindStartBatch:   {"StartBatch", func() Command { return new(StartBatch) }, func() Result { return new(BatchResult) }},
	KindAdvanceBatch: {"AdvanceBatch", func() Command { return new(AdvanceBatch) }, func() Result { return new(BatchResult) }},
	KindStopBatch:    {"StopBatch", func() Command { return new(StopBatch) }, func() Result { return new(BatchResult) }},

	KindDeliver:     {"Deliver", func() Command { return new(Deliver) }, func() Result { return new(DeliverResult) }},
	KindAckDelivery: {"AckDelivery", func() Command { return new(AckDelivery) }, func() Result { return new(AckResult) }},
	KindChildClosed: {"ChildClosed", func() Command { return new(ChildClosed) }, func() Result { return new(StatusResult) }},
	KindCloseChild:  {"CloseChild", func() Command { return new(CloseChild) }, func() Result { return new(StatusResult) }},

	KindScheduleRunClosed: {"ScheduleRunClosed", func() Command { return new(ScheduleRunClosed) }, func() Result { return new(ScheduleResult) }},
	KindAskUnit:           {"AskUnit", func() Command { return new(AskUnit) }, func() Result { return new(UnitResult) }},
	KindUnitGranted:       {"UnitGranted", func() Command { return new(UnitGranted) }, func() Result { return new(UnitResult) }},
	KindReleaseUnit:       {"ReleaseUnit", func() Command { return new(ReleaseUnit) }, func() Result { return new(UnitResult) }},
	KindReviewClosed:      {"ReviewClosed", func() Command { return new(ReviewClosed) }, func() Result { return new(StatusResult) }},
}

// spec returns k's entry in commandTable, or nil for a kind this version
// does not know.
func (k CommandKind) spec() *commandSpec {
	if int(k) < len(commandTable) && commandTable[k].name != "" {
		return &commandTable[k]
	}
	return nil
}

func (k CommandKind) String() string {
	if s := k.spec(); s != nil {
		return s.name
	}
	return fmt.Sprintf("CommandKind(%d)", uint8(k))
}

// NewCommand returns an empty command of kind k, for decoding, and false
// for a kind this version does not know.
func NewCommand(k CommandKind) (Command, bool) {
	if s := k.spec(); s != nil {
		return s.newCommand(), true
	}
	return nil, false
}

// NewResult returns an empty result of the type a command of kind k
// answers with, or nil for a kind this version does not know.
func NewResult(k CommandKind) Result {
	if s := k.spec(); s != nil {
		return s.newResult()
	}
	return nil
}

// CommandKinds returns every command kind this version knows, in number
// order.
func CommandKinds() []CommandKind {
	var ks []CommandKind
	for k := range commandTable {
		if commandTable[k].name != "" {
			ks = append(ks, CommandKind(k))
		}
	}
	return ks
}
