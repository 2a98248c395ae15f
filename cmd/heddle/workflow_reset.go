package main

// This file is "heddle workflow reset", Temporal's `temporal workflow
// reset`: a run starts again as a new run of its workflow id from a turn
// boundary of its history, with the signals and updates it received after
// that point, and the run it replaces ends. The point is an event id
// (-e/--event-id) or a reset type (-t/--type), which the engine resolves in
// the command itself, so it cannot move between a look and the reset.

import (
	"fmt"
	"strings"

	"github.com/heddlewf/heddle/engine"
	"github.com/spf13/cobra"
)

// wfResetOutput is the JSON document of reset.
type wfResetOutput struct {
	WorkflowID string `json:"workflow_id"`
	// JobID is the new run; BaseJobID the run reset, EventID the point in
	// its history.
	JobID     uint64 `json:"job_id"`
	BaseJobID uint64 `json:"base_job_id"`
	EventID   uint64 `json:"event_id"`
	// CopiedEvents is how many of the base run's events the new run holds,
	// Reapplied how many signals and updates it got again.
	CopiedEvents uint64 `json:"copied_events"`
	Reapplied    int    `json:"reapplied"`
	// Terminated are the open runs the reset ended.
	Terminated []uint64 `json:"terminated_job_ids"`
}

// resetTypes are the --type values, as Temporal's CLI names them.
var resetTypes = []string{"FirstWorkflowTask", "LastWorkflowTask"}

func newWFResetCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reset {ID | -w WORKFLOW-ID | -r RUN-ID | -q QUERY [--yes]} {-t TYPE | -e EVENT-ID} --reason TEXT",
		Short: "start a run again from a turn boundary of its history, as a new run",
		Long: "Resets a run (Temporal's workflow reset): a new run of its workflow id gets the\n" +
			"history up to a reset point, with the signals and updates the run received after\n" +
			"it, and its workflow code replays that history and goes on; activities scheduled\n" +
			"after the point run again. The run it replaces, if still open, ends as\n" +
			"Terminated; a closed one stays as it ended. Both link to the new run.\n\n" +
			"A reset point is a turn boundary: the run's job_created (its first turn) or a\n" +
			"job_waiting (the end of a turn at which the code blocked). --type FirstWorkflowTask\n" +
			"is the first; --type LastWorkflowTask the last the run completed; --event-id names\n" +
			"one (`heddle workflow history` shows them). A workflow id names its current run.\n\n" +
			wfBatchQueryHelp + " A batch reset takes -t/--type.",
		Args: cobra.ArbitraryArgs,
	}
	target := addTargetFlags(cmd.Flags())
	var (
		typ, reason, reapplyType string
		eventID                  uint64
		excludes                 []string
	)
	fs := cmd.Flags()
	fs.StringVarP(&typ, "type", "t", "", "the reset point by kind: FirstWorkflowTask or LastWorkflowTask")
	fs.Uint64VarP(&eventID, "event-id", "e", 0, "the reset point's event `id`: the run's job_created or a job_waiting")
	fs.StringVar(&reason, "reason", "", "why, recorded in the new run's history and on the end of the run it replaces (required)")
	fs.StringSliceVar(&excludes, "reapply-exclude", nil, "`kinds` of event received after the point not to reapply: Signal, Update or All (comma-separated)")
	fs.StringVar(&reapplyType, "reapply-type", "", "what to reapply, Temporal's older flag: All (the default), Signal or None; use --reapply-exclude")
	query := addQueryFlags(cmd, "reset")
	_ = cmd.RegisterFlagCompletionFunc("type", func(_ *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return completeWords(resetTypes, prefix), cobra.ShellCompDirectiveNoFileComp
	})
	cmd.RunE = g.runE(func(c *wfCall, args []string) error {
		if query.given(cmd) {
			if err := noTargetWithQuery(target, args); err != nil {
				return err
			}
			if eventID != 0 {
				return usagef("--event-id names a point of one run: with --query give -t/--type (%s)", strings.Join(resetTypes, ", "))
			}
		}
		var id string
		var err error
		if !query.given(cmd) {
			if id, _, err = target.args(args); err != nil {
				return err
			}
		}
		rc := engine.ResetJob{Reason: reason, Seq: eventID}
		switch {
		case typ == "" && eventID == 0:
			return usagef("give the reset point: -t/--type (%s) or -e/--event-id", strings.Join(resetTypes, ", "))
		case typ != "" && eventID != 0:
			return usagef("give -t/--type or -e/--event-id, not both")
		case strings.EqualFold(typ, "LastContinuedAsNew") || strings.EqualFold(typ, "BuildId"):
			return usagef("--type %s is Temporal's and heddle has no such reset type: name the run with -r and use --type LastWorkflowTask, or an --event-id", typ)
		case typ != "":
			if rc.Type, err = engine.ParseResetType(typ); err != nil || rc.Type == engine.ResetToEvent {
				return usagef("--type %q: want %s", typ, strings.Join(resetTypes, " or "))
			}
		}
		if strings.TrimSpace(reason) == "" {
			return usagef("--reason is required: say why, for whoever reads the history")
		}
		if rc.ExcludeSignals, rc.ExcludeUpdates, err = resetReapply(reapplyType, excludes); err != nil {
			return err
		}
		if query.given(cmd) {
			return query.start(c, engine.BatchSpec{Operation: engine.BatchReset, Reason: reason, ResetType: rc.Type,
				ExcludeSignals: rc.ExcludeSignals, ExcludeUpdates: rc.ExcludeUpdates})
		}
		svc, err := c.client()
		if err != nil {
			return err
		}
		t, j, err := target.resolve(c.ctx, svc, id)
		if err != nil {
			return err
		}
		rc.Target = t
		res, err := svc.Reset(c.ctx, rc)
		if err != nil {
			return err
		}
		out := wfResetOutput{WorkflowID: res.WorkflowID, JobID: uint64(res.Job), BaseJobID: uint64(res.BaseJob), EventID: res.Seq,
			CopiedEvents: res.CopiedEvents, Reapplied: res.Reapplied, Terminated: []uint64{}}
		for _, id := range res.Terminated {
			out.Terminated = append(out.Terminated, uint64(id))
		}
		if out.WorkflowID == "" {
			out.WorkflowID = wfWorkflowOf(t, j)
		}
		if !c.table() {
			return c.doc(out)
		}
		_, err = fmt.Fprintf(c.out, "Reset workflow %s: run %d goes on from event %d of run %d (%d events copied, %d signals and updates reapplied).\n",
			wfCell(out.WorkflowID), out.JobID, out.EventID, out.BaseJobID, out.CopiedEvents, out.Reapplied)
		if err == nil && len(out.Terminated) > 0 {
			_, err = fmt.Fprintf(c.out, "Terminated run %s, which the new run replaces.\n", joinIDs(out.Terminated))
		}
		return err
	})
	return cmd
}

// resetReapply reads --reapply-type and --reapply-exclude (Temporal's
// flags: the first is its older way, and the two do not go together) into
// what the new run leaves out.
func resetReapply(reapplyType string, excludes []string) (signals, updates bool, err error) {
	if reapplyType != "" && len(excludes) > 0 {
		return false, false, usagef("--reapply-type cannot be used with --reapply-exclude; use --reapply-exclude")
	}
	switch strings.ToLower(reapplyType) {
	case "", "all":
	case "signal":
		updates = true
	case "none":
		signals, updates = true, true
	default:
		return false, false, usagef("--reapply-type %q: want All, Signal or None", reapplyType)
	}
	for _, x := range excludes {
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "all":
			signals, updates = true, true
		case "signal":
			signals = true
		case "update":
			updates = true
		default:
			return false, false, usagef("--reapply-exclude %q: want Signal, Update or All", x)
		}
	}
	return signals, updates, nil
}

// joinIDs writes ids as "1, 2".
func joinIDs(ids []uint64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ", ")
}
