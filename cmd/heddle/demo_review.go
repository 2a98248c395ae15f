package main

// This file is "heddle demo review": a DAG of review tasks (requirements,
// then implementation, then tests) run by a workflow, each task's output
// judged by a reviewer and approved by a steward; the steward rejects the
// implementation once with feedback, the work is redone with it, and only
// the approval lets the tests start. The workflow, its agent and its
// reviewer are in internal/demo/review.go; this file plays the steward.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/heddlewf/heddle/cmd/heddle/internal/demo"
	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/converter"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/spf13/cobra"
)

// withReviewDemo makes "heddle demo review" an argument of the demo command:
// its usage, its arguments and a paragraph of its help.
func withReviewDemo(cmd *cobra.Command) {
	cmd.Use = "demo [review] [--dir DIR] [--timeline ID]"
	cmd.Args = demoArgs
	cmd.Long += "\n\n\"heddle demo review\" runs review tasks instead: a DAG (requirements, then\n" +
		"implementation, then tests) whose tasks each pass a reviewer and a steward's\n" +
		"approval; the implementation is rejected once with feedback, reworked, approved,\n" +
		"and the tests start. It prints each step and the job's manifest."
}

// demoArgs takes no argument, or the one scenario "review".
func demoArgs(_ *cobra.Command, args []string) error {
	switch {
	case len(args) == 0, len(args) == 1 && args[0] == "review":
		return nil
	case len(args) == 1:
		return usagef("unexpected argument %q (the one argument demo takes is \"review\")", args[0])
	}
	return usagef("unexpected argument %q", args[1])
}

func runReviewDemo(ctx context.Context, dir string, out io.Writer) (err error) {
	dir, cleanup, err := demoDir(dir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, cleanup()) }()
	e, err := embedded.Open(embedded.Config{Dir: dir})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, e.Close()) }()
	w := worker.New(client.New(e), "review-demo", worker.Options{LeaseTTL: 5 * time.Second})
	demo.RegisterReview(w)
	if err := w.Start(); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, w.Shutdown(context.Background())) }()

	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// The story is best effort: a closed stdout does not stop the demo,
	// whose outcome is its error.
	say := func(format string, a ...any) { _, _ = fmt.Fprintf(out, format+"\n", a...) }
	say("heddle review demo: job %s, database %s", demo.ReviewJob, dir)
	run, err := client.New(e).ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "review-pipeline", TaskQueue: "review-demo"}, demo.ReviewPipeline)
	if err != nil {
		return err
	}
	say("started workflow review-pipeline: requirements → implementation → tests, each gated by review and approval")
	wait := func(phase string, s engine.ReviewState) (*engine.Review, error) {
		for {
			changed := e.Committed()
			t, err := e.DescribeReview(ctx, engine.ReviewTarget{Job: demo.ReviewJob, Phase: phase})
			if err == nil && t.State == s {
				return t, nil
			}
			if err != nil && !errors.Is(err, engine.ErrUnknownReview) {
				return nil, err
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return nil, fmt.Errorf("waiting for %s to be %s: %w", phase, s, ctx.Err())
			}
		}
	}
	decide := func(phase string, op engine.ReviewOp, reason string) error {
		res, err := e.ReviewCommand(ctx, engine.ReviewCommand{ReviewTarget: engine.ReviewTarget{Job: demo.ReviewJob, Phase: phase},
			Op: op, By: "steward", Reason: reason})
		if err != nil {
			return err
		}
		note := ""
		if reason != "" {
			note = fmt.Sprintf(" with feedback %q", reason)
		}
		say("  steward: %s %s%s → %s", op, phase, note, res.State)
		return nil
	}
	// An illegal command is refused with the state and what is legal.
	if t, err := wait("implementation", engine.ReviewPending); err != nil {
		return err
	} else if _, err := e.ReviewCommand(ctx, engine.ReviewCommand{ReviewTarget: engine.ReviewTarget{ID: t.ID}, Op: engine.ReviewOpApprove, By: "steward"}); err != nil {
		var se *engine.ReviewStateError
		if !errors.As(err, &se) {
			return err
		}
		say("  steward: approve implementation too early → refused: it is %s; legal now: %v", se.State, se.Legal)
	}
	for _, phase := range []string{"requirements", "implementation", "tests"} {
		t, err := wait(phase, engine.ReviewApprovalRequired)
		if err != nil {
			return err
		}
		say("%s: run %d, output %s, reviewed: %s", phase, t.Runs, outputText(t.Output), t.Assessment.Summary)
		if phase == "implementation" && t.Runs == 1 {
			if err := decide(phase, engine.ReviewOpReject, "also accept internationalised domains"); err != nil {
				return err
			}
			if t, err = wait(phase, engine.ReviewApprovalRequired); err != nil {
				return err
			}
			say("%s: rework, run %d, output %s", phase, t.Runs, outputText(t.Output))
		}
		if err := decide(phase, engine.ReviewOpApprove, ""); err != nil {
			return err
		}
		if next := map[string]string{"requirements": "implementation", "implementation": "tests"}[phase]; next != "" {
			started := time.Now()
			for {
				changed := e.Committed()
				t, err := e.DescribeReview(ctx, engine.ReviewTarget{Job: demo.ReviewJob, Phase: next})
				if err != nil {
					return err
				}
				if t.Runs > 0 {
					say("  %s started after the approval (%s, %v later)", next, t.State, time.Since(started).Round(time.Millisecond))
					break
				}
				select {
				case <-changed:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
	}
	var results []string
	if err := run.Get(ctx, &results); err != nil {
		return err
	}
	say("workflow result: %s", strings.Join(results, " | "))
	m, err := e.ReviewManifest(ctx, demo.ReviewJob)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	say("manifest (heddle task describe %s -o json):\n%s", demo.ReviewJob, b)
	if m.Status != engine.ReviewSuccess || len(m.History) != 3 {
		return fmt.Errorf("the job ended %s with %d phases, want SUCCESS with 3", m.Status, len(m.History))
	}
	return nil
}

// outputText decodes a task's output (the work's encoded result) for printing.
func outputText(b []byte) string {
	var s string
	if converter.Decode(b, &s) != nil {
		return string(b)
	}
	return fmt.Sprintf("%q", s)
}
