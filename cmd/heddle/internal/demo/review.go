package demo

// This file is the workflow of "heddle demo review": a DAG of review tasks
// (requirements, then implementation, then tests), each task's work done by
// an agent and its output judged by a reviewer before a steward, whom the
// demo plays, approves or rejects it.

import (
	"context"
	"fmt"

	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// ReviewJob is the review demo's job id (the manifest's job_id); Reviewer
// names the reviewer that judges each task's output.
const (
	ReviewJob = "email-validation"
	Reviewer  = "critic"
)

// ReviewAgent does a phase's work: what an agent would produce, with the
// feedback of a rejection taken into account, and the cost it reports.
func ReviewAgent(ctx context.Context, phase string) (string, error) {
	info, _ := activity.GetReviewInfo(ctx)
	activity.ReportCost(ctx, map[string]float64{"requirements": 5, "implementation": 12, "tests": 5}[phase])
	out := map[string]string{
		"requirements":   "rules: local@domain, RFC 5322 subset",
		"implementation": "func Valid(addr string) bool { ... }",
		"tests":          "42 cases, all passing",
	}[phase]
	if info.Feedback != "" {
		out += " + " + info.Feedback
	}
	activity.ReportSummary(ctx, fmt.Sprintf("run %d of %s", info.Run, phase))
	return out, nil
}

// ReviewPipeline issues the three tasks at once; the engine holds each
// until the one it depends on succeeds.
func ReviewPipeline(ctx workflow.Context) ([]string, error) {
	phases := []struct{ name, dep string }{{"requirements", ""}, {"implementation", "requirements"}, {"tests", "implementation"}}
	var fs []workflow.Future
	for _, p := range phases {
		o := workflow.ReviewOptions{Job: ReviewJob, Phase: p.name, AutoReview: true, Reviewer: Reviewer,
			JobDescription: "Add e-mail validation, gated by review at each phase",
			Objective:      "produce the " + p.name}
		if p.dep != "" {
			o.DependsOn = []string{p.dep}
		}
		fs = append(fs, workflow.ExecuteReview(ctx, o, ReviewAgent, p.name))
	}
	out := make([]string, len(fs))
	for i, f := range fs {
		if err := f.Get(ctx, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Review is the reviewer: it approves every output, with a summary and a
// recommendation the manifest keeps.
func Review(_ context.Context, r worker.ReviewRequest) (worker.ReviewResult, error) {
	var s string
	// An output that is no string is shown empty: the review approves it all the same.
	_ = converter.Decode(r.Output, &s)
	return worker.ReviewResult{Approve: true, Summary: fmt.Sprintf("critic: %s looks right (%q)", r.Phase, s),
		Recommendations: []string{"keep the change small"}}, nil
}

// RegisterReview registers the review demo's workflow, agent and reviewer
// on w.
func RegisterReview(w worker.Worker) {
	w.RegisterWorkflow(ReviewPipeline)
	w.RegisterActivity(ReviewAgent)
	w.RegisterReviewer(Reviewer, Review)
}
