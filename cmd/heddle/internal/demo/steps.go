package demo

// This file is the workflow of the demo's steps scenario
// (docs/state-machines.md §3): order-5 is put up for sale on a marketplace
// through a pool of browsers, one of which is broken and is switched away
// from; a critic sends the first photo back; and a captcha waits for a
// person, whom the demo plays.

import (
	"context"
	"fmt"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// ListingID is the steps scenario's workflow; CaptchaAnswer the captcha's answer.
const (
	ListingID     = "order-5"
	CaptchaAnswer = "7"
	// photoCritic names the critic of the photos.
	photoCritic = "photo-critic"
)

// Browsers are the demo's resource pool: two browsers in the EU with a
// marketplace session each, the first one broken.
var Browsers = []engine.AddResource{
	{ID: "browser-1", Capabilities: []string{"browser"}, Labels: map[string]string{"region": "eu"}, Capacity: 1},
	{ID: "browser-2", Capabilities: []string{"browser"}, Labels: map[string]string{"region": "eu"}, Capacity: 1},
}

// ListingWorkflow photographs the item (a critic judges each photo), puts
// it up for sale in a browser of the pool, and confirms the listing behind
// a captcha that a person solves.
func ListingWorkflow(ctx workflow.Context, o Order) (string, error) {
	retry := &workflow.RetryPolicy{InitialInterval: 20 * time.Millisecond, MaximumAttempts: 4}
	pctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 5 * time.Second,
		Critic: photoCritic, RetryPolicy: retry})
	var photo string
	if err := workflow.ExecuteActivity(pctx, acts.PhotographItem, o).Get(ctx, &photo); err != nil {
		return "", err
	}
	bctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 5 * time.Second,
		RequiredCapabilities: []string{"browser"}, LabelSelector: map[string]string{"region": "eu"}, RetryPolicy: retry})
	var listing string
	if err := workflow.ExecuteActivity(bctx, acts.PublishListing, o, photo).Get(ctx, &listing); err != nil {
		return "", err
	}
	cctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 5 * time.Second,
		NeedsUserTimeout: time.Minute, RetryPolicy: retry})
	var confirmed string
	if err := workflow.ExecuteActivity(cctx, acts.SolveCaptcha, o, listing).Get(ctx, &confirmed); err != nil {
		return "", err
	}
	return fmt.Sprintf("listed %s as %s with %s, %s", o.Item, listing, photo, confirmed), nil
}

// PhotographItem takes a photo; each try's is sharper than the last.
func (s *Shop) PhotographItem(ctx context.Context, o Order) (string, error) {
	info, _ := s.st.count(ctx, o)
	p := fmt.Sprintf("photo-%d", info.Attempt)
	s.say(info, o, "ok: %s taken", p)
	return p, nil
}

// PublishListing puts the item up for sale in the browser its step
// holds; browser-1 has crashed.
func (s *Shop) PublishListing(ctx context.Context, o Order, photo string) (string, error) {
	info, _ := s.st.count(ctx, o)
	if info.Resource == "browser-1" {
		s.say(info, o, "FAILED on %s: the browser crashed (a resource error: switch)", info.Resource)
		return "", activity.NewResourceError("%s crashed", info.Resource)
	}
	l := "LST-" + o.ID[len(o.ID)-1:] + "-" + info.ResourceLabels["region"]
	s.say(info, o, "ok on %s: %s", info.Resource, l)
	return l, nil
}

// SolveCaptcha confirms the listing: the marketplace shows a captcha only
// a person can read, so the first try asks, and the next one has the
// answer.
func (s *Shop) SolveCaptcha(ctx context.Context, o Order, listing string) (string, error) {
	info, _ := s.st.count(ctx, o)
	if info.Answer == nil {
		s.say(info, o, "needs a person: the marketplace shows a captcha")
		return "", activity.NewNeedsUserError("captcha for " + listing + ": what is 3+4?")
	}
	if string(info.Answer) != CaptchaAnswer {
		return "", workflow.NewApplicationError("wrong captcha answer "+string(info.Answer), "WrongAnswer", true)
	}
	s.say(info, o, "ok: answered %q, listing confirmed", info.Answer)
	return "captcha solved", nil
}

// judgePhoto is the photo critic: the first photo is blurry.
func (s *ShopState) judgePhoto(_ context.Context, in worker.CriticInput) (worker.Verdict, error) {
	var photo string
	if err := in.Result.Get(&photo); err != nil || in.Err != nil {
		return worker.Verdict{Decision: worker.Retry, Reason: "no photo"}, nil
	}
	if photo == "photo-1" {
		s.say(ListingID, "%-17s critic: %s is blurry -> retry", "photo-critic", photo)
		return worker.Verdict{Decision: worker.Retry, Reason: photo + " is blurry"}, nil
	}
	s.say(ListingID, "%-17s critic: %s is sharp -> accept", "photo-critic", photo)
	return worker.Verdict{Decision: worker.Accept}, nil
}

// registerSteps registers the scenario's workflow, activities and critic.
func (s *Shop) registerSteps(w worker.Worker) {
	w.RegisterWorkflow(ListingWorkflow)
	w.RegisterActivity(s.PhotographItem)
	w.RegisterActivity(s.PublishListing)
	w.RegisterActivity(s.SolveCaptcha)
	w.RegisterCritic(photoCritic, s.st.judgePhoto)
}

// ListingOrder is what order-5 sells.
var ListingOrder = Order{ID: ListingID, Item: "warping-board", Qty: 1, Amount: 8900}
