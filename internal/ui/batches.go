package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/internal/listfilter"
	"github.com/heddlewf/heddle/sdk/converter"
)

// Batch operations in the console: the workflow list's Batch panel acts on
// every run its filter matches (cancel, terminate, signal, reset, pause,
// unpause), through
// a page (/ui/batch-confirm, a GET) that says how many runs match and whose
// button posts the batch (POST /ui/batches); the Batches
// page lists the batches and their progress, a batch's page describes one
// and stops it while it runs. Starting and stopping a batch is an admin's,
// as in the API.

// ActionBatch starts or stops a batch operation (the API lets admins
// only).
const ActionBatch Action = "batch"

// batchOps are the operations the Batch panel offers, in its order.
var batchOps = []engine.BatchOperation{engine.BatchCancel, engine.BatchTerminate, engine.BatchSignal, engine.BatchReset,
	engine.BatchPause, engine.BatchUnpause}

// batchForm is the Batch panel's form, as the browser sent it.
type batchForm struct {
	Query, Op, Reason, SignalName, SignalValue, ResetType string
}

// readBatchForm reads the form (a GET's query or a POST's body), keeping
// of the operation's fields those of the operation chosen: the panel
// sends them all.
func readBatchForm(r *http.Request) batchForm {
	get := func(k string) string {
		if r.Method == http.MethodGet {
			return r.URL.Query().Get(k)
		}
		return formValue(r, k)
	}
	f := batchForm{Query: get("q"), Op: get("op"), Reason: get("reason")}
	switch engine.BatchOperation(f.Op) {
	case engine.BatchSignal:
		f.SignalName, f.SignalValue = get("signal_name"), get("signal_value")
	case engine.BatchReset:
		f.ResetType = get("reset_type")
	}
	return f
}

// spec checks the form and makes the batch it asks for.
func (f batchForm) spec() (engine.BatchSpec, error) {
	bad := func(msg string) error { return &pageError{status: http.StatusBadRequest, msg: msg} }
	op, err := engine.ParseBatchOperation(f.Op)
	if err != nil {
		return engine.BatchSpec{}, bad(fmt.Sprintf("%q is not a batch operation: choose cancel, terminate, signal, reset, pause or unpause.", f.Op))
	}
	if err := checkReason(f.Reason); err != nil {
		return engine.BatchSpec{}, err
	}
	s := engine.BatchSpec{Operation: op, Query: f.Query, Reason: f.Reason}
	switch op {
	case engine.BatchSignal:
		if f.SignalName == "" {
			return s, bad("A batch signal needs the signal's name.")
		}
		raw := json.RawMessage("null")
		if f.SignalValue != "" {
			if !json.Valid([]byte(f.SignalValue)) {
				return s, bad("The signal's value is not JSON (a string is written in quotes: \"text\").")
			}
			raw = json.RawMessage(f.SignalValue)
		}
		s.SignalName = f.SignalName
		if s.SignalPayload, err = converter.Encode(raw); err != nil {
			return s, err
		}
	case engine.BatchReset:
		if f.Reason == "" {
			return s, bad("A reset needs a reason: say why, for whoever reads the histories.")
		}
		if s.ResetType, err = engine.ParseResetType(f.ResetType); err != nil || s.ResetType == engine.ResetToEvent {
			return s, bad(fmt.Sprintf("The reset point %q is neither FirstWorkflowTask nor LastWorkflowTask.", f.ResetType))
		}
	}
	return s, nil
}

// batchConfirmData is the page that asks to confirm a batch.
type batchConfirmData struct {
	Form    batchForm
	Matched uint64
	// Back links the workflow list of the same filter.
	Back string
}

// checkedBatchForm reads and checks the form of a batch the token may
// start.
func checkedBatchForm(rq *request) (batchForm, engine.BatchSpec, error) {
	if !rq.can.Can(ActionBatch) {
		return batchForm{}, engine.BatchSpec{}, forbidden(rq, "start batch operations")
	}
	f := readBatchForm(rq.r)
	spec, err := f.spec()
	if err != nil {
		return f, spec, err
	}
	if _, err := listfilter.Parse(f.Query, rq.now); err != nil {
		return f, spec, &pageError{status: http.StatusBadRequest, msg: fmt.Sprintf("The filter is not a query of the list: %v", err)}
	}
	return f, spec, nil
}

// confirmBatch is the page the Batch panel opens (a GET, which changes
// nothing): how many runs the filter matches now, and a button that
// starts the batch.
func (h *Handler) confirmBatch(rq *request) (*page, error) {
	f, _, err := checkedBatchForm(rq)
	if err != nil {
		return nil, err
	}
	n, err := rq.api.Count(rq.ctx, engine.ListQuery{Query: f.Query, NowMS: rq.now.UnixMilli()})
	if err != nil {
		return nil, err
	}
	back := Path + "/workflows"
	if f.Query != "" {
		back += "?" + url.Values{"q": {f.Query}}.Encode()
	}
	return &page{Template: "batchconfirm.html", Title: "Confirm the batch", Nav: "batches",
		Data: &batchConfirmData{Form: f, Matched: n.Count, Back: back}}, nil
}

// startBatch starts the batch the confirmation page's button posts, and
// shows its page.
func (h *Handler) startBatch(rq *request) (*page, error) {
	_, spec, err := checkedBatchForm(rq)
	if err != nil {
		return nil, err
	}
	res, err := rq.api.StartBatch(rq.ctx, engine.StartBatch{BatchSpec: spec})
	if err != nil {
		return nil, err
	}
	return nil, redirect{to: batchPath(res.Batch.ID) + "?done=batch-started"}
}

// stopBatch stops a running batch.
func (h *Handler) stopBatch(rq *request) (*page, error) {
	if !rq.can.Can(ActionBatch) {
		return nil, forbidden(rq, "stop batch operations")
	}
	id := rq.r.PathValue("batch")
	reason := formValue(rq.r, "reason")
	if err := checkReason(reason); err != nil {
		return nil, err
	}
	if _, err := rq.api.StopBatch(rq.ctx, engine.StopBatch{ID: id, Reason: reason}); err != nil {
		return nil, err
	}
	return nil, redirect{to: batchPath(id) + "?done=batch-stopped"}
}

// forbidden is the page of an action the token's role may not take.
func forbidden(rq *request, what string) error {
	who := "This token"
	if r := rq.can.Role(); r != "" {
		who = "The " + r + " role"
	}
	return &pageError{status: http.StatusForbidden, msg: fmt.Sprintf("%s may not %s.", who, what)}
}

func batchPath(id string) string { return Path + "/batches/" + url.PathEscape(id) }

// batchView is a batch with what its rows and page show.
type batchView struct {
	*engine.Batch
	Link string
	// Percent is the share of the total acted on, 0 to 100.
	Percent int
	Running bool
}

func newBatchView(b *engine.Batch) batchView {
	v := batchView{Batch: b, Link: batchPath(b.ID), Running: b.State == engine.BatchRunning}
	if b.Total > 0 {
		v.Percent = int((b.Done + b.Failed + b.Skipped) * 100 / b.Total)
	} else if !v.Running {
		v.Percent = 100
	}
	return v
}

// batchesData is the Batches page's.
type batchesData struct {
	Batches []batchView
	// Next links the next page ("" at the end).
	Next string
}

// loadBatches reads the Batches page: a page of batches in id order.
func loadBatches(ctx context.Context, api *backend, r *http.Request) (any, error) {
	page, err := api.ListBatches(ctx, engine.BatchListQuery{After: r.URL.Query().Get("after")})
	if err != nil {
		return nil, err
	}
	d := &batchesData{}
	for _, b := range page.Batches {
		d.Batches = append(d.Batches, newBatchView(b))
	}
	if page.Next != "" {
		d.Next = Path + "/batches?" + url.Values{"after": {page.Next}}.Encode()
	}
	return d, nil
}

// batchData is a batch's page.
type batchData struct {
	Batch batchView
	// CLI is the same look in the CLI.
	CLI string
}

// batch shows one batch and its progress.
func (h *Handler) batch(rq *request) (*page, error) {
	id := rq.r.PathValue("batch")
	b, err := rq.api.DescribeBatch(rq.ctx, id)
	if errors.Is(err, httpapi.ErrNoRoute) {
		return nil, &pageError{status: http.StatusNotFound, msg: "This server's API has no batch operations."}
	}
	if errors.Is(err, engine.ErrUnknownBatch) {
		return nil, &pageError{status: http.StatusNotFound, msg: fmt.Sprintf("There is no batch %q.", id)}
	}
	if err != nil {
		return nil, err
	}
	p := &page{Template: "batch.html", Title: "Batch " + b.ID, Nav: "batches",
		Data: &batchData{Batch: newBatchView(b), CLI: "heddle batch describe --job-id " + shellWord(b.ID)}}
	p.Flash = doneMessages[rq.r.URL.Query().Get("done")]
	return p, nil
}
