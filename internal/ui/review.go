package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
)

// The review page's buttons: the human commands of a task awaiting a
// person that the page offers. Step, suspend and cancel stay with heddle
// task.
const (
	// ActionApprove approves a task in APPROVAL_REQUIRED: SUCCESS.
	ActionApprove Action = "review.approve"
	// ActionReject rejects it: PENDING, to run again with the reason.
	ActionReject Action = "review.reject"
	// ActionResubmit sends a task in INTERVENTION_REQUIRED back to PENDING.
	ActionResubmit Action = "review.resubmit"
	// ActionFixReview marks a task in INTERVENTION_REQUIRED fixed by a
	// person: it is reviewed again (REVIEW_REQUIRED).
	ActionFixReview Action = "review.fix"
	// ActionTerminateReview ends a task in INTERVENTION_REQUIRED: CANCELED.
	ActionTerminateReview Action = "review.terminate"
)

// reviewButtons are the review page's commands in the order of the page,
// with their action, label, style and, for those that cannot be undone,
// the question asked first.
var reviewButtons = []reviewButton{
	{Op: engine.ReviewOpApprove, Action: ActionApprove, Label: "Approve"},
	{Op: engine.ReviewOpReject, Action: ActionReject, Label: "Reject", Class: "warn"},
	{Op: engine.ReviewOpResubmit, Action: ActionResubmit, Label: "Resubmit", Class: "warn"},
	{Op: engine.ReviewOpFix, Action: ActionFixReview, Label: "Mark fixed"},
	{Op: engine.ReviewOpTerminate, Action: ActionTerminateReview, Label: "Terminate", Class: "danger",
		Confirm: "Terminate this task? It becomes CANCELED, and the tasks that depend on it never start."},
}

type reviewButton struct {
	Op                    engine.ReviewOp
	Action                Action
	Label, Class, Confirm string
}

// reviewDecider is the By the page sends with a decision. Where tokens
// name people the API records the token's name instead.
const reviewDecider = "web-ui"

// reviewPageSize is how many tasks one page lists.
const reviewPageSize = 50

// reviewData is the review page's.
type reviewData struct {
	// State and Queue are the filter the page was asked for.
	State, Queue string
	States       []engine.ReviewState
	Reviews      []awaitingReview
	// After is this page's cursor; NextURL the following page's address
	// ("" on the last page).
	After   engine.ReviewID
	NextURL string
	// Flash is the message of the button that led here.
	Flash string
}

// awaitingReview is one task awaiting a person, as the page shows it.
type awaitingReview struct {
	engine.Review
	Class string
	// Buttons are the review buttons legal in the task's state; the
	// template shows those the person may press.
	Buttons  []reviewButton
	Output   *payloadView
	Manifest *engine.Manifest
	// Run is the workflow run the task is a step of, nil when it is none's
	// or the run cannot be read.
	Run *engine.Job
}

// loadReview reads the tasks awaiting a person, a page at a time, each
// with the manifest of its job and the run it is a step of.
func loadReview(ctx context.Context, api *backend, r *http.Request) (any, error) {
	q := r.URL.Query()
	d := &reviewData{State: q.Get("state"), Queue: strings.TrimSpace(q.Get("queue")), Flash: reviewDone[q.Get("done")]}
	for _, s := range engine.ReviewStates() {
		if s.AwaitsPerson() {
			d.States = append(d.States, s)
		}
	}
	aq := engine.AwaitingQuery{Queue: d.Queue, Limit: reviewPageSize}
	if d.State != "" {
		st, err := engine.ParseReviewState(d.State)
		if err != nil || !st.AwaitsPerson() {
			return nil, &pageError{status: http.StatusBadRequest, msg: fmt.Sprintf("%q is not a state that awaits a person.", d.State)}
		}
		aq.State = st
	}
	if s := q.Get("after"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return nil, &pageError{status: http.StatusBadRequest, msg: fmt.Sprintf("%q is not a page of this list.", s)}
		}
		aq.After = engine.ReviewID(n)
	}
	d.After = aq.After
	p, err := api.ListAwaitingReviews(ctx, aq)
	if err != nil {
		return nil, err
	}
	if p.Next != 0 {
		next := url.Values{"after": {strconv.FormatUint(uint64(p.Next), 10)}}
		if d.State != "" {
			next.Set("state", d.State)
		}
		if d.Queue != "" {
			next.Set("queue", d.Queue)
		}
		d.NextURL = Path + "/review?" + next.Encode()
	}
	manifests := map[string]*engine.Manifest{}
	for _, t := range p.Reviews {
		rt := awaitingReview{Review: t, Class: reviewClass(t.State), Output: viewPayload(t.Output, reviewOutputPath(t.ID))}
		for _, b := range reviewButtons {
			if _, ok := engine.ReviewOpTarget(t.State, b.Op); ok {
				rt.Buttons = append(rt.Buttons, b)
			}
		}
		m, seen := manifests[t.Job]
		if !seen {
			if m, err = api.ReviewManifest(ctx, t.Job); err != nil && !errors.Is(err, engine.ErrUnknownReview) {
				return nil, err
			}
			manifests[t.Job] = m
		}
		rt.Manifest = m
		if t.ParentJob != 0 {
			rt.Run, _ = api.Describe(ctx, engine.Target{Job: t.ParentJob}) // a run that is gone shows its id only
		}
		d.Reviews = append(d.Reviews, rt)
	}
	return d, nil
}

// reviewClass is the CSS class of a task state's badge.
func reviewClass(s engine.ReviewState) string {
	switch s {
	case engine.ReviewApprovalRequired, engine.ReviewReviewRequired:
		return "st-waiting"
	case engine.ReviewInterventionRequired:
		return "st-failed"
	}
	return "st-none"
}

// reviewButtonOf returns the button of op, if the page has one.
func reviewButtonOf(op string) (reviewButton, bool) {
	for _, b := range reviewButtons {
		if string(b.Op) == op {
			return b, true
		}
	}
	return reviewButton{}, false
}

// The flash messages of the review buttons, by the done= they redirect with.
var reviewDone = map[string]string{
	"approve":   "Task approved: it succeeded, and the tasks that depend on it may start.",
	"reject":    "Task rejected: it runs again with the reason as feedback.",
	"resubmit":  "Task resubmitted: it runs again.",
	"fix":       "Task marked fixed: its output is reviewed again.",
	"terminate": "Task terminated.",
}

// reviewFeature is the review entry of features.
func reviewFeature() feature {
	for _, f := range features {
		if f.Path == "review" {
			return f
		}
	}
	panic("ui: features has no review entry")
}

// reviewAct runs one review button on the task of the path, if the task
// is still in the state the person saw (the form's expect). Done, it sends
// the browser back to the list; refused, it shows the list with why.
func (h *Handler) reviewAct(rq *request) (*page, error) {
	s := rq.r.PathValue("task")
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 {
		return nil, &pageError{status: http.StatusNotFound, msg: fmt.Sprintf("%q is not a task id: tasks are named by a positive number.", s)}
	}
	id := engine.ReviewID(n)
	b, ok := reviewButtonOf(rq.r.PathValue("op"))
	if !ok {
		return nil, &pageError{status: http.StatusNotFound, msg: "There is no such button."}
	}
	reason := formValue(rq.r, "reason")
	switch {
	case !rq.can.Can(b.Action):
		who := "This token"
		if r := rq.can.Role(); r != "" {
			who = "The " + r + " role"
		}
		err = &pageError{status: http.StatusForbidden, msg: fmt.Sprintf("%s may not %s tasks.", who, b.Op)}
	default:
		err = checkReason(reason)
	}
	if err == nil {
		cmd := engine.ReviewCommand{ReviewTarget: engine.ReviewTarget{ID: id}, Op: b.Op, By: reviewDecider, Reason: reason}
		if e := formValue(rq.r, "expect"); e != "" {
			if cmd.Expect, err = engine.ParseReviewState(e); err != nil {
				return nil, &pageError{status: http.StatusBadRequest, msg: "The form names no task state it was shown in."}
			}
		}
		_, err = rq.api.ReviewCommand(rq.ctx, cmd)
	}
	if err == nil {
		return nil, redirect{to: fmt.Sprintf("%s/review?done=%s&task=%d", Path, b.Op, id)}
	}
	if errors.Is(err, httpapi.ErrUnauthorized) {
		return nil, err // to the sign-in page
	}
	p, perr := h.feature(reviewFeature())(rq)
	if perr != nil {
		return nil, err // the list cannot be shown: the button's error says why
	}
	p.Status, p.Error = statusOf(err), fmt.Sprintf("Could not %s task %d: %v", b.Op, id, err)
	var pe *pageError
	if errors.As(err, &pe) {
		p.Error = pe.msg
	}
	var se *engine.ReviewStateError
	if errors.As(err, &se) {
		p.Status = http.StatusConflict
		p.Error = fmt.Sprintf("Could not %s task %d: it is %s now, not what the page showed. The list below is current.", b.Op, id, se.State)
	}
	return p, nil
}
