package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/client"
)

// The client's task commands on a draft: configured, activated, an
// illegal approval refused with the state, then canceled; the manifest
// read back.
func TestClientReviewCommands(t *testing.T) {
	e, err := embedded.Open(embedded.Config{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	}()
	ctx := context.Background()
	if _, err := e.CreateReview(ctx, engine.CreateReview{Job: "j", Phase: "p", Queue: "q", Type: "w", Draft: true}); err != nil {
		t.Fatal(err)
	}
	c := client.New(e)
	d := client.ReviewDecision{Job: "j", Phase: "p", By: "ann"}
	if s, err := c.ConfigureReview(ctx, d, engine.ReviewConfig{Objective: "o"}); err != nil || s != engine.ReviewDraft {
		t.Fatalf("configure: %s, %v", s, err)
	}
	if s, err := c.ActivateReview(ctx, d); err != nil || s != engine.ReviewPending {
		t.Fatalf("activate: %s, %v", s, err)
	}
	_, err = c.ApproveReview(ctx, d)
	var se *engine.ReviewStateError
	if !errors.As(err, &se) || se.State != engine.ReviewPending {
		t.Fatalf("approve while PENDING: %v", err)
	}
	if s, err := c.CancelReview(ctx, client.ReviewDecision{Job: "j", Phase: "p", By: "ann", Reason: "not needed"}); err != nil || s != engine.ReviewCanceled {
		t.Fatalf("cancel: %s, %v", s, err)
	}
	m, err := c.DescribeReviewJob(ctx, "j")
	if err != nil || m.Status != engine.ReviewCanceled || m.History[0].Summary != "not needed" || m.History[0].DecidedBy != "ann" {
		t.Fatalf("manifest %+v, %v", m, err)
	}
	review, err := c.DescribeReview(ctx, "j", "p")
	if err != nil || review.Config.Objective != "o" {
		t.Fatalf("task %+v, %v", review, err)
	}
	if ts, err := c.ListReviews(ctx, "j"); err != nil || len(ts) != 1 {
		t.Fatalf("list %+v, %v", ts, err)
	}
}
