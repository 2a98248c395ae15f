package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// TestBatchActions starts a batch from the workflow list's Batch panel: the
// panel posts the list's filter, a first page says how many runs match and
// asks to confirm (starting nothing), the confirmation starts the batch
// and shows its page, which stops it; the Batches page lists it. A form
// without the page's CSRF token, or a bad operation, starts nothing.
func TestBatchActions(t *testing.T) {
	v := newEnv(t, envOptions{})
	for _, id := range []string{"bulk-1", "bulk-2", "other"} {
		v.create(engine.CreateJob{WorkflowID: id, Type: "Order", Queue: "orders"})
	}
	list := "/ui/workflows?" + url.Values{"q": {`WorkflowId STARTS_WITH "bulk-"`}}.Encode()
	_, body, _ := v.get(list)
	wantIn(t, "the workflow list", body, `id="batch-form"`, `action="/ui/batch-confirm"`, `name="q" value="WorkflowId STARTS_WITH "bulk-""`,
		`<option>terminate</option>`, `<option>reset</option>`, `<option>pause</option>`, `<option>unpause</option>`)

	code, body, _ := v.get("/ui/batch-confirm?" + url.Values{"op": {"explode"}}.Encode())
	if code != http.StatusBadRequest || !strings.Contains(body, `"explode" is not a batch operation`) {
		t.Errorf("a bad operation: HTTP %d", code)
	}
	code, body, _ = v.get("/ui/batch-confirm?" + url.Values{"op": {"signal"}}.Encode())
	if code != http.StatusBadRequest || !strings.Contains(body, "A batch signal needs the signal's name.") {
		t.Errorf("a signal without a name: HTTP %d", code)
	}
	// The panel sends every field; only the operation's are kept.
	ask := url.Values{"q": {`WorkflowId STARTS_WITH "bulk-"`}, "op": {"terminate"}, "reason": {"cleanup"},
		"signal_name": {"unused"}, "reset_type": {"LastWorkflowTask"}}
	confirm := "/ui/batch-confirm?" + ask.Encode()
	code, body, _ = v.get(confirm)
	if code != http.StatusOK {
		t.Fatalf("the confirmation page: HTTP %d\n%s", code, body)
	}
	wantIn(t, "the confirmation page", body, `<strong>2</strong> runs match`, "Start a batch to <strong>terminate</strong> them?",
		`id="batch-confirm"`, `name="reset_type" value=""`, `name="signal_name" value=""`)
	if page, err := v.e.ListBatches(context.Background(), engine.BatchListQuery{}); err != nil || len(page.Batches) != 0 {
		t.Fatalf("the confirmation page started a batch: %+v %v", page, err)
	}
	csrf := v.csrf(confirm)
	form := url.Values{"q": {`WorkflowId STARTS_WITH "bulk-"`}, "op": {"terminate"}, "reason": {"cleanup"}, csrfField: {strings.Repeat("0", 32)}}
	if code, _, _ := v.post("/ui/batches", form); code != http.StatusForbidden {
		t.Errorf("a batch with a wrong CSRF token: HTTP %d", code)
	}
	if page, err := v.e.ListBatches(context.Background(), engine.BatchListQuery{}); err != nil || len(page.Batches) != 0 {
		t.Fatalf("a batch without the CSRF token was started: %+v %v", page, err)
	}
	form.Set(csrfField, csrf)
	code, _, loc := v.post("/ui/batches", form)
	page, err := v.e.ListBatches(context.Background(), engine.BatchListQuery{})
	if err != nil || len(page.Batches) != 1 {
		t.Fatalf("after the confirmation: %+v %v", page, err)
	}
	b := page.Batches[0]
	if b.Operation != engine.BatchTerminate || b.Total != 2 || b.Reason != "cleanup" || b.Query != `WorkflowId STARTS_WITH "bulk-"` {
		t.Errorf("the batch started: %+v", b)
	}
	if code != http.StatusSeeOther || loc != batchPath(b.ID)+"?done=batch-started" {
		t.Fatalf("start: HTTP %d to %q", code, loc)
	}
	_, body, _ = v.get(loc)
	wantIn(t, "the batch's page", body, "Batch started", `id="batch-state" data-state="Running"`, "0 of 2 done, 0 failed",
		`id="batch-stop-form"`, "heddle batch describe --job-id "+b.ID)
	_, body, _ = v.get("/ui/batches")
	wantIn(t, "the Batches page", body, `data-batch="`+b.ID+`"`, `data-state="Running"`)

	code, _, loc = v.post(batchPath(b.ID)+"/stop", url.Values{"reason": {"wrong filter"}, csrfField: {v.csrf(batchPath(b.ID))}})
	if code != http.StatusSeeOther || loc != batchPath(b.ID)+"?done=batch-stopped" {
		t.Fatalf("stop: HTTP %d to %q", code, loc)
	}
	_, body, _ = v.get(loc)
	wantIn(t, "the stopped batch's page", body, "Batch stopped", `data-state="Terminated"`, "wrong filter")
	wantNotIn(t, "the stopped batch's page", body, `id="batch-stop-form"`)
	code, body, _ = v.get("/ui/batches/nope")
	if code != http.StatusNotFound || !strings.Contains(body, `There is no batch "nope".`) {
		t.Errorf("an unknown batch: HTTP %d", code)
	}
}

// TestBatchRoles: the Batch panel and the Stop button are an admin's; a
// batch posted by a client is refused naming the role, and starts nothing.
func TestBatchRoles(t *testing.T) {
	role := "client"
	v := newEnv(t, envOptions{permissions: func(context.Context, string) (Permissions, error) { return ForRole(role) }})
	id := v.create(engine.CreateJob{WorkflowID: "bulk-1", Type: "Order", Queue: "orders"})
	runPage := fmt.Sprintf("/ui/runs/%d", id) // a client's page with a form, for its CSRF token
	_, body, _ := v.get("/ui/workflows")
	wantNotIn(t, "a client's workflow list", body, `id="batch-form"`)
	if code, body, _ := v.get("/ui/batch-confirm?op=terminate"); code != http.StatusForbidden || !strings.Contains(body, "The client role may not start batch operations.") {
		t.Errorf("a client's confirmation page: HTTP %d", code)
	}
	form := url.Values{"op": {"terminate"}, csrfField: {v.csrf(runPage)}}
	code, body, _ := v.post("/ui/batches", form)
	if code != http.StatusForbidden || !strings.Contains(body, "The client role may not start batch operations.") {
		t.Errorf("a client's batch: HTTP %d", code)
	}
	if page, err := v.e.ListBatches(context.Background(), engine.BatchListQuery{}); err != nil || len(page.Batches) != 0 {
		t.Fatalf("a refused batch was started: %+v %v", page, err)
	}
	res, err := v.e.StartBatch(context.Background(), engine.StartBatch{ID: "b1", BatchSpec: engine.BatchSpec{Operation: engine.BatchTerminate}})
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ = v.get(batchPath(res.Batch.ID))
	wantIn(t, "a client's batch page", body, `data-state="Running"`)
	wantNotIn(t, "a client's batch page", body, `id="batch-stop-form"`)
	code, _, _ = v.post(batchPath("b1")+"/stop", url.Values{csrfField: {v.csrf(runPage)}})
	if code != http.StatusForbidden {
		t.Errorf("a client's stop: HTTP %d", code)
	}
	role = "admin"
	_, body, _ = v.get("/ui/workflows")
	wantIn(t, "an admin's workflow list", body, `id="batch-form"`)
}
