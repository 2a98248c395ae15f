package client

import (
	"context"
	"fmt"

	"github.com/heddlewf/heddle/engine"
)

// BatchClient runs batch operations: one operation (cancel, terminate,
// signal, reset) over every run a list filter matches when the batch
// starts. Temporal has these methods on its WorkflowService
// (StartBatchOperation, DescribeBatchOperation, ListBatchOperations,
// StopBatchOperation); heddle's client has them itself, with request and
// answer types of its own. The engine runs a batch at a bounded rate,
// through restarts and leader changes, acting on each run once. Its
// methods may be called concurrently.
type BatchClient interface {
	// StartBatchOperation starts a batch and returns its record, with
	// Total the runs the query matches now.
	StartBatchOperation(ctx context.Context, req StartBatchOperationRequest) (*engine.Batch, error)
	// DescribeBatchOperation reads a batch: its state and progress.
	DescribeBatchOperation(ctx context.Context, jobID string) (*engine.Batch, error)
	// ListBatchOperations lists batches in id order, a page at a time.
	ListBatchOperations(ctx context.Context, req ListBatchOperationsRequest) (*ListBatchOperationsResponse, error)
	// StopBatchOperation stops a running batch (Terminated); the runs it
	// acted on stay so.
	StopBatchOperation(ctx context.Context, jobID, reason string) error
}

// StartBatchOperationRequest is Temporal's StartBatchOperationRequest:
// JobId, VisibilityQuery, Reason and MaxOperationsPerSecond, and the
// operation named by Operation with its arguments (Temporal's oneof of
// TerminationOperation, CancellationOperation, SignalOperation and
// ResetOperation).
type StartBatchOperationRequest struct {
	// JobID names the batch; "" lets the client choose one.
	JobID string
	// VisibilityQuery is the list filter of the runs (ListWorkflow's
	// query language); "" matches every run.
	VisibilityQuery string
	Reason          string
	// Operation is engine.BatchCancel (a cancel request), BatchTerminate,
	// BatchSignal or BatchReset.
	Operation engine.BatchOperation
	// Signal and SignalArg are BatchSignal's signal (SignalArg encoded by
	// the client's data converter).
	Signal    string
	SignalArg any
	// ResetType is BatchReset's point: ResetTypeFirstWorkflowTask or
	// ResetTypeLastWorkflowTask; ResetReapplyExcludeTypes leaves the
	// signals or updates after it out.
	ResetType                ResetType
	ResetReapplyExcludeTypes []ResetReapplyExcludeType
	// MaxOperationsPerSecond bounds the batch's rate; 0 takes the
	// node's.
	MaxOperationsPerSecond int
}

// ListBatchOperationsRequest pages ListBatchOperations: PageSize (0 means
// 100) batches after NextPageToken (a batch id; "" for the first page).
type ListBatchOperationsRequest struct {
	PageSize      int
	NextPageToken string
}

// ListBatchOperationsResponse is one page of batches and the token of the
// next ("" at the end).
type ListBatchOperationsResponse struct {
	OperationInfo []*engine.Batch
	NextPageToken string
}

func (c *workflowClient) batches() (engine.BatchService, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	bs, ok := c.e.(engine.BatchService)
	if !ok {
		return nil, fmt.Errorf("client: the service %T runs no batch operations", c.e)
	}
	return bs, nil
}

// StartBatchOperation implements BatchClient.
func (c *workflowClient) StartBatchOperation(ctx context.Context, req StartBatchOperationRequest) (*engine.Batch, error) {
	bs, err := c.batches()
	if err != nil {
		return nil, err
	}
	spec := engine.BatchSpec{Operation: req.Operation, Query: req.VisibilityQuery, Reason: req.Reason,
		SignalName: req.Signal, ResetType: req.ResetType, RunsPerSecond: req.MaxOperationsPerSecond}
	if req.Operation == engine.BatchSignal {
		if spec.SignalPayload, err = c.encode(req.SignalArg); err != nil {
			return nil, fmt.Errorf("client: signal argument: %w", err)
		}
	}
	for _, x := range req.ResetReapplyExcludeTypes {
		switch x {
		case ResetReapplyExcludeTypeSignal:
			spec.ExcludeSignals = true
		case ResetReapplyExcludeTypeUpdate:
			spec.ExcludeUpdates = true
		default:
			return nil, fmt.Errorf("%w: reapply exclude type %d", engine.ErrInvalidCommand, x)
		}
	}
	res, err := bs.StartBatch(ctx, engine.StartBatch{ID: req.JobID, BatchSpec: spec})
	if err != nil {
		return nil, err
	}
	return res.Batch, nil
}

// DescribeBatchOperation implements BatchClient.
func (c *workflowClient) DescribeBatchOperation(ctx context.Context, jobID string) (*engine.Batch, error) {
	bs, err := c.batches()
	if err != nil {
		return nil, err
	}
	return bs.DescribeBatch(ctx, jobID)
}

// ListBatchOperations implements BatchClient.
func (c *workflowClient) ListBatchOperations(ctx context.Context, req ListBatchOperationsRequest) (*ListBatchOperationsResponse, error) {
	bs, err := c.batches()
	if err != nil {
		return nil, err
	}
	page, err := bs.ListBatches(ctx, engine.BatchListQuery{After: req.NextPageToken, Limit: req.PageSize})
	if err != nil {
		return nil, err
	}
	return &ListBatchOperationsResponse{OperationInfo: page.Batches, NextPageToken: page.Next}, nil
}

// StopBatchOperation implements BatchClient.
func (c *workflowClient) StopBatchOperation(ctx context.Context, jobID, reason string) error {
	bs, err := c.batches()
	if err != nil {
		return err
	}
	_, err = bs.StopBatch(ctx, engine.StopBatch{ID: jobID, Reason: reason})
	return err
}
