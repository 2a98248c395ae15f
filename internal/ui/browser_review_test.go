package ui

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/heddlewf/heddle/engine"
)

// TestBrowserReview opens the review page in Chromium with two tasks of a
// letter awaiting a person, presses approve on one, and sees the page come
// back with the message, without that task, and with the other task's
// manifest showing the approval and who made it; a reader sees the same
// list without buttons.
func TestBrowserReview(t *testing.T) {
	ctx := browser(t)
	n := startNode(t)
	res, err := n.e.Create(context.Background(), engine.CreateJob{WorkflowID: "letter-42", Type: "Letter", Queue: "letters"})
	if err != nil {
		t.Fatal(err)
	}
	draft := awaitReview(t, n.e, engine.CreateReview{Job: "letter-42", Phase: "draft", Queue: "writers", ParentJob: res.Job, ParentStep: "1", ParentLease: holdRun(t, n.e, "letters"),
		JobDescription: "a letter to a customer", Config: engine.ReviewConfig{Objective: "apologise for the late parcel"}}, engine.VerdictApprove)
	summary := awaitReview(t, n.e, engine.CreateReview{Job: "letter-42", Phase: "summary", Queue: "summaries"}, engine.VerdictIntervene)
	if draft != 1 || summary != 2 {
		t.Fatalf("task ids %d and %d, want 1 and 2", draft, summary)
	}

	run(t, ctx, "open the UI", chromedp.Navigate(n.url+"/ui/review"), chromedp.WaitVisible("#token", chromedp.ByQuery))
	run(t, ctx, "sign in",
		typeInto("#token", browserToken),
		click("#signin"),
		chromedp.WaitVisible("#role", chromedp.ByQuery),
		chromedp.Navigate(n.url+"/ui/review"),
		chromedp.WaitVisible("#task-1", chromedp.ByQuery))
	if s := text(t, ctx, "#task-1-state"); s != "APPROVAL_REQUIRED" {
		t.Errorf("task 1 shows %q", s)
	}
	if s := text(t, ctx, "#task-2-state"); s != "INTERVENTION_REQUIRED" {
		t.Errorf("task 2 shows %q", s)
	}
	one := text(t, ctx, "#task-1")
	for _, want := range []string{"letter-42 / draft", "apologise for the late parcel", "critic: approve", "letter-42 (its step 1)",
		"Manifest of letter-42", "current phase draft"} {
		if !strings.Contains(one, want) {
			t.Errorf("task 1 lacks %q:\n%s", want, one)
		}
	}
	var forms []string
	run(t, ctx, "the forms", chromedp.Evaluate(`[...document.querySelectorAll('.review-task form')].map(f => f.id)`, &forms))
	if got := strings.Join(forms, ","); got != "task-1-approve-form,task-1-reject-form,task-2-resubmit-form,task-2-fix-form,task-2-terminate-form" {
		t.Errorf("the review page has the forms %s", got)
	}
	shoot(t, ctx, "ui-review")

	run(t, ctx, "approve task 1",
		typeInto("#task-1-approve-form input[name=reason]", "reads well"),
		click("#task-1-approve"),
		chromedp.WaitVisible("#flash", chromedp.ByQuery),
		chromedp.WaitNotPresent("#task-1", chromedp.ByQuery))
	if f := text(t, ctx, "#flash"); !strings.HasPrefix(f, "Task approved") {
		t.Errorf("flash %q after the approval", f)
	}
	// The other task's manifest shows the approval, by the token's name.
	if m := text(t, ctx, "#task-2-manifest"); !strings.Contains(m, "SUCCESS") || !strings.Contains(m, "ada") || !strings.Contains(m, "current phase summary") {
		t.Errorf("the manifest after the approval:\n%s", m)
	}
	review, err := n.e.DescribeReview(context.Background(), engine.ReviewTarget{ID: draft})
	if err != nil || review.State != engine.ReviewSuccess || review.DecidedBy != "ada" {
		t.Fatalf("task 1 after the button: %+v, %v", review, err)
	}
	shoot(t, ctx, "ui-review-approved")

	// Fix (document 004): the person fixed what the review found, and
	// the task is reviewed again, with what they did as its feedback.
	run(t, ctx, "fix task 2",
		typeInto("#task-2-fix-form input[name=reason]", "added the tracking number"),
		click("#task-2-fix"),
		chromedp.WaitVisible(`#task-2[data-state="REVIEW_REQUIRED"]`, chromedp.ByQuery))
	if f := text(t, ctx, "#flash"); !strings.HasPrefix(f, "Task marked fixed") {
		t.Errorf("flash %q after the fix", f)
	}
	if s := text(t, ctx, "#task-2"); !strings.Contains(s, "added the tracking number") || !strings.Contains(s, "heddle task step 2") {
		t.Errorf("task 2 after the fix:\n%s", s)
	}
	review, err = n.e.DescribeReview(context.Background(), engine.ReviewTarget{ID: summary})
	if err != nil || review.State != engine.ReviewReviewRequired || review.Feedback != "added the tracking number" {
		t.Fatalf("task 2 after the fix: %+v, %v", review, err)
	}
	shoot(t, ctx, "ui-review-fixed")

	// A reader sees the tasks and no button.
	signInAs(t, ctx, n, readerToken, "/ui/review", "#no-review-actions")
	run(t, ctx, "the reader's forms", chromedp.Evaluate(`[...document.querySelectorAll('.review-task form')].map(f => f.id)`, &forms))
	if len(forms) != 0 {
		t.Errorf("a reader's review page has the forms %v", forms)
	}
	if s := text(t, ctx, "#task-2-state"); s != "REVIEW_REQUIRED" {
		t.Errorf("the reader sees task 2 as %q", s)
	}
}
