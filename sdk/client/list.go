package client

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// ListWorkflowExecutionsRequest asks ListWorkflow for one page of runs, as
// Temporal's workflowservice request of that name does.
type ListWorkflowExecutionsRequest struct {
	// Namespace is ignored: heddle has one (DefaultNamespace).
	Namespace string
	// PageSize bounds the page: 0 means 100, at most engine.MaxPage.
	PageSize int32
	// NextPageToken is the NextPageToken (or PrevPageToken) of the page
	// before; nil asks for the first page.
	NextPageToken []byte
	// Query is a list filter in Temporal's syntax or heddle's
	// (docs/concepts.md, "Finding runs"): WorkflowType = "order" AND
	// ExecutionStatus = "Running" ORDER BY StartTime DESC. Runs come
	// newest first unless its ORDER BY says otherwise.
	Query string
}

// ListWorkflowExecutionsResponse is one page of ListWorkflow.
type ListWorkflowExecutionsResponse struct {
	Executions []*WorkflowExecutionInfo
	// NextPageToken asks for the runs after this page; nil on the last.
	NextPageToken []byte
	// PrevPageToken asks for the runs before it (heddle's; Temporal pages
	// forward only); nil on the first.
	PrevPageToken []byte
}

// CountWorkflowExecutionsRequest asks CountWorkflow how many runs match
// Query.
type CountWorkflowExecutionsRequest struct {
	Namespace string
	Query     string
}

// CountWorkflowExecutionsResponse is CountWorkflow's answer.
type CountWorkflowExecutionsResponse struct {
	Count int64
	// ByStatus counts the runs by heddle status name.
	ByStatus map[string]int64
}

// WorkflowExecution names one run.
type WorkflowExecution struct {
	WorkflowId string //nolint:revive // Temporal's name
	RunId      string //nolint:revive // Temporal's name
}

// WorkflowType names a workflow type.
type WorkflowType struct {
	Name string
}

// WorkflowExecutionStatus is a run's status as Temporal names it.
type WorkflowExecutionStatus string

// Temporal's statuses. Running is every heddle status of a run that has
// not ended; ContinuedAsNew a run heddle records as Completed that
// continued as a new run.
const (
	WorkflowExecutionStatusRunning        WorkflowExecutionStatus = "Running"
	WorkflowExecutionStatusCompleted      WorkflowExecutionStatus = "Completed"
	WorkflowExecutionStatusFailed         WorkflowExecutionStatus = "Failed"
	WorkflowExecutionStatusCanceled       WorkflowExecutionStatus = "Canceled"
	WorkflowExecutionStatusTerminated     WorkflowExecutionStatus = "Terminated"
	WorkflowExecutionStatusContinuedAsNew WorkflowExecutionStatus = "ContinuedAsNew"
	WorkflowExecutionStatusTimedOut       WorkflowExecutionStatus = "TimedOut"
)

// WorkflowExecutionInfo is one run of a ListWorkflow page, in the shape of
// Temporal's, with heddle's record of it beside.
type WorkflowExecutionInfo struct {
	Execution *WorkflowExecution
	Type      *WorkflowType
	StartTime time.Time
	// CloseTime is zero while the run is open.
	CloseTime     time.Time
	Status        WorkflowExecutionStatus
	TaskQueue     string
	HistoryLength int64
	// ParentExecution is the run that started this one as a child; nil
	// for none.
	ParentExecution *WorkflowExecution
	// Job is heddle's record of the run: its exact status, and the runs
	// before and after it in a chain (PrevRunID, NextRunID).
	Job *engine.Job
}

// executionInfo is j as a ListWorkflow entry.
func executionInfo(j *engine.Job) *WorkflowExecutionInfo {
	info := &WorkflowExecutionInfo{
		Execution: &WorkflowExecution{WorkflowId: j.WorkflowID, RunId: strconv.FormatUint(uint64(j.ID), 10)},
		Type:      &WorkflowType{Name: j.Type}, StartTime: time.UnixMilli(j.CreatedMS),
		Status: WorkflowExecutionStatus(j.ExecutionStatus()), TaskQueue: j.Queue, HistoryLength: int64(j.LastSeq), Job: j,
	}
	if j.Status.Terminal() {
		info.CloseTime = time.UnixMilli(j.ClosedMS)
	}
	if j.ParentID != 0 {
		info.ParentExecution = &WorkflowExecution{RunId: strconv.FormatUint(uint64(j.ParentID), 10)}
	}
	return info
}

// ListWorkflow returns one page of the runs request.Query matches, newest
// first unless the query's ORDER BY says otherwise.
func (c *workflowClient) ListWorkflow(ctx context.Context, request *ListWorkflowExecutionsRequest) (*ListWorkflowExecutionsResponse, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if request == nil {
		request = &ListWorkflowExecutionsRequest{}
	}
	if request.PageSize < 0 || request.PageSize > engine.MaxPage {
		return nil, fmt.Errorf("%w: PageSize %d is not in [0, %d]", engine.ErrInvalidCommand, request.PageSize, engine.MaxPage)
	}
	page, err := c.e.List(ctx, engine.ListQuery{Query: request.Query, Limit: int(request.PageSize), PageToken: string(request.NextPageToken)})
	if err != nil {
		return nil, err
	}
	res := &ListWorkflowExecutionsResponse{Executions: make([]*WorkflowExecutionInfo, 0, len(page.Jobs))}
	for _, j := range page.Jobs {
		res.Executions = append(res.Executions, executionInfo(j))
	}
	if page.NextPageToken != "" {
		res.NextPageToken = []byte(page.NextPageToken)
	}
	if page.PrevPageToken != "" {
		res.PrevPageToken = []byte(page.PrevPageToken)
	}
	return res, nil
}

// CountWorkflow counts the runs request.Query matches.
func (c *workflowClient) CountWorkflow(ctx context.Context, request *CountWorkflowExecutionsRequest) (*CountWorkflowExecutionsResponse, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if request == nil {
		request = &CountWorkflowExecutionsRequest{}
	}
	q := engine.ListQuery{Query: request.Query}
	res := &CountWorkflowExecutionsResponse{ByStatus: map[string]int64{}}
	if wc, ok := c.e.(engine.WorkflowCounter); ok {
		n, err := wc.Count(ctx, q)
		if err != nil {
			return nil, err
		}
		res.Count = int64(n.Count)
		for s, v := range n.ByStatus {
			res.ByStatus[s] = int64(v)
		}
		return res, nil
	}
	// A Service that does not count: page through the list.
	q.Limit = engine.MaxPage
	for {
		page, err := c.e.List(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, j := range page.Jobs {
			res.Count++
			res.ByStatus[j.Status.String()]++
		}
		if page.NextPageToken == "" {
			return res, nil
		}
		q.PageToken = page.NextPageToken
	}
}
