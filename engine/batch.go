package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A batch operation (Temporal's batch job) applies one operation — cancel,
// terminate, signal, reset, pause, unpause — to every run a list query
// matches. It is a
// durable record (Batch) that the log changes through three commands:
// StartBatch records it, AdvanceBatch moves it one page on, StopBatch ends
// it early. The runtime's batch runner (package engine/embedded; on a
// cluster the leader's) does the work: it lists the runs page by page and
// proposes each run's command, then records the page with AdvanceBatch.
//
// Each run is acted on once. The runner first records a page's run ids in
// the batch (Batch.Pending, with AdvanceBatch) and only then proposes their
// commands, each with a request id derived from the batch and the run
// (BatchRequestID), so a runner that stops between the two (a crash, a
// failover) proposes the same commands again and the log answers them with
// their first results: nothing is applied twice, and the counts record each
// run once.

// BatchOperation names what a batch does to each run.
type BatchOperation string

// The batch operations. Each has one row in batchOps.
const (
	// BatchCancel asks each run to cancel (RequestCancel; Temporal's batch
	// cancel): its workflow code decides how to end.
	BatchCancel BatchOperation = "cancel"
	// BatchTerminate ends each run at once as Terminated (Terminate).
	BatchTerminate BatchOperation = "terminate"
	// BatchSignal sends each run the batch's signal (Signal).
	BatchSignal BatchOperation = "signal"
	// BatchReset resets each run to its first or last turn (ResetJob).
	BatchReset BatchOperation = "reset"
	// BatchPause pauses each run (Pause): it takes no new turn until
	// unpaused.
	BatchPause BatchOperation = "pause"
	// BatchUnpause ends each run's pause (Unpause).
	BatchUnpause BatchOperation = "unpause"
)

// batchOp is one operation's row: the command it proposes for one run, and
// its check of a StartBatch.
type batchOp struct {
	command func(b *Batch, job JobID) Command
	check   func(ch *checker, s *BatchSpec)
}

// batchOps is the one table of batch operations: adding one is a row.
var batchOps = map[BatchOperation]batchOp{
	BatchCancel: {
		command: func(b *Batch, job JobID) Command {
			return &RequestCancel{Target: Target{Job: job}, Reason: b.Reason}
		},
	},
	BatchTerminate: {
		command: func(b *Batch, job JobID) Command {
			return &Terminate{Target: Target{Job: job}, Reason: b.Reason}
		},
	},
	BatchSignal: {
		command: func(b *Batch, job JobID) Command {
			return &Signal{Target: Target{Job: job}, Name: b.SignalName, Payload: b.SignalPayload}
		},
		check: func(ch *checker, s *BatchSpec) {
			ch.name("SignalName", s.SignalName, true)
			ch.payload("SignalPayload", s.SignalPayload)
		},
	},
	BatchPause: {
		command: func(b *Batch, job JobID) Command { return &Pause{Target: Target{Job: job}, Reason: b.Reason} },
	},
	BatchUnpause: {
		command: func(b *Batch, job JobID) Command { return &Unpause{Target: Target{Job: job}, Reason: b.Reason} },
	},
	BatchReset: {
		command: func(b *Batch, job JobID) Command {
			return &ResetJob{Target: Target{Job: job}, Type: b.ResetType, Reason: b.Reason,
				ExcludeSignals: b.ExcludeSignals, ExcludeUpdates: b.ExcludeUpdates}
		},
		check: func(ch *checker, s *BatchSpec) {
			if ch.err == nil && s.ResetType != ResetFirstWorkflowTask && s.ResetType != ResetLastWorkflowTask {
				ch.fail("ResetType", "must be FirstWorkflowTask or LastWorkflowTask: an event id names a point of one run only")
			}
		},
	},
}

// BatchOperations lists the operations a batch may do, in name order.
func BatchOperations() []BatchOperation {
	return []BatchOperation{BatchCancel, BatchPause, BatchReset, BatchSignal, BatchTerminate, BatchUnpause}
}

// ParseBatchOperation returns the operation named s (any case).
func ParseBatchOperation(s string) (BatchOperation, error) {
	op := BatchOperation(strings.ToLower(strings.TrimSpace(s)))
	if _, ok := batchOps[op]; !ok {
		names := make([]string, 0, len(batchOps))
		for _, o := range BatchOperations() {
			names = append(names, string(o))
		}
		return "", fmt.Errorf("%w: %q is not a batch operation (want %s)", ErrInvalidCommand, s, strings.Join(names, ", "))
	}
	return op, nil
}

// BatchRequestID is the request id of the command a batch proposes for one
// run: the same for every proposal of it, so that the log applies it once
// (a retry after a crash or failover gets the first result back).
func BatchRequestID(batch string, job JobID) string {
	return "batch/" + batch + "/" + strconv.FormatUint(uint64(job), 10)
}

// Command returns the command b proposes for run job, with its request id.
func (b *Batch) Command(job JobID) (Command, error) {
	op, ok := batchOps[b.Operation]
	if !ok {
		return nil, fmt.Errorf("%w: batch %q has the unknown operation %q", ErrInvalidCommand, b.ID, b.Operation)
	}
	cmd := op.command(b, job)
	cmd.Head().RequestID = BatchRequestID(b.ID, job)
	return cmd, nil
}

// BatchState is a batch's state. The numbers are stored: never reuse one.
type BatchState uint8

const (
	// BatchRunning: runs are still being acted on.
	BatchRunning BatchState = 1
	// BatchCompleted: every page was acted on.
	BatchCompleted BatchState = 2
	// BatchTerminated: StopBatch ended it before its last page.
	BatchTerminated BatchState = 3
)

var batchStateNames = [...]string{BatchRunning: "Running", BatchCompleted: "Completed", BatchTerminated: "Terminated"}

func (s BatchState) String() string {
	if int(s) < len(batchStateNames) && batchStateNames[s] != "" {
		return batchStateNames[s]
	}
	return fmt.Sprintf("BatchState(%d)", uint8(s))
}

// MarshalJSON writes the state's name, as the HTTP API shows it; the
// stored (msgpack) form is the number.
func (s BatchState) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// UnmarshalJSON reads a state's name (any case).
func (s *BatchState) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err != nil {
		return fmt.Errorf("%w: a batch state is a name: %v", ErrInvalidCommand, err)
	}
	for i, n := range batchStateNames {
		if n != "" && strings.EqualFold(n, name) {
			*s = BatchState(i)
			return nil
		}
	}
	return fmt.Errorf("%w: %q is not a batch state", ErrInvalidCommand, name)
}

// BatchSpec is what a batch does: its operation, the runs it acts on and
// the operation's arguments.
type BatchSpec struct {
	Operation BatchOperation `json:"operation" msgpack:"op"`
	// Query is the list filter of the runs (the language of
	// ListQuery.Query; "" matches every run). Its relative times count
	// back from the batch's start, and its ORDER BY is ignored: a batch
	// goes through the runs in id order.
	Query string `json:"query" msgpack:"q"`
	// Reason is recorded on each run's cancel, terminate or reset.
	Reason string `json:"reason,omitempty" msgpack:"r,omitempty"`
	// SignalName and SignalPayload are the signal of BatchSignal.
	SignalName    string `json:"signal_name,omitempty" msgpack:"sn,omitempty"`
	SignalPayload []byte `json:"signal_payload,omitempty" msgpack:"sp,omitempty"`
	// ResetType is the point of BatchReset: FirstWorkflowTask or
	// LastWorkflowTask; ExcludeSignals and ExcludeUpdates are ResetJob's.
	ResetType      ResetType `json:"reset_type,omitempty" msgpack:"rt,omitempty"`
	ExcludeSignals bool      `json:"exclude_signals,omitempty" msgpack:"xs,omitempty"`
	ExcludeUpdates bool      `json:"exclude_updates,omitempty" msgpack:"xu,omitempty"`
	// RunsPerSecond bounds how fast the runner acts on this batch's runs
	// (Temporal's --rps); 0 takes the node's BatchRunsPerSecond.
	RunsPerSecond int `json:"rps,omitempty" msgpack:"rps,omitempty"`
}

// MaxBatchPending bounds the run ids of one page of a batch (AdvanceBatch's
// Next).
const MaxBatchPending = MaxPage

// maxBatchQueryBytes bounds a batch's query, as the list filter's parser
// bounds its text.
const maxBatchQueryBytes = 16 << 10

// Batch is the durable record of a batch operation.
type Batch struct {
	ID string `json:"batch_id" msgpack:"id"`
	BatchSpec
	// By names who started it (the token's name), StopBy who stopped it.
	By     string     `json:"by,omitempty" msgpack:"b,omitempty"`
	StopBy string     `json:"stopped_by,omitempty" msgpack:"sb,omitempty"`
	State  BatchState `json:"state" msgpack:"st"`
	// MaxJob is the largest run id when the batch started: runs started
	// after it are never acted on.
	MaxJob JobID `json:"max_job_id" msgpack:"mj"`
	// Total is how many runs the query matched when the batch started (it
	// grows if a run that came to match later is reached). Done counts the
	// runs the operation was applied to, Failed those it was refused for
	// (LastError says why, for the last one), Skipped, once the batch
	// completed, the runs that no longer matched when reached.
	Total     uint64 `json:"total" msgpack:"t"`
	Done      uint64 `json:"done" msgpack:"d"`
	Failed    uint64 `json:"failed" msgpack:"f"`
	Skipped   uint64 `json:"skipped,omitempty" msgpack:"sk,omitempty"`
	LastError string `json:"last_error,omitempty" msgpack:"le,omitempty"`
	// Cursor is the largest run id listed so far; Pending are the runs of
	// the page being acted on (listed, not yet counted).
	Cursor  JobID   `json:"cursor,omitempty" msgpack:"c,omitempty"`
	Pending []JobID `json:"pending,omitempty" msgpack:"p,omitempty"`
	// StopReason is StopBatch's reason.
	StopReason string `json:"stop_reason,omitempty" msgpack:"sr,omitempty"`
	CreatedMS  int64  `json:"created_ms" msgpack:"cm"`
	UpdatedMS  int64  `json:"updated_ms" msgpack:"um"`
	ClosedMS   int64  `json:"closed_ms,omitempty" msgpack:"xm,omitempty"`
}

// StartBatch records a batch. The runtime fills MaxJob and Total from one
// read of the state, before it proposes the command (Service callers leave
// them 0).
type StartBatch struct {
	Header
	// ID names the batch (Temporal's job id); "" lets the Engine choose
	// one.
	ID string `json:"batch_id" msgpack:"id"`
	BatchSpec
	MaxJob JobID  `json:"max_job_id,omitempty" msgpack:"mj,omitempty"`
	Total  uint64 `json:"total,omitempty" msgpack:"t,omitempty"`
}

// AdvanceBatch moves a running batch one page on: it counts the runs of
// its pending page (Done + Failed must be their number), then records Next
// as the new pending page and To as the cursor; with Finished (and no Next)
// the batch completes. From must be the batch's cursor, so a page recorded
// twice (a runner that lost its leadership, a retry) is refused. The runner
// proposes it.
type AdvanceBatch struct {
	Header
	ID        string  `json:"batch_id" msgpack:"id"`
	From      JobID   `json:"from" msgpack:"fr"`
	Done      uint64  `json:"done,omitempty" msgpack:"d,omitempty"`
	Failed    uint64  `json:"failed,omitempty" msgpack:"f,omitempty"`
	LastError string  `json:"last_error,omitempty" msgpack:"le,omitempty"`
	Next      []JobID `json:"next,omitempty" msgpack:"n,omitempty"`
	To        JobID   `json:"to" msgpack:"to"`
	Finished  bool    `json:"finished,omitempty" msgpack:"fi,omitempty"`
}

// StopBatch ends a running batch as Terminated (Temporal's
// StopBatchOperation): the runs already acted on stay so, no other is.
type StopBatch struct {
	Header
	ID     string `json:"batch_id" msgpack:"id"`
	Reason string `json:"reason,omitempty" msgpack:"r,omitempty"`
}

// BatchResult answers the batch commands: the batch as written.
type BatchResult struct {
	Batch *Batch `json:"batch" msgpack:"b"`
}

func (*BatchResult) isResult() {}

func (*StartBatch) Kind() CommandKind   { return KindStartBatch }
func (*AdvanceBatch) Kind() CommandKind { return KindAdvanceBatch }
func (*StopBatch) Kind() CommandKind    { return KindStopBatch }

// CheckBatchID checks a batch id: a name, not empty, and without "/" (it
// is a path segment of the HTTP API and part of its runs' request ids).
func checkBatchID(ch *checker, id string) {
	ch.name("ID", id, true)
	if ch.err == nil && strings.ContainsAny(id, "/?#") {
		ch.fail("ID", fmt.Sprintf("%q holds '/', '?' or '#': a batch id is one path segment", id))
	}
}

func (c *StartBatch) Check(l *Limits) error {
	ch := newChecker(c, l)
	checkBatchID(ch, c.ID)
	op, ok := batchOps[c.Operation]
	if ch.err == nil && !ok {
		_, err := ParseBatchOperation(string(c.Operation))
		ch.fail("Operation", err.Error())
	}
	switch {
	case ch.err != nil:
	case len(c.Query) > maxBatchQueryBytes:
		ch.err = tooLarge(ch.cmd, "Query", len(c.Query), maxBatchQueryBytes)
	case !utf8.ValidString(c.Query):
		ch.fail("Query", "is not valid UTF-8")
	case c.RunsPerSecond < 0:
		ch.fail("RunsPerSecond", "must not be negative (0 takes the node's rate)")
	}
	ch.name("Reason", c.Reason, false)
	if ch.err == nil && op.check != nil {
		op.check(ch, &c.BatchSpec)
	}
	if ch.err == nil && c.Operation != BatchSignal && (c.SignalName != "" || len(c.SignalPayload) > 0) {
		ch.fail("SignalName", "is set on a batch that sends no signal")
	}
	if ch.err == nil && c.Operation != BatchReset && (c.ResetType != 0 || c.ExcludeSignals || c.ExcludeUpdates) {
		ch.fail("ResetType", "is set on a batch that resets no run")
	}
	return ch.err
}

func (c *AdvanceBatch) Check(l *Limits) error {
	ch := newChecker(c, l)
	checkBatchID(ch, c.ID)
	ch.name("LastError", truncateUTF8(c.LastError, l.MaxNameBytes), false)
	switch {
	case ch.err != nil:
	case len(c.Next) > MaxBatchPending:
		ch.err = tooLarge(ch.cmd, "Next", len(c.Next), MaxBatchPending)
	case c.Finished && len(c.Next) > 0:
		ch.fail("Finished", "is set with a page still to act on (Next)")
	case c.To < c.From:
		ch.fail("To", fmt.Sprintf("is %d, before From %d: a batch's cursor only moves on", c.To, c.From))
	}
	prev := c.From
	for i, id := range c.Next {
		if ch.err == nil && (id <= prev || id > c.To) {
			ch.fail(fmt.Sprintf("Next[%d]", i), fmt.Sprintf("is %d: a page's runs are in (From, To], ascending", id))
		}
		prev = id
	}
	return ch.err
}

func (c *StopBatch) Check(l *Limits) error {
	ch := newChecker(c, l)
	checkBatchID(ch, c.ID)
	ch.name("Reason", c.Reason, false)
	return ch.err
}

// truncateUTF8 cuts s to at most n bytes on a rune boundary: a failure's
// text may be long, and the batch keeps its start.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// TruncateBatchError cuts an error's text to what AdvanceBatch.LastError
// may hold under l.
func TruncateBatchError(s string, l Limits) string {
	return truncateUTF8(strings.ToValidUTF8(s, "?"), l.WithDefaults().MaxNameBytes)
}

// BatchService is implemented by a Service that runs batch operations: the
// embedded *Engine and engine/httpapi's Client (Temporal's
// StartBatchOperation, DescribeBatchOperation, ListBatchOperations and
// StopBatchOperation). Errors match ErrUnknownBatch, ErrBatchExists,
// ErrIllegalTransition (stopping a batch that ended) or ErrInvalidCommand.
type BatchService interface {
	StartBatch(ctx context.Context, c StartBatch) (*BatchResult, error)
	StopBatch(ctx context.Context, c StopBatch) (*BatchResult, error)
	DescribeBatch(ctx context.Context, id string) (*Batch, error)
	ListBatches(ctx context.Context, q BatchListQuery) (*BatchListPage, error)
}

// BatchListQuery pages ListBatches.
type BatchListQuery struct {
	// After is the cursor: only batches with a larger id are listed.
	After string `json:"after,omitempty"`
	// Limit bounds the page (0 means 100; at most MaxPage).
	Limit int `json:"limit,omitempty"`
}

// BatchListPage is one page of ListBatches, in id order.
type BatchListPage struct {
	Batches []*Batch `json:"batches"`
	// Next is the cursor of the following page; "" at the end.
	Next string `json:"next,omitempty"`
}
