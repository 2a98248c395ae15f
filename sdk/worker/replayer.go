package worker

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/heddlewf/heddle/sdk/log"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/internal/temporalhistory"
	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// WorkflowReplayer replays recorded workflow histories against the current
// workflow code, without an engine and without executing anything: like
// Temporal's worker.WorkflowReplayer, it is meant for a CI check that code
// changes stay compatible with the runs already in flight. Register the
// workflow functions as a worker would and replay each history; a change
// that needs workflow.GetVersion shows up as a *workflow.NondeterminismError
// (errors.As finds it in the returned error) naming the step, the recorded
// event and what the code did instead.
//
// Histories come from heddle (client.GetWorkflowHistory, written to a file
// with ExportHistoryJSON; `heddle workflow history -o json`; the HTTP API's
// history page) or from Temporal (the file `temporal workflow show --output
// json` writes, or the Web UI's download): the JSON methods and
// HistoryFromJSON read them all.
//
// A WorkflowReplayer is safe for concurrent use.
type WorkflowReplayer interface {
	// RegisterWorkflow registers a workflow function under its name, the
	// name a Worker would register it under.
	RegisterWorkflow(w any)
	// RegisterWorkflowWithOptions registers a workflow function under
	// options.Name ("" for its own name).
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
	// RegisterWorkflowWithName registers a workflow function under name:
	// the workflow type recorded in the histories it replays (heddle's
	// shorthand).
	RegisterWorkflowWithName(w any, name string)
	// RegisterDynamicWorkflow registers the workflow that replays the
	// histories of every type registered under no name of its own.
	RegisterDynamicWorkflow(w any, options workflow.DynamicRegisterOptions)

	// ReplayWorkflowHistory replays a whole history (as
	// client.GetWorkflowHistory or HistoryFromJSON returns it, starting
	// at seq 1) against the registered code of the type its first event
	// names. Recorded results are fed back to the code; nothing is
	// executed and nothing is written. It returns nil when the code
	// issues the recorded commands in the recorded order (the code may go
	// on past the end of the history: the run may have been exported in
	// flight) and, when the history ends with the run's completion, the
	// code returns too. Otherwise it returns the error that stopped the
	// replay: a *workflow.NondeterminismError (wrapped) when the code does
	// something else than the history recorded, including a recorded
	// step the code never issued, or a panic or deadlock of the code.
	// The logger may be nil; it gets a line per replay at Debug level.
	ReplayWorkflowHistory(logger ReplayLogger, history []engine.Event) error
	// ReplayWorkflowHistoryFromJSONFile reads a history file in any of
	// the forms HistoryFromJSON reads and replays it; errors name the file.
	ReplayWorkflowHistoryFromJSONFile(logger ReplayLogger, jsonfileName string) error
	// ReplayPartialWorkflowHistoryFromJSONFile replays a history file up
	// to and including the event lastEventID (a Temporal event id, or a
	// heddle seq); 0 replays it all.
	ReplayPartialWorkflowHistoryFromJSONFile(logger ReplayLogger, jsonfileName string, lastEventID int64) error
	// ReplayWorkflowHistoryFromJSON reads a history in any of the forms
	// HistoryFromJSON reads from r and replays it (heddle's addition).
	ReplayWorkflowHistoryFromJSON(logger ReplayLogger, r io.Reader) error
	// GetWorkflowResult decodes the result of the last replayed history
	// of workflowID whose run completed into valuePtr. Replayed runs have
	// the workflow id ReplayWorkflowID; "" means that one.
	GetWorkflowResult(workflowID string, valuePtr any) error
}

// ReplayLogger is what a replayer logs through: Temporal's log.Logger, as
// sdk/log has it, so that a Temporal logger, a heddle one, or nil may be
// passed.
type ReplayLogger = log.Logger

// ReplayWorkflowID is the workflow id (and run id) a replayed run sees in
// workflow.GetInfo: histories do not all record theirs. It is Temporal's.
const ReplayWorkflowID = "ReplayId"

type workflowReplayer struct {
	mu          sync.Mutex
	workflows   map[string]any
	dynWorkflow any
	results     map[string][]byte
}

// NewWorkflowReplayer returns a replayer with no workflows registered.
func NewWorkflowReplayer() WorkflowReplayer {
	return &workflowReplayer{workflows: map[string]any{}, results: map[string][]byte{}}
}

func (r *workflowReplayer) RegisterWorkflow(fn any) {
	r.RegisterWorkflowWithName(fn, workflow.ActivityName(fn))
}

func (r *workflowReplayer) RegisterWorkflowWithName(fn any, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.workflows[name] = fn
}

func (r *workflowReplayer) RegisterWorkflowWithOptions(fn any, options workflow.RegisterOptions) {
	name := options.Name
	if name == "" {
		name = workflow.ActivityName(fn)
	}
	r.RegisterWorkflowWithName(fn, name)
}

func (r *workflowReplayer) RegisterDynamicWorkflow(fn any, _ workflow.DynamicRegisterOptions) {
	if err := checkDynamic(fn, workflowCtxType); err != nil {
		panic("worker: RegisterDynamicWorkflow: " + err.Error())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dynWorkflow = fn
}

func (r *workflowReplayer) workflowFn(name string) any {
	r.mu.Lock()
	defer r.mu.Unlock()
	if fn := r.workflows[name]; fn != nil {
		return fn
	}
	return r.dynWorkflow
}

// replayJobID is the job id a replayed execution runs under.
const replayJobID engine.JobID = 1

func (r *workflowReplayer) ReplayWorkflowHistory(logger ReplayLogger, history []engine.Event) error {
	return r.replay(logger, history, nil)
}

// replay replays history; th is the Temporal history it was mapped from,
// nil for heddle's own.
func (r *workflowReplayer) replay(logger ReplayLogger, history []engine.Event, th *temporalhistory.History) error {
	if len(history) == 0 {
		return errors.New("worker: replay: the history is empty")
	}
	first := history[0]
	if first.Type != engine.EventJobCreated && first.Type != engine.EventJobDrafted {
		return fmt.Errorf("worker: replay: the history starts with a %s event at seq %d, not %s",
			first.Type, first.Seq, engine.EventJobCreated)
	}
	typ := first.Name
	fn := r.workflowFn(typ)
	if fn == nil {
		return fmt.Errorf("worker: replay: workflow type %q is not registered with the replayer", typ)
	}
	if logger != nil {
		logger.Debug("replaying workflow history", "WorkflowType", typ, "Events", len(history))
	}
	info := sdkhook.WorkflowInfo{WorkflowID: ReplayWorkflowID, RunID: ReplayWorkflowID, WorkflowType: typ}
	x := replay.NewExecution(replayJobID, sdkhook.NewEntry(fn, info))
	defer x.Close()
	err := x.Advance(history, true)
	if err == nil {
		err = x.Fault()
	}
	if err == nil {
		err = checkEnd(x, &history[len(history)-1], th)
	}
	if err != nil {
		err = fmt.Errorf("worker: replay of workflow type %q: %w%s", typ, err, originOf(err, th))
		if logger != nil {
			logger.Warn("workflow history replay failed", "WorkflowType", typ, "Error", err)
		}
		return err
	}
	if done, result, ferr := x.Finished(); done && ferr == nil {
		r.mu.Lock()
		r.results[ReplayWorkflowID] = result
		r.mu.Unlock()
	}
	return nil
}

// checkEnd holds the code to the history's last event when that is the
// run's completion, as Temporal's replayer does: a completed run's code
// must return without an error, a continued-as-new run's must continue as
// new. Failures, timeouts and terminations are not checked (the engine, not
// the code, may have decided them). For a Temporal history, which records
// every command when it is issued, the code must also have issued no
// command the history lacks (heddle's own histories record some commands
// only when they end).
func checkEnd(x *replay.Execution, last *engine.Event, th *temporalhistory.History) error {
	if last.Type != engine.EventJobCompleted {
		return nil
	}
	done, _, err := x.Finished()
	var can *workflow.ContinueAsNewError
	switch {
	case !done:
		return fmt.Errorf("%w: the history ends with %s at seq %d, but the code has not returned", ErrReplayResultDiffers, last.Type, last.Seq)
	case last.Reason == engine.ReasonContinuedAsNew && !errors.As(err, &can):
		return fmt.Errorf("%w: the history continues as new at seq %d, but the code returned %v", ErrReplayResultDiffers, last.Seq, err)
	case last.Reason != engine.ReasonContinuedAsNew && err != nil:
		return fmt.Errorf("%w: the history completes at seq %d, but the code returned the error %v", ErrReplayResultDiffers, last.Seq, err)
	}
	if th == nil {
		return nil
	}
	for _, c := range x.Unresolved() {
		if !c.Recorded && !th.Issued[c.Step] {
			return &workflow.NondeterminismError{Step: c.Step, Did: fmt.Sprintf("issued %s %q, which the history does not record", c.Kind, c.Name), Where: c.Where}
		}
	}
	return nil
}

// originOf names the Temporal event a nondeterminism error's event was
// mapped from, so the report points into the file the user has.
func originOf(err error, th *temporalhistory.History) string {
	var nd *replay.NondeterminismError
	if th == nil || !errors.As(err, &nd) || nd.Event == nil || nd.Event.Seq == 0 || nd.Event.Seq > uint64(len(th.Origins)) {
		return ""
	}
	o := th.Origins[nd.Event.Seq-1]
	return fmt.Sprintf(" (Temporal event %d, %s)", o.EventID, o.EventType)
}

func (r *workflowReplayer) ReplayWorkflowHistoryFromJSONFile(logger ReplayLogger, jsonfileName string) error {
	return r.ReplayPartialWorkflowHistoryFromJSONFile(logger, jsonfileName, 0)
}

func (r *workflowReplayer) ReplayPartialWorkflowHistoryFromJSONFile(logger ReplayLogger, jsonfileName string, lastEventID int64) error {
	f, err := os.Open(jsonfileName)
	if err != nil {
		return fmt.Errorf("worker: replay: %w", err)
	}
	data, err := readHistoryInput(f)
	_ = f.Close() // read only: nothing is lost if closing fails
	if err != nil {
		return fmt.Errorf("worker: replay: history file %s: %w", jsonfileName, err)
	}
	if err := r.replayJSON(logger, data, lastEventID); err != nil {
		return fmt.Errorf("history file %s: %w", jsonfileName, err)
	}
	return nil
}

func (r *workflowReplayer) ReplayWorkflowHistoryFromJSON(logger ReplayLogger, rd io.Reader) error {
	data, err := readHistoryInput(rd)
	if err != nil {
		return fmt.Errorf("worker: replay: %w", err)
	}
	return r.replayJSON(logger, data, 0)
}

func (r *workflowReplayer) replayJSON(logger ReplayLogger, data []byte, lastEventID int64) error {
	history, th, err := decodeAnyHistory(data, lastEventID)
	if err != nil {
		return fmt.Errorf("worker: replay: %w", err)
	}
	return r.replay(logger, history, th)
}

func (r *workflowReplayer) GetWorkflowResult(workflowID string, valuePtr any) error {
	if workflowID == "" {
		workflowID = ReplayWorkflowID
	}
	r.mu.Lock()
	result, ok := r.results[workflowID]
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %q", ErrNoReplayResult, workflowID)
	}
	return converter.NewEncodedValue(result).Get(valuePtr)
}

// HistoryJSONOptions are the options of HistoryFromJSON.
type HistoryJSONOptions struct {
	// LastEventID, when above 0, ends the history at that event (a
	// Temporal event id, or a heddle seq).
	LastEventID int64
}

// HistoryFromJSON reads a history in any of its JSON forms — heddle's
// (ExportHistoryJSON's array of events, the document `heddle workflow
// history -o json` prints, the HTTP API's history page) or Temporal's
// (`temporal workflow show --output json`: an object whose "events" have an
// eventType) — as the events ReplayWorkflowHistory replays. Temporal's events are mapped onto
// the heddle events the same code records (see docs/temporal.md); an event
// heddle cannot express is an error naming its id and type. It is
// Temporal's client.HistoryFromJSON, here because it returns heddle's
// events.
func HistoryFromJSON(r io.Reader, options HistoryJSONOptions) ([]engine.Event, error) {
	data, err := readHistoryInput(r)
	if err != nil {
		return nil, err
	}
	history, _, err := decodeAnyHistory(data, options.LastEventID)
	return history, err
}

// decodeAnyHistory tells the formats apart (an array is ExportHistoryJSON's;
// an object is the CLI's document, the HTTP API's page or Temporal's
// export, see objectKind) and decodes any; the Temporal history is nil for
// heddle's formats.
func decodeAnyHistory(data []byte, lastEventID int64) ([]engine.Event, *temporalhistory.History, error) {
	trimmed := bytes.TrimSpace(data)
	var history []engine.Event
	var err error
	switch {
	case len(trimmed) == 0 || trimmed[0] != '{':
		history, err = ReadHistoryJSON(bytes.NewReader(trimmed))
	case objectKind(trimmed) == kindCLIDocument:
		history, err = decodeCLIDocument(trimmed)
	case objectKind(trimmed) == kindHTTPPage:
		history, err = decodeHTTPPage(trimmed)
	default:
		h, err := temporalhistory.Decode(trimmed, lastEventID)
		if err != nil {
			return nil, nil, err
		}
		return h.Events, h, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if lastEventID > 0 && lastEventID < int64(len(history)) {
		history = history[:lastEventID]
	}
	return history, nil, nil
}
