package main

// This file is the demo's steps scenario (docs/state-machines.md §3): order-5
// is put up for sale on a marketplace through a pool of browsers, one of
// which is broken and is switched away from; a critic sends the first photo
// back; and a captcha waits for a person, whom the demo plays. Its workflow,
// activities and critic are in internal/demo/steps.go; this file registers
// the browsers, starts order-5, answers the captcha and checks the story.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/heddlewf/heddle/cmd/heddle/internal/demo"
	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/client"
)

// startListing registers the browsers and starts order-5; its result is
// kept as the orders' are.
func (d *demoRun) startListing(ctx context.Context) (client.WorkflowRun, error) {
	for _, b := range demo.Browsers {
		if _, err := d.e.AddResource(ctx, b); err != nil {
			return nil, err
		}
	}
	d.rep.event("resource pool: browser-1 and browser-2 (capability browser, region=eu, one unit each)")
	run, err := d.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: demo.ListingID, TaskQueue: ordersQueue}, demo.ListingWorkflow, demo.ListingOrder)
	if err != nil {
		return nil, err
	}
	d.rep.order(demo.ListingID, "started (run %s, queue %s): a critic, a broken browser, a captcha for a person", run.GetRunID(), ordersQueue)
	return run, nil
}

// answerCaptcha waits until order-5's captcha step needs a person (NEEDS_USER)
// and answers it, as "heddle step answer" would.
func (d *demoRun) answerCaptcha(ctx context.Context) {
	for {
		changed := d.e.Committed()
		steps, err := d.c.ListSteps(ctx, demo.ListingID, "")
		if err != nil {
			d.problem(err)
			return
		}
		j, err := d.c.DescribeWorkflow(ctx, demo.ListingID, "")
		if err != nil {
			d.problem(err)
			return
		}
		// The person is asked once the run waits for the answer, holding
		// no lease: nothing runs the step until then.
		if i := slices.IndexFunc(steps, func(s engine.StepInfo) bool { return s.State == engine.StepNeedsUser }); i >= 0 && j.Status == engine.StatusWaiting {
			d.rep.order(demo.ListingID, "step %s is NEEDS_USER, asking %s; the run is %s, holding no lease (lease owner %q)",
				steps[i].Step, steps[i].Question, j.Status, j.LeaseOwner)
			if err := sleep(ctx, d.cfg.Clock, approvalDelay); err != nil {
				d.problem(err)
				return
			}
			if _, err := d.c.AnswerStep(ctx, client.StepTarget{WorkflowID: demo.ListingID, Step: steps[i].Step}, []byte(demo.CaptchaAnswer)); err != nil {
				d.problem(fmt.Errorf("answering %s: %w", demo.ListingID, err))
				return
			}
			d.rep.order(demo.ListingID, "bob answers step %s: %s", steps[i].Step, demo.CaptchaAnswer)
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			d.problem(fmt.Errorf("waiting for %s to ask: %w", demo.ListingID, ctx.Err()))
			return
		}
	}
}

// checkSteps checks the scenario from order-5's steps and history.
func (d *demoRun) checkSteps(ctx context.Context, ok, fail func(string, ...any)) error {
	steps, err := d.c.ListSteps(ctx, demo.ListingID, "")
	if err != nil {
		return err
	}
	hist, err := d.c.GetWorkflowHistory(ctx, demo.ListingID, "")
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
