package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/sdkhook"
	"github.com/heddlewf/heddle/replay"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// QueryWorkflow answers a query by replaying the run's history with this
// worker's workflow code and calling the handler the code registered with
// workflow.SetQueryHandler. It executes nothing and writes nothing; the
// cache is left alone, so a query never disturbs a run in progress. runID ""
// means the workflow id's latest run. The query workflow.ValidateUpdateQuery
// validates an update request on that replay instead (the client asks it
// before it admits the update).
func (w *queueWorker) QueryWorkflow(ctx context.Context, workflowID, runID, queryType string, args ...any) (converter.EncodedValue, error) {
	t := engine.Target{WorkflowID: workflowID}
	if id, err := strconv.ParseUint(runID, 10, 64); err == nil && id > 0 {
		t = engine.Target{Job: engine.JobID(id)}
	}
	j, err := w.e.Describe(ctx, t)
	if err != nil {
		return nil, err
	}
	fn := w.workflowFn(j.Type)
	if fn == nil {
		return nil, fmt.Errorf("%w: %q on queue %q", sdkhook.ErrTypeNotRegistered, j.Type, w.queue)
	}
	input, err := converter.Encode(args...)
	if err != nil {
		return nil, err
	}
	var request []byte
	if queryType == workflow.ValidateUpdateQuery {
		if request, err = w.updateRequest(input); err != nil {
			return nil, err
		}
	}
	// The code sees the Info it saw when it ran, so that a branch on it
	// replays the same.
	info := sdkhook.WorkflowInfo{WorkflowID: j.WorkflowID, RunID: strconv.FormatUint(uint64(j.ID), 10), WorkflowType: j.Type,
		TaskQueue: j.Queue, Attempt: j.RunAttempt, Interceptors: w.interceptorList(), CronSchedule: j.CronSchedule}
	if j.ParentID != 0 {
		info.ParentRunID = strconv.FormatUint(uint64(j.ParentID), 10)
		if p, err := w.e.Describe(ctx, engine.Target{Job: j.ParentID}); err == nil {
			info.ParentWorkflowID = p.WorkflowID
		}
	}
	x := replay.NewExecution(j.ID, sdkhook.NewEntry(fn, info))
	x.DeadlockTimeout = w.opts.DeadlockTimeout
	// An update's validation replays as a replay throughout, even where the
	// code goes past the run's last decision (a run not yet taken by its
	// worker), so that loggers and interceptors do not take it for the run.
	// The validator's call that follows is the update's decision: it is
	// made as the run's own would be.
	x.Shadow = request != nil
	defer x.Close()
	r := &run{w: w, ctx: ctx, job: engine.ClaimedJob{Job: j.ID}, x: x}
	if err := r.catchUp(true); err != nil {
		return nil, err
	}
	if request != nil {
		x.Shadow = false
		decision, err := sdkhook.ValidateUpdate(x, request)
		if err != nil {
			return nil, err
		}
		out, err := converter.Encode(json.RawMessage(decision))
		return converter.NewEncodedValue(out), err
	}
	out, err := sdkhook.Query(x, queryType, input)
	if err != nil {
		return nil, err
	}
	return converter.NewEncodedValue(out), nil
}

// updateRequest is the update request a validation query carries as its
// one argument, its arguments decoded by the worker's data converter as
// the request's signal would be when read from the history.
func (w *queueWorker) updateRequest(input []byte) ([]byte, error) {
	var args []json.RawMessage
	if err := json.Unmarshal(input, &args); err != nil || len(args) != 1 {
		return nil, fmt.Errorf("%w: %s takes one argument, the update request", engine.ErrInvalidCommand, workflow.ValidateUpdateQuery)
	}
	request := []byte(args[0])
	if c, ok := w.e.(*codecService); ok {
		return c.transform(engine.EventSignalReceived, workflow.UpdateSignalName, request, c.decode)
	}
	return request, nil
}

// answerQuery is the worker's engine.QueryFunc, for a service that brokers
// queries to worker processes (engine.QueryServer): the query's arguments
// arrive as converter.Encode wrote them, and the answer goes back as the
// handler's encoded result.
func (w *queueWorker) answerQuery(ctx context.Context, workflowID, runID, queryType string, args []byte) ([]byte, error) {
	vals, err := queryArgs(args)
	if err != nil {
		return nil, err
	}
	v, err := w.QueryWorkflow(ctx, workflowID, runID, queryType, vals...)
	return converter.DataOf(v), err
}

// queryArgs splits converter.Encode's list (a JSON array, or an envelope of
// payloads for a []byte or a protobuf message) into one raw value per
// argument; QueryWorkflow encodes them again into the same list.
func queryArgs(b []byte) ([]any, error) {
	vals, err := converter.RawValues(b)
	if err != nil {
		return nil, fmt.Errorf("%w: query arguments: %v", engine.ErrInvalidCommand, err)
	}
	args := make([]any, len(vals))
	for i, v := range vals {
		args[i] = v
	}
	return args, nil
}
