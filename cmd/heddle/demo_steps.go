package main

// This file is the demo's steps scenario (docs/state-machines.md §3): order-5
// is put up for sale on a marketplace through a pool of browsers, one of
// which is broken and is switched away from; a critic sends the first photo
// back; and a captcha waits for a person, whom the demo plays.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// listingID is the steps scenario's workflow; the captcha's answer.
const (
	listingID     = "order-5"
	captchaAnswer = "7"
	// photoCritic names the critic of the photos.
	photoCritic = "photo-critic"
)

// browsers are the demo's resource pool: two browsers in the EU with a
// marketplace session each, the first one broken.
var browsers = []engine.AddResource{
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
	if string(info.Answer) != captchaAnswer {
		return "", workflow.NewApplicationError("wrong captcha answer "+string(info.Answer), "WrongAnswer", true)
	}
	s.say(info, o, "ok: answered %q, listing confirmed", info.Answer)
	return "captcha solved", nil
}

// judgePhoto is the photo critic: the first photo is blurry.
func (d *demo) judgePhoto(_ context.Context, in worker.CriticInput) (worker.Verdict, error) {
	var photo string
	if err := in.Result.Get(&photo); err != nil || in.Err != nil {
		return worker.Verdict{Decision: worker.Retry, Reason: "no photo"}, nil
	}
	if photo == "photo-1" {
		d.rep.order(listingID, "%-17s critic: %s is blurry -> retry", "photo-critic", photo)
		return worker.Verdict{Decision: worker.Retry, Reason: photo + " is blurry"}, nil
	}
	d.rep.order(listingID, "%-17s critic: %s is sharp -> accept", "photo-critic", photo)
	return worker.Verdict{Decision: worker.Accept}, nil
}

// registerSteps registers the scenario's workflow, activities and critic.
func (d *demo) registerSteps(w worker.Worker, s *Shop) {
	w.RegisterWorkflow(ListingWorkflow)
	w.RegisterActivity(s.PhotographItem)
	w.RegisterActivity(s.PublishListing)
	w.RegisterActivity(s.SolveCaptcha)
	w.RegisterCritic(photoCritic, d.judgePhoto)
}

// listingOrder is what order-5 sells.
var listingOrder = Order{ID: listingID, Item: "warping-board", Qty: 1, Amount: 8900}

// startListing registers the browsers and starts order-5; its result is
// kept as the orders' are.
func (d *demo) startListing(ctx context.Context) (client.WorkflowRun, error) {
	for _, b := range browsers {
		if _, err := d.e.AddResource(ctx, b); err != nil {
			return nil, err
		}
	}
	d.rep.event("resource pool: browser-1 and browser-2 (capability browser, region=eu, one unit each)")
	run, err := d.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: listingID, TaskQueue: ordersQueue}, ListingWorkflow, listingOrder)
	if err != nil {
		return nil, err
	}
	d.rep.order(listingID, "started (run %s, queue %s): a critic, a broken browser, a captcha for a person", run.GetRunID(), ordersQueue)
	return run, nil
}

// answerCaptcha waits until order-5's captcha step needs a person (NEEDS_USER)
// and answers it, as "heddle step answer" would.
func (d *demo) answerCaptcha(ctx context.Context) {
	for {
		changed := d.e.Committed()
		steps, err := d.c.ListSteps(ctx, listingID, "")
		if err != nil {
			d.problem(err)
			return
		}
		j, err := d.c.DescribeWorkflow(ctx, listingID, "")
		if err != nil {
			d.problem(err)
			return
		}
		// The person is asked once the run waits for the answer, holding
		// no lease: nothing runs the step until then.
		if i := slices.IndexFunc(steps, func(s engine.StepInfo) bool { return s.State == engine.StepNeedsUser }); i >= 0 && j.Status == engine.StatusWaiting {
			d.rep.order(listingID, "step %s is NEEDS_USER, asking %s; the run is %s, holding no lease (lease owner %q)",
				steps[i].Step, steps[i].Question, j.Status, j.LeaseOwner)
			if err := sleep(ctx, d.cfg.Clock, approvalDelay); err != nil {
				d.problem(err)
				return
			}
			if _, err := d.c.AnswerStep(ctx, client.StepTarget{WorkflowID: listingID, Step: steps[i].Step}, []byte(captchaAnswer)); err != nil {
				d.problem(fmt.Errorf("answering %s: %w", listingID, err))
				return
			}
			d.rep.order(listingID, "bob answers step %s: %s", steps[i].Step, captchaAnswer)
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			d.problem(fmt.Errorf("waiting for %s to ask: %w", listingID, ctx.Err()))
			return
		}
	}
}

// checkSteps checks the scenario from order-5's steps and history.
func (d *demo) checkSteps(ctx context.Context, ok, fail func(string, ...any)) error {
	steps, err := d.c.ListSteps(ctx, listingID, "")
	if err != nil {
		return err
	}
	hist, err := d.c.GetWorkflowHistory(ctx, listingID, "")
	if err != nil {
		return err
	}
	var trail []string
	for _, ev := range hist {
		if engine.IsStepEvent(ev.Type) {
			s := fmt.Sprintf("%s:%s#%d", ev.Step, ev.Type, ev.StepAttempt)
			if ev.Resource != "" {
				s += "[" + ev.Resource + "]"
			}
			if ev.Decision != "" {
				s += "{" + string(ev.Decision) + "}"
			}
			trail = append(trail, s)
		}
	}
	d.rep.plain("      order-5 step events (step:event#attempt[resource]{decision}): %s", strings.Join(trail, " "))
	if len(steps) != 3 {
		fail("order-5 has %d steps, want 3", len(steps))
		return nil
	}
	photo, publish, captcha := steps[0], steps[1], steps[2]
	if photo.State == engine.StepSucceeded && photo.Attempt == 2 && slices.Contains(trail, "1:activity_attempt_failed#1{retry}") &&
		slices.Contains(trail, "1:activity_completed#2{accept}") {
		ok("order-5 the critic sent photo-1 back (retry, recorded on the step) and accepted photo-2")
	} else {
		fail("order-5 photo step %+v", photo)
	}
	if publish.State == engine.StepSucceeded && slices.Equal(publish.Avoid, []string{"browser-1"}) &&
		slices.Contains(trail, "2:step_resource_failed#1[browser-1]") && slices.Contains(trail, "2:step_leased#2[browser-2]") {
		ok("order-5 browser-1 failed the listing and joined its avoid-list; SWITCHING_RESOURCE leased browser-2")
	} else {
		fail("order-5 listing step %+v", publish)
	}
	if captcha.State == engine.StepSucceeded && captcha.Attempt == 2 && slices.Contains(trail, "3:step_needs_user#1") &&
		slices.Contains(trail, "3:step_answered#2") {
		ok("order-5 the captcha step waited in NEEDS_USER, was answered, and ran again with the answer")
	} else {
		fail("order-5 captcha step %+v", captcha)
	}
	rs, err := d.e.Resources(ctx)
	if err != nil {
		return err
	}
	for _, r := range rs {
		if len(r.Holders) > 0 {
			fail("%s is still held by %+v", r.ID, r.Holders)
		}
	}
	return nil
}
