package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
)

// The Task queues page lists the queues with their pollers, backlog and
// rates; a queue's page lists its pollers (who, when last, what they run)
// and the runs waiting in it, each with why it waits.

// maxQueuedShown bounds the waiting runs a queue's page lists.
const maxQueuedShown = 20

// taskQueuesData is the Task queues page's.
type taskQueuesData struct {
	Queues    []taskQueueView
	Truncated bool
	Max       int
	Unreached string
}

// taskQueueView is one queue with the link to its page.
type taskQueueView struct {
	engine.TaskQueueDescription
	Link string
}

func taskQueueLink(name string) string { return Path + "/task-queues/" + url.PathEscape(name) }

// loadTaskQueues reads the Task queues page.
func loadTaskQueues(ctx context.Context, api *backend, _ *http.Request) (any, error) {
	l, err := api.ListTaskQueues(ctx)
	if err != nil {
		return nil, err
	}
	d := &taskQueuesData{Truncated: l.Truncated, Max: engine.MaxTaskQueues, Unreached: strings.Join(l.Unreached, ", ")}
	for _, q := range l.Queues {
		d.Queues = append(d.Queues, taskQueueView{TaskQueueDescription: q, Link: taskQueueLink(q.Name)})
	}
	return d, nil
}

// taskQueueData is a queue's page.
type taskQueueData struct {
	Queue     *engine.TaskQueueDescription
	Unreached string
	// Window is engine.PollerWindow, said for people.
	Window string
	// Waiting are the queue's Queued runs, the oldest first, each with
	// why it waits (up to maxQueuedShown); MoreWaiting, when there are
	// more, links the list of them all.
	Waiting     []queuedRunView
	MoreWaiting string
}

// queuedRunView is a Queued run and why it waits.
type queuedRunView struct {
	Job    *engine.Job
	Reason *engine.QueuedReason
}

// taskQueue serves a queue's page.
func (h *Handler) taskQueue(rq *request) (*page, error) {
	name := rq.r.PathValue("queue")
	d, err := rq.api.DescribeTaskQueue(rq.ctx, name)
	switch {
	case errors.Is(err, httpapi.ErrNoRoute):
		f := featureNamed("task-queues")
		return &page{Template: "unavailable.html", Title: f.Title, Nav: f.Path, Data: unavailableData{Feature: f}}, nil
	case errors.Is(err, engine.ErrInvalidCommand):
		return nil, &pageError{status: http.StatusBadRequest, msg: fmt.Sprintf("%q is not a task queue name: %v", name, err)}
	case err != nil:
		return nil, err
	}
	data := &taskQueueData{Queue: d, Unreached: strings.Join(d.Unreached, ", "), Window: fmt.Sprintf("%d minutes", int(engine.PollerWindow.Minutes()))}
	runs, err := rq.api.List(rq.ctx, engine.ListQuery{Status: engine.StatusQueued, Queue: name, Limit: maxQueuedShown})
	if err != nil {
		return nil, err
	}
	if runs.Next != 0 {
		data.MoreWaiting = Path + "/workflows?" + url.Values{"status": {engine.StatusQueued.String()}, "queue": {name}}.Encode()
	}
	for _, j := range runs.Jobs {
		// The reason from the description read above: one read for the
		// page, not one per run (the run's page asks the API for its own).
		data.Waiting = append(data.Waiting, queuedRunView{Job: j, Reason: engine.ExplainQueued(j, d, nil)})
	}
	return &page{Template: "taskqueue.html", Title: "Task queue " + name, Nav: "task-queues", Data: data}, nil
}

// featureNamed returns the feature of path.
func featureNamed(path string) feature {
	for _, f := range features {
		if f.Path == path {
			return f
		}
	}
	return feature{Path: path, Title: path}
}

// queuedReason reads why run id, Queued, waits; nil when the API cannot
// say (an older server).
func queuedReason(ctx context.Context, api *backend, id engine.JobID) (*engine.QueuedReason, error) {
	r, err := api.QueuedReason(ctx, engine.Target{Job: id})
	if errors.Is(err, httpapi.ErrNoRoute) {
		return nil, nil
	}
	if err != nil || !r.Queued {
		return nil, err
	}
	return r, nil
}
