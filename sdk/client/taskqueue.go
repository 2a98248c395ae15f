package client

import (
	"context"
	"fmt"

	"github.com/heddlewf/heddle/engine"
)

// TaskQueueType says which of a queue's pollers DescribeTaskQueue lists,
// as Temporal's enumspb.TaskQueueType does. A heddle worker polls one
// queue for its workflows and its activities both, so the type selects
// the pollers that run a workflow type, or an activity type.
type TaskQueueType int

// The task queue types.
const (
	// TaskQueueTypeUnspecified lists every poller.
	TaskQueueTypeUnspecified TaskQueueType = iota
	// TaskQueueTypeWorkflow lists the pollers that run workflows.
	TaskQueueTypeWorkflow
	// TaskQueueTypeActivity lists the pollers that run activities.
	TaskQueueTypeActivity
)

// String names t as Temporal's CLI does.
func (t TaskQueueType) String() string {
	switch t {
	case TaskQueueTypeWorkflow:
		return "workflow"
	case TaskQueueTypeActivity:
		return "activity"
	case TaskQueueTypeUnspecified:
		return "unspecified"
	}
	return fmt.Sprintf("TaskQueueType(%d)", int(t))
}

// TaskQueueClient describes task queues: their pollers (the workers that
// polled them lately, what they run, when last), their backlog and rates.
// Its methods may be called concurrently.
type TaskQueueClient interface {
	// DescribeTaskQueue describes taskQueue: Temporal's
	// DescribeTaskQueue, whose answer here also holds the queue's stats
	// (what Temporal's DescribeTaskQueueEnhanced reports with
	// ReportStats). taskQueueType selects the pollers listed.
	DescribeTaskQueue(ctx context.Context, taskQueue string, taskQueueType TaskQueueType) (*engine.TaskQueueDescription, error)
	// ListTaskQueues describes every queue that holds jobs or was
	// polled lately.
	ListTaskQueues(ctx context.Context) (*engine.TaskQueueList, error)
	// DescribeWorkflowQueuedReason says why a Queued run has not been
	// claimed yet (no worker polls its queue, none runs its type, none
	// has a free slot...); Queued is false for a run that is not Queued.
	DescribeWorkflowQueuedReason(ctx context.Context, workflowID, runID string) (*engine.QueuedReason, error)
}

func (c *workflowClient) taskQueues() (engine.TaskQueueReader, error) {
	tq, ok := c.e.(engine.TaskQueueReader)
	if !ok {
		return nil, fmt.Errorf("client: the service %T has no task queue view", c.e)
	}
	return tq, nil
}

// DescribeTaskQueue implements TaskQueueClient.
func (c *workflowClient) DescribeTaskQueue(ctx context.Context, taskQueue string, taskQueueType TaskQueueType) (*engine.TaskQueueDescription, error) {
	if taskQueueType < TaskQueueTypeUnspecified || taskQueueType > TaskQueueTypeActivity {
		return nil, fmt.Errorf("client: DescribeTaskQueue: %v is not a task queue type", taskQueueType)
	}
	tq, err := c.taskQueues()
	if err != nil {
		return nil, err
	}
	d, err := tq.DescribeTaskQueue(ctx, taskQueue)
	if err != nil || taskQueueType == TaskQueueTypeUnspecified {
		return d, err
	}
	kept := d.Pollers[:0]
	for _, p := range d.Pollers {
		if (taskQueueType == TaskQueueTypeWorkflow && p.RunsWorkflows()) || (taskQueueType == TaskQueueTypeActivity && p.RunsActivities()) {
			kept = append(kept, p)
		}
	}
	d.Pollers = kept
	return d, nil
}

// ListTaskQueues implements TaskQueueClient.
func (c *workflowClient) ListTaskQueues(ctx context.Context) (*engine.TaskQueueList, error) {
	tq, err := c.taskQueues()
	if err != nil {
		return nil, err
	}
	return tq.ListTaskQueues(ctx)
}

// DescribeWorkflowQueuedReason implements TaskQueueClient.
func (c *workflowClient) DescribeWorkflowQueuedReason(ctx context.Context, workflowID, runID string) (*engine.QueuedReason, error) {
	tq, err := c.taskQueues()
	if err != nil {
		return nil, err
	}
	return tq.QueuedReason(ctx, target(workflowID, runID))
}
