package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// The run page's forms beside signal, cancel, terminate and reset: the
// answer to a step that waits for a person, and a query (the stack trace
// among them).

// Bounds of what the forms take and show.
const (
	// maxAnswerBytes bounds an answer typed into the form; the API's own
	// payload limit is larger, but a person types less.
	maxAnswerBytes = 64 << 10
	// queryTimeout is how long the page waits for a worker to answer a
	// query: a worker answers in milliseconds, so a long silence means
	// none serves the run's queue.
	queryTimeout = 10 * time.Second
)

// answerForm keeps what was typed into a step's answer form when it
// failed.
type answerForm struct{ Step, Answer string }

// queryForm is the query form's: what was asked and, once asked, the
// answer (Result, or StackTrace for the stack trace query) or Error.
type queryForm struct {
	Name, Arg string
	Asked     bool
	Result    *payloadView
	// StackTrace is the stack trace query's answer, its lines as text.
	StackTrace string
	Error      string
}

// StackTraceQuery is the name of the stack trace query, for the template.
func (queryForm) StackTraceQuery() string { return workflow.StackTraceQuery }

// answer answers a step of the run that waits for a person (NEEDS_USER):
// the activity runs again with the answer, as "heddle step answer" does.
func (h *Handler) answer(rq *request) (*page, error) {
	form := answerForm{Step: rq.r.PathValue("step"), Answer: rq.r.FormValue("answer")}
	p, err := h.act(rq, ActionAnswer, func(id engine.JobID) error {
		switch {
		case form.Answer == "":
			return &pageError{status: http.StatusBadRequest, msg: "An answer needs some text: the step's activity reads it as it is."}
		case len(form.Answer) > maxAnswerBytes:
			return &pageError{status: http.StatusBadRequest, msg: fmt.Sprintf("The answer is %d bytes; the form takes at most %d.", len(form.Answer), maxAnswerBytes)}
		}
		_, err := rq.api.AnswerStep(rq.ctx, engine.AnswerStep{Target: engine.Target{Job: id}, Step: form.Step, Answer: []byte(form.Answer)})
		if errors.Is(err, engine.ErrStepState) {
			return &pageError{status: http.StatusConflict, msg: fmt.Sprintf("Step %s does not wait for an answer now (someone may have answered it): the page below is current.", form.Step)}
		}
		return err
	}, signalForm{})
	if p != nil {
		p.Data.(*runData).Answer = form
	}
	return p, err
}

// query asks the run's workflow code a query and shows the run's page
// with the answer. The page then does not refresh itself, which would ask
// again every few seconds (and lose the answer); its link goes back to the
// live page.
func (h *Handler) query(rq *request) (*page, error) {
	form := queryForm{Name: formValue(rq.r, "name"), Arg: formValue(rq.r, "arg"), Asked: true}
	if formValue(rq.r, "stack") != "" {
		form.Name, form.Arg = workflow.StackTraceQuery, ""
	}
	id, err := jobParam(rq.r)
	if err != nil {
		return nil, err
	}
	if !rq.can.Can(ActionQuery) {
		// As every button a role may not press: the run's page, with why.
		who := "This token"
		if r := rq.can.Role(); r != "" {
			who = "The " + r + " role"
		}
		p, err := h.run(rq)
		if err != nil {
			return nil, err
		}
		p.Status, p.Error = http.StatusForbidden, who+" may not ask runs queries."
		return p, nil
	}
	form.Result, form.StackTrace, form.Error = h.ask(rq, id, form)
	if errors.Is(rq.ctx.Err(), context.Canceled) {
		return nil, rq.ctx.Err()
	}
	p, err := h.run(rq)
	if err != nil {
		return nil, err
	}
	p.NoRefresh = true
	p.Data.(*runData).Query = form
	return p, nil
}

// ask asks the query of form; it returns the answer, or a stack trace, or
// what went wrong in words.
func (h *Handler) ask(rq *request, id engine.JobID, form queryForm) (*payloadView, string, string) {
	if form.Name == "" {
		return nil, "", "A query needs a name: the query type the workflow registered (workflow.SetQueryHandler)."
	}
	var args []any
	if form.Arg != "" {
		if !json.Valid([]byte(form.Arg)) {
			return nil, "", "The argument is not JSON (a string is written in quotes: \"text\")."
		}
		args = append(args, json.RawMessage(form.Arg))
	}
	encoded, err := converter.Encode(args...)
	if err != nil {
		return nil, "", err.Error()
	}
	j, err := rq.api.Describe(rq.ctx, engine.Target{Job: id})
	if err != nil {
		return nil, "", err.Error()
	}
	ctx, cancel := context.WithTimeout(rq.ctx, queryTimeout)
	defer cancel()
	data, err := rq.api.Query(ctx, j.WorkflowID, strconv.FormatUint(uint64(id), 10), form.Name, encoded)
	switch {
	case errors.Is(err, httpapi.ErrQueryTimeout), err != nil && ctx.Err() != nil && rq.ctx.Err() == nil:
		return nil, "", fmt.Sprintf("No worker of queue %s answered within %v: is one running, and does it serve queries?", j.Queue, queryTimeout)
	case errors.Is(err, engine.ErrUnknownQuery):
		return nil, "", fmt.Sprintf("The workflow has no query %q: it answers those its code registers (workflow.SetQueryHandler), and the stack trace.", form.Name)
	case err != nil:
		return nil, "", "The query failed: " + err.Error()
	}
	if form.Name == workflow.StackTraceQuery {
		var trace string
		if converter.Decode(data, &trace) == nil {
			if trace == "" {
				trace = "(no coroutine of workflow code waits: the run has not started its workflow yet)"
			}
			return nil, trace, ""
		}
	}
	// The converter's list of one value shows as that value.
	var one []json.RawMessage
	if json.Unmarshal(data, &one) == nil && len(one) == 1 {
		data = one[0]
	}
	return viewPayload(data, ""), "", ""
}
