package ui

import (
	"context"
	"errors"
	"net/http"

	"github.com/heddlewf/heddle/engine/httpapi"
)

// feature is a page of the navigation bar whose data comes from an
// optional part of the API. Adding one is a template and a load function:
// the entry below names both, and the page shows "not available on this
// server" while the load function is missing or the API answers that it
// has no such route.
type feature struct {
	// Path is the page's path under Path; Title its name in the bar.
	Path, Title string
	// Template is the page's file under templates/.
	Template string
	// Load reads the page's data with the person's API; nil until the API
	// has the part the page shows.
	Load func(ctx context.Context, api *backend, r *http.Request) (any, error)
	// About says what the page shows, on the "not available" page too.
	About string
	// Meanwhile says why the page is not there yet, and what to use
	// until it is.
	Meanwhile string
}

// features are the optional pages, in the order of the bar.
var features = []feature{
	{Path: "schedules", Title: "Schedules", Template: "schedules.html", Load: loadSchedules,
		About:     "The schedules that start workflow runs (cron expressions and intervals), with pause, unpause, trigger and backfill buttons and the runs each started.",
		Meanwhile: "This server's API has no schedule routes. Until it has, heddle schedule list, describe, pause, unpause, trigger and backfill act on them."},
	{Path: "review", Title: "Review", Template: "review.html", Load: loadReview,
		About:     "Tasks awaiting a person's review, approval or intervention, with approve, reject, resubmit, fix and terminate buttons and the manifest.",
		Meanwhile: "This server's API has no list of the tasks awaiting people across jobs (GET /v1/tasks/awaiting). Until it has, heddle task list, describe, approve, reject, resubmit, fix and terminate act on them."},
	{Path: "resources", Title: "Resources", Template: "resources.html", Load: loadResources,
		About:     "The resource pools, the leases steps hold on them, the steps waiting for a unit, and the resources drained.",
		Meanwhile: "This server's API has no routes for resources. Until it has, heddle resource list shows the pool."},
	{Path: "task-queues", Title: "Task queues", Template: "taskqueues.html", Load: loadTaskQueues,
		About:     "The task queues: the workers polling each (who, when last, which workflow and activity types they run), the runs waiting and how long, and the rates.",
		Meanwhile: "This server's API has no task queue routes (GET /v1/task-queues). Until it has, heddle workflow list --status Queued shows the waiting runs."},
	{Path: "batches", Title: "Batches", Template: "batches.html", Load: loadBatches,
		About:     "The batch operations: cancel, terminate, signal or reset of every run a filter matched, with their progress.",
		Meanwhile: "This server's API has no batch routes (GET /v1/batches). Until it has, act on runs one by one from their pages."},
}

// unavailableData is the "not available" page's.
type unavailableData struct {
	Feature feature
}

// feature serves the page of f: its template with what f.Load read, or the
// "not available" page.
func (h *Handler) feature(f feature) func(*request) (*page, error) {
	return func(rq *request) (*page, error) {
		missing := &page{Template: "unavailable.html", Title: f.Title, Nav: f.Path, Data: unavailableData{Feature: f}}
		if f.Load == nil {
			return missing, nil
		}
		data, err := f.Load(rq.ctx, rq.api, rq.r)
		if errors.Is(err, httpapi.ErrNoRoute) {
			return missing, nil
		}
		if err != nil {
			return nil, err
		}
		return &page{Template: f.Template, Title: f.Title, Nav: f.Path, Data: data}, nil
	}
}
