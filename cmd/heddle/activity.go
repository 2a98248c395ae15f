package main

// This file is "heddle activity": the operations on the activities of a
// run, in Temporal's shapes and flag names (temporal activity pause,
// unpause, reset, update-options). An activity is named by its id (the
// step "heddle step list" shows, activity.GetInfo(ctx).ActivityID), by
// its type (every pending one of it), or all of a run's
// (docs/state-machines.md §6). Like "heddle workflow" it talks to the
// HTTP API only.

import (
	"fmt"
	"strings"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/spf13/cobra"
)

func newActivityCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "activity",
		Short: "pause, unpause, reset or change the options of a run's activities",
		Long: "Operates on the pending activities of a run through the HTTP API, as Temporal's\n" +
			"\"temporal activity\" does: pause one that keeps failing, unpause it, reset its\n" +
			"attempts and retry delay, or change its timeouts and retry policy.\n\n" +
			"The run is an ID argument (a workflow id, or a numeric job id) or\n" +
			"-w/--workflow-id and -r/--run-id. The activities are -a/--activity-id (the step\n" +
			"\"heddle step list\" shows), --activity-type (every pending one of that type), or\n" +
			"--match-all (every pending one).",
		Args: unknownCommandArgs,
		RunE: missingCommand,
	}
	g := addAPIFlags(cmd)
	cmd.AddCommand(newActivityPauseCommand(g), newActivityUnpauseCommand(g), newActivityResetCommand(g), newActivityOptionsCommand(g))
	return cmd
}

// activityFlags name the run and its activities.
type activityFlags struct {
	target                 *wfTargetFlags
	activityID, activityTy string
	matchAll               bool
	reason, requestID      string
}

func addActivityFlags(cmd *cobra.Command, matchAll bool) *activityFlags {
	f := &activityFlags{target: addTargetFlags(cmd.Flags())}
	fs := cmd.Flags()
	fs.StringVarP(&f.activityID, "activity-id", "a", "", "the activity `id` (its step, as \"heddle step list\" shows it)")
	fs.StringVar(&f.activityTy, "activity-type", "", "every pending activity of this `type`")
	if matchAll {
		fs.BoolVar(&f.matchAll, "match-all", false, "every pending activity of the run")
	}
	fs.StringVar(&f.reason, "reason", "", "why, recorded in the run's history")
	fs.StringVar(&f.requestID, "request-id", "", "an `id` that makes the command idempotent: sent again, it changes nothing more")
	return f
}

// selector checks that exactly one way names the activities.
func (f *activityFlags) selector() (engine.ActivitySelector, error) {
	n := 0
	for _, set := range []bool{f.activityID != "", f.activityTy != "", f.matchAll} {
		if set {
			n++
		}
	}
	if n != 1 {
		return engine.ActivitySelector{}, usagef("name the activities with one of -a/--activity-id, --activity-type and --match-all")
	}
	return engine.ActivitySelector{ActivityID: f.activityID, ActivityType: f.activityTy, MatchAll: f.matchAll}, nil
}

// activityOutput is the JSON document of every activity command.
type activityOutput struct {
	WorkflowID string   `json:"workflow_id"`
	JobID      uint64   `json:"job_id"`
	Activities []string `json:"activities"`
	// Seq is the seq of the last event the command appended to the run;
	// 0 when every activity already was as asked.
	Seq uint64 `json:"seq,omitempty"`
}

// run resolves the run and the activities, sends the command do builds,
// and prints what it did ("Paused" …).
func (f *activityFlags) run(g *wfGlobals, done string, do func(c *wfCall, svc engine.Service, t engine.Target, sel engine.ActivitySelector, h engine.Header) (*engine.ActivityResult, error)) func(*cobra.Command, []string) error {
	return g.runE(func(c *wfCall, args []string) error {
		id, _, err := f.target.args(args)
		if err != nil {
			return err
		}
		sel, err := f.selector()
		if err != nil {
			return err
		}
		svc, err := c.client()
		if err != nil {
			return err
		}
		t, j, err := f.target.resolve(c.ctx, svc, id)
		if err != nil {
			return err
		}
		res, err := do(c, svc, t, sel, engine.Header{RequestID: f.requestID})
		if err != nil {
			return err
		}
		out := activityOutput{WorkflowID: wfWorkflowOf(t, j), JobID: uint64(res.Job), Activities: res.Steps, Seq: res.Seq}
		if out.Activities == nil {
			out.Activities = []string{}
		}
		if !c.table() {
			return c.doc(out)
		}
		what := "activity " + strings.Join(out.Activities, ", ")
		if len(out.Activities) > 1 {
			what = "activities " + strings.Join(out.Activities, ", ")
		}
		if out.Seq == 0 {
			_, err = fmt.Fprintf(c.out, "Workflow %s (job %d): %s already %s; nothing changed.\n", wfCell(out.WorkflowID), out.JobID, what, strings.ToLower(done))
			return err
		}
		_, err = fmt.Fprintf(c.out, "%s %s of workflow %s (job %d), through event %d.\n", done, what, wfCell(out.WorkflowID), out.JobID, out.Seq)
		return err
	})
}

func newActivityPauseCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pause {ID | -w WORKFLOW-ID} {-a ACTIVITY-ID | --activity-type TYPE} [--reason TEXT]",
		Short: "pause an activity: no try of it starts until it is unpaused",
		Long: "Pauses activities of a run (Temporal's activity pause). A paused activity is not\n" +
			"tried again until it is unpaused or reset; a try that runs when it is paused runs\n" +
			"until it completes, fails or times out, and a failure then waits for the unpause.\n" +
			"Its timeouts keep running: extend them first with update-options before a long\n" +
			"pause. The run waits meanwhile, taking no lease.",
		Args: cobra.ArbitraryArgs,
	}
	f := addActivityFlags(cmd, false)
	cmd.RunE = f.run(g, "Paused", func(c *wfCall, svc engine.Service, t engine.Target, sel engine.ActivitySelector, h engine.Header) (*engine.ActivityResult, error) {
		return svc.PauseActivity(c.ctx, engine.PauseActivity{Header: h, Target: t, ActivitySelector: sel, Reason: f.reason})
	})
	return cmd
}

func newActivityUnpauseCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "unpause {ID | -w WORKFLOW-ID} {-a ACTIVITY-ID | --activity-type TYPE | --match-all} [--reset-attempts]",
		Short: "unpause an activity: it is tried again, at once if its retry delay passed",
		Long: "Unpauses activities of a run (Temporal's activity unpause). One whose retry delay\n" +
			"passed while it was paused is tried at once; one still in its delay waits for the\n" +
			"rest of it. --reset-attempts also starts its attempts over, as reset does.",
		Args: cobra.ArbitraryArgs,
	}
	f := addActivityFlags(cmd, true)
	var resetAttempts bool
	cmd.Flags().BoolVar(&resetAttempts, "reset-attempts", false, "start the activity's attempts over from 1 too")
	cmd.RunE = f.run(g, "Unpaused", func(c *wfCall, svc engine.Service, t engine.Target, sel engine.ActivitySelector, h engine.Header) (*engine.ActivityResult, error) {
		return svc.UnpauseActivity(c.ctx, engine.UnpauseActivity{Header: h, Target: t, ActivitySelector: sel, Reason: f.reason, ResetAttempts: resetAttempts})
	})
	return cmd
}

func newActivityResetCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reset {ID | -w WORKFLOW-ID} {-a ACTIVITY-ID | --activity-type TYPE | --match-all} [--keep-paused]",
		Short: "reset an activity: attempts from 1 again, its next try at once",
		Long: "Resets activities of a run (Temporal's activity reset): the retry policy counts\n" +
			"their tries from 1 again, the heartbeat details of earlier tries are dropped, and\n" +
			"one waiting out a retry delay is tried at once. A try that runs when it is reset\n" +
			"finishes first. A paused activity is unpaused, unless --keep-paused.\n" +
			"--restore-original-options also drops the options update-options gave it.",
		Args: cobra.ArbitraryArgs,
	}
	f := addActivityFlags(cmd, true)
	var keepPaused, restore bool
	cmd.Flags().BoolVar(&keepPaused, "keep-paused", false, "if the activity is paused, it stays paused")
	cmd.Flags().BoolVar(&restore, "restore-original-options", false, "go back to the options the workflow gave the activity")
	cmd.RunE = f.run(g, "Reset", func(c *wfCall, svc engine.Service, t engine.Target, sel engine.ActivitySelector, h engine.Header) (*engine.ActivityResult, error) {
		return svc.ResetActivity(c.ctx, engine.ResetActivity{Header: h, Target: t, ActivitySelector: sel, Reason: f.reason,
			KeepPaused: keepPaused, RestoreOriginalOptions: restore})
	})
	return cmd
}

func newActivityOptionsCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "update-options {ID | -w WORKFLOW-ID} {-a ACTIVITY-ID | --activity-type TYPE | --match-all} [OPTIONS]",
		Short: "change a pending activity's timeouts and retry policy",
		Long: "Changes the options of activities of a run while they are pending (Temporal's\n" +
			"activity update-options). Updates are incremental: only the options given change.\n" +
			"They apply from the next try (a try that runs keeps its own timeouts); follow with\n" +
			"reset to try at once. --restore-original-options goes back to the options the\n" +
			"workflow gave. For an activity on another task queue, a new\n" +
			"--schedule-to-close-timeout also moves its deadline, counted from its scheduling.",
		Args: cobra.ArbitraryArgs,
	}
	f := addActivityFlags(cmd, true)
	var (
		scheduleToClose, scheduleToStart, startToClose, heartbeat time.Duration
		retryInitial, retryMax                                    time.Duration
		retryCoefficient                                          float64
		retryAttempts                                             int32
		restore                                                   bool
	)
	fs := cmd.Flags()
	fs.DurationVar(&scheduleToClose, "schedule-to-close-timeout", 0, "bound on all tries together, from the activity's scheduling")
	fs.DurationVar(&scheduleToStart, "schedule-to-start-timeout", 0, "bound on the wait for a worker to take the activity")
	fs.DurationVar(&startToClose, "start-to-close-timeout", 0, "bound on one try")
	fs.DurationVar(&heartbeat, "heartbeat-timeout", 0, "most time between the heartbeats of a try")
	fs.DurationVar(&retryInitial, "retry-initial-interval", 0, "delay before the first retry")
	fs.DurationVar(&retryMax, "retry-maximum-interval", 0, "cap on the delay between retries")
	fs.Float64Var(&retryCoefficient, "retry-backoff-coefficient", 0, "how much each retry delay grows (at least 1)")
	fs.Int32Var(&retryAttempts, "retry-maximum-attempts", 0, "most tries (1: no retries)")
	fs.BoolVar(&restore, "restore-original-options", false, "go back to the options the workflow gave the activity")
	cmd.RunE = f.run(g, "Updated the options of", func(c *wfCall, svc engine.Service, t engine.Target, sel engine.ActivitySelector, h engine.Header) (*engine.ActivityResult, error) {
		for _, d := range []struct {
			name string
			v    time.Duration
		}{{"schedule-to-close-timeout", scheduleToClose}, {"schedule-to-start-timeout", scheduleToStart}, {"start-to-close-timeout", startToClose},
			{"heartbeat-timeout", heartbeat}, {"retry-initial-interval", retryInitial}, {"retry-maximum-interval", retryMax}} {
			if d.v < 0 {
				return nil, usagef("--%s %v is negative", d.name, d.v)
			}
		}
		if retryAttempts < 0 {
			return nil, usagef("--retry-maximum-attempts %d is negative", retryAttempts)
		}
		if retryCoefficient != 0 && retryCoefficient < 1 {
			return nil, usagef("--retry-backoff-coefficient %v is below 1", retryCoefficient)
		}
		var p *temporal.RetryPolicy
		if retryInitial != 0 || retryMax != 0 || retryCoefficient != 0 || retryAttempts != 0 {
			p = &temporal.RetryPolicy{InitialInterval: retryInitial, MaximumInterval: retryMax, BackoffCoefficient: retryCoefficient, MaximumAttempts: retryAttempts}
		}
		opts := client.ActivityOptionsOf(scheduleToClose, scheduleToStart, startToClose, heartbeat, p)
		switch {
		case restore && !opts.IsZero():
			return nil, usagef("--restore-original-options goes back to the workflow's options: give no other option with it")
		case !restore && opts.IsZero():
			return nil, usagef("give an option to change (such as --start-to-close-timeout 5m), or --restore-original-options")
		}
		return svc.UpdateActivityOptions(c.ctx, engine.UpdateActivityOptions{Header: h, Target: t, ActivitySelector: sel, Options: opts, RestoreOriginal: restore})
	})
	return cmd
}
