// Command review runs two review tasks as a DAG: a spec, approved
// automatically once its reviewer approves it, then the code, which may not
// start before the spec succeeds. The reviewer sends the first code run to
// INTERVENTION_REQUIRED with a recommendation; a steward resubmits it with
// feedback, the work is redone with both, reviewed again and approved by the
// steward. The program checks the outputs, the runs and the manifest, and
// exits 1 if they are wrong.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Write does a task's work. A rework sees the reviewer's recommendations
// and the steward's feedback; it reports what it cost.
func Write(ctx context.Context, what string) (string, error) {
	info, _ := activity.GetReviewInfo(ctx)
	activity.ReportCost(ctx, 1.5)
	out := what + " v" + fmt.Sprint(info.Run)
	if len(info.Recommendations) > 0 {
		out += " (" + strings.Join(info.Recommendations, ", ") + "; " + info.Feedback + ")"
	}
	return out, nil
}

// Feature issues both tasks at once: DependsOn holds the code back in the
// engine until the spec succeeds.
func Feature(ctx workflow.Context) (string, error) {
	spec := workflow.ExecuteReview(ctx, workflow.ReviewOptions{Job: "feature-7", Phase: "spec",
		AutoReview: true, AutoApprove: true, JobDescription: "a small feature, reviewed"}, Write, "spec")
	code := workflow.ExecuteReview(ctx, workflow.ReviewOptions{Job: "feature-7", Phase: "code", DependsOn: []string{"spec"},
		AutoReview: true}, Write, "code")
	var s, c string
	if err := spec.Get(ctx, &s); err != nil {
		return "", err
	}
	if err := code.Get(ctx, &c); err != nil {
		return "", err
	}
	return s + " / " + c, nil
}

// review approves a spec, and code on its second run only.
func review(_ context.Context, r worker.ReviewRequest) (worker.ReviewResult, error) {
	var out string
	if err := converter.Decode(r.Output, &out); err != nil {
		return worker.ReviewResult{}, err
	}
	if r.Phase == "code" && r.Run == 1 {
		return worker.ReviewResult{Summary: "no tests", Recommendations: []string{"add tests"}}, nil
	}
	return worker.ReviewResult{Approve: true, Summary: "fine: " + out}, nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "review:", err)
		os.Exit(1)
	}
}

func run() (err error) {
	e, err := embedded.Open(embedded.Config{InMemory: true})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, e.Close()) }()
	w := worker.New(client.New(e), "features", worker.Options{LeaseTTL: 5 * time.Second})
	w.RegisterWorkflow(Feature)
	w.RegisterActivity(Write)
	w.RegisterReviewer("any", review)
	if err := w.Start(); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, w.Shutdown(context.Background())) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wf, err := client.New(e).ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "feature-7", TaskQueue: "features"}, Feature)
	if err != nil {
		return err
	}
	// The steward: wait for each state a person must act in, and act.
	code := engine.ReviewTarget{Job: "feature-7", Phase: "code"}
	steps := []struct {
		state engine.ReviewState
		op    engine.ReviewOp
		why   string
	}{
		{engine.ReviewInterventionRequired, engine.ReviewOpResubmit, "tests first, please"},
		{engine.ReviewApprovalRequired, engine.ReviewOpApprove, ""},
	}
	for _, s := range steps {
		for {
			changed := e.Committed()
			t, err := e.DescribeReview(ctx, code)
			if err == nil && t.State == s.state {
				fmt.Printf("code is %s after run %d: %s\n", t.State, t.Runs, t.Assessment.Summary)
				break
			}
			if err != nil && !errors.Is(err, engine.ErrUnknownReview) {
				return err
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return fmt.Errorf("waiting for code to be %s: %w", s.state, ctx.Err())
			}
		}
		res, err := e.ReviewCommand(ctx, engine.ReviewCommand{ReviewTarget: code, Op: s.op, By: "steward", Reason: s.why})
		if err != nil {
			return err
		}
		fmt.Printf("steward: %s → %s\n", s.op, res.State)
	}
	var got string
	if err := wf.Get(ctx, &got); err != nil {
		return err
	}
	fmt.Println("result:", got)
	if want := "spec v1 / code v2 (add tests; tests first, please)"; got != want {
		return fmt.Errorf("result %q, want %q", got, want)
	}
	m, err := e.ReviewManifest(ctx, "feature-7")
	if err != nil {
		return err
	}
	if m.Status != engine.ReviewSuccess || m.Metrics.CumulativeCost != 4.5 || len(m.History) != 2 {
		return fmt.Errorf("manifest %+v: want SUCCESS, cost 4.5 (three runs), two phases", m)
	}
	fmt.Printf("feature-7 %s: cost %g over 3 runs, phases %s %s, %s %s\n", m.Status, m.Metrics.CumulativeCost,
		m.History[0].Phase, m.History[0].Status, m.History[1].Phase, m.History[1].Status)
	return nil
}
