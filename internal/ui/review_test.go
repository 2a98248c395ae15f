package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
)

// awaitReview creates a task of job alone in queue, has a worker record its
// output and a reviewer judge it with v: the task then awaits a person in
// APPROVAL_REQUIRED (approve) or INTERVENTION_REQUIRED (intervene). With
// v 0 it stops at REVIEW_REQUIRED.
// holdRun claims the run waiting on queue, as its worker does before it
// creates the run's tasks (only the holder of a run's lease may), and
// returns the lease.
func holdRun(t *testing.T, e *embedded.Engine, queue string) *engine.LeaseRef {
	t.Helper()
	jobs, err := e.Claim(context.Background(), engine.Claim{Queue: queue, Owner: "worker-1", Max: 1, LeaseMS: 3_600_000})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim of the run on %s: %+v, %v", queue, jobs, err)
	}
	ref := jobs[0].Lease()
	return &ref
}

func awaitReview(t *testing.T, e *embedded.Engine, c engine.CreateReview, v engine.Verdict) engine.ReviewID {
	t.Helper()
	ctx := context.Background()
	if c.Type == "" {
		c.Type = "write"
	}
	res, err := e.CreateReview(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	w, err := e.ClaimReviews(ctx, engine.ClaimReviews{Queue: c.Queue, Owner: "agent-1", Max: 1, LeaseMS: 60_000})
	if err != nil || len(w) != 1 {
		t.Fatalf("work claim: %+v, %v", w, err)
	}
	if _, err := e.ReviewReport(ctx, engine.ReviewReport{ReviewLeaseRef: w[0].Lease(),
		Op: engine.ReviewReportOutput, Output: []byte(`{"draft":"Dear customer"}`), Cost: 2, Summary: "drafted"}); err != nil {
		t.Fatal(err)
	}
	if v == 0 {
		return res.Review
	}
	if _, err := e.ReviewCommand(ctx, engine.ReviewCommand{ReviewTarget: engine.ReviewTarget{ID: res.Review}, Op: engine.ReviewOpStep, By: "ann"}); err != nil {
		t.Fatal(err)
	}
	r, err := e.ClaimReviews(ctx, engine.ClaimReviews{Role: engine.ReviewRoleReview, Queue: c.Queue, Owner: "critic", Max: 1, LeaseMS: 60_000})
	if err != nil || len(r) != 1 {
		t.Fatalf("review claim: %+v, %v", r, err)
	}
	if _, err := e.ReviewReport(ctx, engine.ReviewReport{ReviewLeaseRef: r[0].Lease(),
		Op: engine.ReviewReportVerdict, Assessment: &engine.Assessment{Verdict: v, Summary: "critic: " + v.String(), Recommendations: []string{"mind the tone"}}}); err != nil {
		t.Fatal(err)
	}
	return res.Review
}

func (v *env) review(id engine.ReviewID) *engine.Review {
	v.t.Helper()
	t, err := v.e.DescribeReview(context.Background(), engine.ReviewTarget{ID: id})
	if err != nil {
		v.t.Fatal(err)
	}
	return t
}

// TestReviewPage lists the tasks awaiting a person across jobs, each with
// its state, its run, the buttons legal in its state and its job's
// manifest; the tasks that await nobody are not there; a filter narrows
// the list.
func TestReviewPage(t *testing.T) {
	v := newEnv(t, envOptions{})
	run := v.create(engine.CreateJob{WorkflowID: "letter-7", Type: "Letter", Queue: "letters"})
	approve := awaitReview(t, v.e, engine.CreateReview{Job: "letter-7", Phase: "draft", Queue: "qa", ParentJob: run, ParentStep: "2", ParentLease: holdRun(t, v.e, "letters"),
		JobDescription: "a letter to a customer", Config: engine.ReviewConfig{Objective: "write the letter"}}, engine.VerdictApprove)
	intervene := awaitReview(t, v.e, engine.CreateReview{Job: "memo-1", Phase: "outline", Queue: "qb"}, engine.VerdictIntervene)
	review := awaitReview(t, v.e, engine.CreateReview{Job: "memo-2", Phase: "outline", Queue: "qc"}, 0)
	if _, err := v.e.CreateReview(context.Background(), engine.CreateReview{Job: "idle-job", Phase: "p", Queue: "qd", Type: "w"}); err != nil {
		t.Fatal(err)
	}

	code, body, _ := v.get("/ui/review")
	if code != http.StatusOK {
		t.Fatalf("review page: HTTP %d\n%s", code, body)
	}
	id := func(n engine.ReviewID) string { return strconv.FormatUint(uint64(n), 10) }
	wantIn(t, "review page", body,
		`id="task-`+id(approve)+`" data-task="`+id(approve)+`" data-state="APPROVAL_REQUIRED"`,
		`id="task-`+id(intervene)+`" data-task="`+id(intervene)+`" data-state="INTERVENTION_REQUIRED"`,
		`id="task-`+id(review)+`" data-task="`+id(review)+`" data-state="REVIEW_REQUIRED"`,
		"letter-7 / draft", "write the letter", "critic: approve", "mind the tone", `"draft": "Dear customer"`,
		`<a href="/ui/runs/`+strconv.FormatUint(uint64(run), 10)+`" class="run-link">letter-7</a> (its step 2)`,
		`id="task-1-approve-form"`, `id="task-1-reject-form"`, `id="task-2-resubmit-form"`, `id="task-2-terminate-form"`,
		`<input type="hidden" name="expect" value="APPROVAL_REQUIRED">`,
		"heddle task step 3",
		// The manifest, as heddle task describe prints it.
		`id="task-1-manifest"`, "Manifest of letter-7", "a letter to a customer. Status <strong>APPROVAL_REQUIRED</strong>, current phase draft; cost 2",
		"heddle task list</code>")
	wantNotIn(t, "review page", body, "idle-job", `id="task-1-resubmit-form"`, `id="task-2-approve-form"`, `id="task-3-approve-form"`,
		`id="no-review-actions"`, `id="next-page"`)

	_, body, _ = v.get("/ui/review?state=INTERVENTION_REQUIRED")
	wantIn(t, "filtered by state", body, `data-state="INTERVENTION_REQUIRED"`, "--state INTERVENTION_REQUIRED", "<option selected>INTERVENTION_REQUIRED</option>")
	wantNotIn(t, "filtered by state", body, `data-state="APPROVAL_REQUIRED"`)
	_, body, _ = v.get("/ui/review?queue=qc")
	wantIn(t, "filtered by queue", body, `data-task="3"`, "--queue 'qc'")
	wantNotIn(t, "filtered by queue", body, `data-task="1"`)
	_, body, _ = v.get("/ui/review?queue=none")
	wantIn(t, "an empty filter", body, `id="no-tasks"`, "No task awaits a person with this filter.")
	code, body, _ = v.get("/ui/review?state=RUNNING")
	if code != http.StatusBadRequest {
		t.Errorf("state=RUNNING: HTTP %d", code)
	}
	wantIn(t, "state=RUNNING", body, `"RUNNING" is not a state that awaits a person.`)
}

// TestReviewPaging pages through more tasks than one page holds.
func TestReviewPaging(t *testing.T) {
	v := newEnv(t, envOptions{})
	for i := range reviewPageSize + 1 {
		awaitReview(t, v.e, engine.CreateReview{Job: "j" + strconv.Itoa(i), Phase: "p", Queue: "q" + strconv.Itoa(i)}, 0)
	}
	_, body, _ := v.get("/ui/review")
	wantIn(t, "first page", body, `data-task="50"`, `<a href="/ui/review?after=50" id="next-page">`)
	wantNotIn(t, "first page", body, `data-task="51"`)
	_, body, _ = v.get("/ui/review?after=50")
	wantIn(t, "second page", body, `data-task="51"`)
	wantNotIn(t, "second page", body, `data-task="50"`, `id="next-page"`)
}

// TestReviewActions presses each button: approve, reject (with its reason
// as the feedback), resubmit and terminate each move their task and come
// back to the list with a message; a button pressed on a page that is out
// of date is refused with the task's state now; a form without the CSRF
// token is refused.
func TestReviewActions(t *testing.T) {
	v := newEnv(t, envOptions{})
	a := awaitReview(t, v.e, engine.CreateReview{Job: "j1", Phase: "p", Queue: "q1"}, engine.VerdictApprove)
	r := awaitReview(t, v.e, engine.CreateReview{Job: "j2", Phase: "p", Queue: "q2"}, engine.VerdictApprove)
	s := awaitReview(t, v.e, engine.CreateReview{Job: "j3", Phase: "p", Queue: "q3"}, engine.VerdictIntervene)
	x := awaitReview(t, v.e, engine.CreateReview{Job: "j4", Phase: "p", Queue: "q4"}, engine.VerdictIntervene)
	csrf := v.csrf("/ui/review")
	press := func(id engine.ReviewID, op, expect, reason string) (int, string, string) {
		t.Helper()
		return v.post("/ui/review/"+strconv.FormatUint(uint64(id), 10)+"/"+op,
			url.Values{csrfField: {csrf}, "expect": {expect}, "reason": {reason}})
	}
	for _, c := range []struct {
		id             engine.ReviewID
		op, expect     string
		want           engine.ReviewState
		flash, history string
	}{
		{a, "approve", "APPROVAL_REQUIRED", engine.ReviewSuccess, "Task approved", ""},
		{r, "reject", "APPROVAL_REQUIRED", engine.ReviewPending, "Task rejected", "use the customer's name"},
		{s, "resubmit", "INTERVENTION_REQUIRED", engine.ReviewPending, "Task resubmitted", "try again"},
		{x, "terminate", "INTERVENTION_REQUIRED", engine.ReviewCanceled, "Task terminated.", ""},
	} {
		code, _, loc := press(c.id, c.op, c.expect, c.history)
		want := "/ui/review?done=" + c.op + "&task=" + strconv.FormatUint(uint64(c.id), 10)
		if code != http.StatusSeeOther || loc != want {
			t.Fatalf("%s: HTTP %d to %q, want 303 to %q", c.op, code, loc, want)
		}
		review := v.review(c.id)
		if review.State != c.want || review.DecidedBy != reviewDecider {
			t.Errorf("%s: task is %s decided by %q", c.op, review.State, review.DecidedBy)
		}
		if c.history != "" && review.Feedback != c.history {
			t.Errorf("%s: feedback %q, want %q", c.op, review.Feedback, c.history)
		}
		_, body, _ := v.get(loc)
		wantIn(t, c.op+" then the list", body, `id="flash">`+c.flash)
		wantNotIn(t, c.op+" then the list", body, `data-task="`+strconv.FormatUint(uint64(c.id), 10)+`"`)
	}

	// A page shown before someone else decided: the button is refused
	// with the state now, and nothing is written.
	b := awaitReview(t, v.e, engine.CreateReview{Job: "j5", Phase: "p", Queue: "q5"}, engine.VerdictApprove)
	if _, err := v.e.ReviewCommand(context.Background(), engine.ReviewCommand{ReviewTarget: engine.ReviewTarget{ID: b}, Op: engine.ReviewOpReject, By: "bob", Reason: "no"}); err != nil {
		t.Fatal(err)
	}
	code, body, _ := press(b, "approve", "APPROVAL_REQUIRED", "")
	if code != http.StatusConflict {
		t.Errorf("approve of a task rejected meanwhile: HTTP %d", code)
	}
	wantIn(t, "approve of a task rejected meanwhile", body, "Could not approve task 5: it is PENDING now, not what the page showed.", `id="no-tasks"`)
	if review := v.review(b); review.State != engine.ReviewPending || review.DecidedBy != "bob" {
		t.Errorf("the refused approve changed the task: %s by %q", review.State, review.DecidedBy)
	}
	// A button the state never had: the engine names the state.
	c := awaitReview(t, v.e, engine.CreateReview{Job: "j6", Phase: "p", Queue: "q6"}, engine.VerdictApprove)
	code, body, _ = press(c, "terminate", "", "")
	if code != http.StatusConflict {
		t.Errorf("terminate of an APPROVAL_REQUIRED task: HTTP %d", code)
	}
	wantIn(t, "terminate of an APPROVAL_REQUIRED task", body, "it is APPROVAL_REQUIRED now")

	for _, bad := range []struct {
		path string
		form url.Values
		code int
		msg  string
	}{
		{"/ui/review/6/approve", url.Values{"expect": {"APPROVAL_REQUIRED"}}, http.StatusForbidden, "This form has expired"},
		{"/ui/review/6/step", url.Values{csrfField: {csrf}}, http.StatusNotFound, "There is no such button."},
		{"/ui/review/x/approve", url.Values{csrfField: {csrf}}, http.StatusNotFound, `"x" is not a task id`},
		{"/ui/review/99/approve", url.Values{csrfField: {csrf}}, http.StatusNotFound, "Could not approve task 99"},
		{"/ui/review/6/approve", url.Values{csrfField: {csrf}, "expect": {"LATE"}}, http.StatusBadRequest, "names no task state"},
	} {
		code, body, _ := v.post(bad.path, bad.form)
		if code != bad.code {
			t.Errorf("POST %s %v: HTTP %d, want %d", bad.path, bad.form, code, bad.code)
		}
		wantIn(t, "POST "+bad.path, body, bad.msg)
	}
	if review := v.review(c); review.State != engine.ReviewApprovalRequired {
		t.Errorf("the refused forms moved task %d to %s", c, review.State)
	}

	// Fix (document 004: a person fixed what the review found) sends a
	// task in INTERVENTION_REQUIRED to be reviewed again, with the
	// person's words as its feedback; the list shows it REVIEW_REQUIRED,
	// waiting for a review to start, with no buttons.
	f := awaitReview(t, v.e, engine.CreateReview{Job: "j7", Phase: "p", Queue: "q7"}, engine.VerdictIntervene)
	_, body, _ = v.get("/ui/review")
	wantIn(t, "the list with a task to fix", body, fmt.Sprintf(`id="task-%d-fix-form"`, f), fmt.Sprintf(`id="task-%d-fix"`, f), "Mark fixed")
	wantNotIn(t, "the list with a task to fix", body, fmt.Sprintf(`id="task-%d-fix-form"`, c)) // APPROVAL_REQUIRED: no fix
	code, _, loc := press(f, "fix", "INTERVENTION_REQUIRED", "renamed the file the review could not find")
	if want := fmt.Sprintf("/ui/review?done=fix&task=%d", f); code != http.StatusSeeOther || loc != want {
		t.Fatalf("fix: HTTP %d to %q, want 303 to %q", code, loc, want)
	}
	review := v.review(f)
	if review.State != engine.ReviewReviewRequired || review.DecidedBy != reviewDecider || review.Feedback != "renamed the file the review could not find" {
		t.Errorf("fix: the task is %s decided by %q with feedback %q", review.State, review.DecidedBy, review.Feedback)
	}
	_, body, _ = v.get(loc)
	wantIn(t, "fix then the list", body, `id="flash">Task marked fixed`, fmt.Sprintf(`id="task-%d-state">REVIEW_REQUIRED`, f),
		fmt.Sprintf("heddle task step %d", f))
	wantNotIn(t, "fix then the list", body, fmt.Sprintf(`id="task-%d-fix-form"`, f))
}

// TestReviewRoles shows a reader the tasks without buttons, and refuses
// its forms; a client gets every button.
func TestReviewRoles(t *testing.T) {
	role := "reader"
	v := newEnv(t, envOptions{permissions: func(context.Context, string) (Permissions, error) { return ForRole(role) }})
	id := awaitReview(t, v.e, engine.CreateReview{Job: "j", Phase: "p", Queue: "q"}, engine.VerdictApprove)
	_, body, _ := v.get("/ui/review")
	wantIn(t, "a reader's review page", body, `data-task="1"`, `id="no-review-actions"`, "The reader role may not decide tasks: it can read them only.")
	wantNotIn(t, "a reader's review page", body, `id="task-1-approve-form"`, `id="task-1-reject-form"`)
	code, body, _ := v.post("/ui/review/1/approve", url.Values{csrfField: {v.csrf("/ui/signin")}})
	if code != http.StatusForbidden {
		t.Errorf("a reader's approve: HTTP %d", code)
	}
	wantIn(t, "a reader's approve", body, "The reader role may not approve tasks.")
	if review := v.review(id); review.State != engine.ReviewApprovalRequired {
		t.Errorf("a reader's approve moved the task to %s", review.State)
	}
	role = "client"
	_, body, _ = v.get("/ui/review")
	wantIn(t, "a client's review page", body, `id="task-1-approve-form"`, `id="task-1-reject-form"`)
	wantNotIn(t, "a client's review page", body, `id="no-review-actions"`)
}
