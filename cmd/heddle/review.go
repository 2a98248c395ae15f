package main

// This file is "heddle task", the steward's command for review tasks: it
// reads a job's manifest and gives the human commands (activate, config,
// suspend, resume, cancel, step, approve, reject, resubmit, fix, terminate)
// over the HTTP API, like "heddle workflow".

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/spf13/cobra"
)

func newReviewCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "task",
		Short: "read a job's review tasks and approve, reject or otherwise steer them",
		Long: "Manages review tasks through the HTTP API of a node or cluster: work whose output\n" +
			"must pass a review and an approval before the tasks that depend on it start.\n\n" +
			"A TASK argument is a numeric task id, or JOB/PHASE. A command that is not legal\n" +
			"in the task's state is refused, naming the state and the commands legal in it.\n" +
			"Each decision records who made it: --by, default $HEDDLE_USER, else $USER.",
		Args: unknownCommandArgs,
		RunE: missingCommand,
	}
	g := addAPIFlags(cmd)
	cmd.AddCommand(newReviewDescribeCommand(g), newReviewListCommand(g), newReviewHistoryCommand(g))
	for _, op := range engine.ReviewOps() {
		cmd.AddCommand(newReviewOpCommand(g, op))
	}
	return cmd
}

// parseReviewTarget reads a TASK argument: an id, or JOB/PHASE (the phase is
// what follows the last slash, so a job id may hold slashes).
func parseReviewTarget(s string) (engine.ReviewTarget, error) {
	if id, err := strconv.ParseUint(s, 10, 64); err == nil && id > 0 {
		return engine.ReviewTarget{ID: engine.ReviewID(id)}, nil
	}
	i := strings.LastIndex(s, "/")
	if i <= 0 || i == len(s)-1 {
		return engine.ReviewTarget{}, usagef("TASK %q is neither a task id nor JOB/PHASE", s)
	}
	return engine.ReviewTarget{Job: s[:i], Phase: s[i+1:]}, nil
}

func newReviewDescribeCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "describe JOB",
		Short: "print a job's manifest: status, current phase, cost, time and each phase's summary",
		Long: "Prints the manifest of JOB: its status (its current phase's), the current phase\n" +
			"(the first not yet approved), the cumulative cost its work reported and the time\n" +
			"it spent running and in review, and a history of its phases with their status and\n" +
			"latest summary. -o json prints the manifest document.",
		Args: exactArgs("JOB"),
	}
	cmd.RunE = g.runE(func(c *wfCall, args []string) error {
		svc, err := c.client()
		if err != nil {
			return err
		}
		m, err := svc.ReviewManifest(c.ctx, args[0])
		if err != nil {
			return err
		}
		if !c.table() {
			return c.doc(m)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "Job %s: %s\n", wfCell(m.JobID), wfCell(m.Description))
		fmt.Fprintf(&b, "Status %s, current phase %s; cost %g, time %.3fs\n", m.Status, wfCell(m.CurrentPhase),
			m.Metrics.CumulativeCost, m.Metrics.CumulativeTimeSeconds)
		for _, h := range m.History {
			by := ""
			if h.DecidedBy != "" {
				by = " (by " + wfCell(h.DecidedBy) + ")"
			}
			fmt.Fprintf(&b, "  %-4d %-24s %-22s %s%s\n", h.ReviewID, wfCell(h.Phase), h.Status, wfCell(h.Summary), by)
		}
		_, err = io.WriteString(c.out, b.String())
		return err
	})
	return cmd
}

func newReviewListCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list [JOB] [--state S] [-t QUEUE] [--type TYPE] [--limit N] [--cursor C]",
		Short: "list a job's tasks, or the tasks of every job awaiting a person, with the commands legal now",
		Long: "With JOB, lists that job's tasks in creation order. Without it, lists the tasks\n" +
			"of every job that await a person: REVIEW_REQUIRED (step), APPROVAL_REQUIRED\n" +
			"(approve or reject) and INTERVENTION_REQUIRED (resubmit, fix or terminate), oldest\n" +
			"first, a page at a time; --state, --queue and --type narrow them.",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("task list takes at most one JOB, got %d arguments", len(args))
			}
			return nil
		},
	}
	var (
		state, queue, typ, cursor string
		limit                     int
	)
	fs := cmd.Flags()
	fs.StringVar(&state, "state", "", "without JOB: only tasks in this `state` (REVIEW_REQUIRED, APPROVAL_REQUIRED or INTERVENTION_REQUIRED)")
	fs.StringVarP(&queue, "queue", "t", "", "without JOB: only tasks whose work or review `queue` is this")
	fs.StringVar(&typ, "type", "", "without JOB: only tasks whose work or reviewer `type` is this")
	fs.IntVar(&limit, "limit", 100, fmt.Sprintf("without JOB: most tasks to print, `N` from 1 to %d", engine.MaxPage))
	fs.StringVar(&cursor, "cursor", "", "without JOB: start after this `cursor`, as printed by the previous page")
	cmd.RunE = g.runE(func(c *wfCall, args []string) error {
		svc, err := c.client()
		if err != nil {
			return err
		}
		if len(args) == 1 {
			if state != "" || queue != "" || typ != "" || cursor != "" || cmd.Flags().Changed("limit") {
				return usagef("--state, --queue, --type, --limit and --cursor list the tasks awaiting a person; with JOB every task of the job is listed")
			}
			ts, err := svc.ListReviews(c.ctx, args[0])
			if err != nil {
				return err
			}
			return printReviews(c, ts, false)
		}
		q := engine.AwaitingQuery{Queue: queue, Type: typ, Limit: limit}
		if limit < 1 || limit > engine.MaxPage {
			return usagef("--limit %d is not between 1 and %d", limit, engine.MaxPage)
		}
		if state != "" {
			if q.State, err = engine.ParseReviewState(strings.ToUpper(state)); err != nil || !q.State.AwaitsPerson() {
				return usagef("--state %q is not REVIEW_REQUIRED, APPROVAL_REQUIRED or INTERVENTION_REQUIRED", state)
			}
		}
		if cursor != "" {
			n, err := strconv.ParseUint(cursor, 10, 64)
			if err != nil {
				return usagef("--cursor %q is not a cursor printed by task list", cursor)
			}
			q.After = engine.ReviewID(n)
		}
		page, err := svc.ListAwaitingReviews(c.ctx, q)
		if err != nil {
			return err
		}
		if err := printReviews(c, page.Reviews, true); err != nil {
			return err
		}
		if page.Next != 0 && c.table() {
			_, err = fmt.Fprintf(c.err, "More tasks await: next page with --cursor %d\n", page.Next)
		}
		return err
	})
	return cmd
}

// printReviews prints task records in the chosen format; the table names
// each task's job when they come from several.
func printReviews(c *wfCall, ts []engine.Review, withJob bool) error {
	if ts == nil {
		ts = []engine.Review{}
	}
	switch c.format {
	case formatJSON:
		return c.doc(ts)
	case formatJSONL:
		return printLines(c.out, ts)
	}
	var b strings.Builder
	job := func(string) string { return "" }
	if withJob {
		fmt.Fprintf(&b, "%-24s ", "JOB")
		job = func(j string) string { return fmt.Sprintf("%-24s ", wfCell(j)) }
	}
	fmt.Fprintf(&b, "%-5s %-24s %-22s %5s %8s  %s\n", "ID", "PHASE", "STATUS", "RUNS", "COST", "LEGAL COMMANDS")
	for _, t := range ts {
		var legal []string
		for _, op := range engine.LegalReviewOps(t.State) {
			legal = append(legal, string(op))
		}
		fmt.Fprintf(&b, "%s%-5d %-24s %-22s %5d %8g  %s\n", job(t.Job), t.ID, wfCell(t.Phase), t.State, t.Runs, t.CostTotal, strings.Join(legal, " "))
	}
	_, err := io.WriteString(c.out, b.String())
	return err
}

func newReviewHistoryCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "history TASK",
		Short: "print a task's history: every move, who made it and why",
		Long: "Prints the history of TASK (a task id or JOB/PHASE): each event with its time, the\n" +
			"states it moved the task between, who decided (or which worker or reviewer held\n" +
			"the lease) and the reason or summary recorded. -o jsonl prints one event per line.",
		Args: exactArgs("TASK"),
	}
	cmd.RunE = g.runE(func(c *wfCall, args []string) error {
		t, err := parseReviewTarget(args[0])
		if err != nil {
			return err
		}
		svc, err := c.client()
		if err != nil {
			return err
		}
		if t.ID == 0 {
			rec, err := svc.DescribeReview(c.ctx, t)
			if err != nil {
				return err
			}
			t.ID = rec.ID
		}
		evs, err := svc.ReviewHistory(c.ctx, t.ID)
		if err != nil {
			return err
		}
		if evs == nil {
			evs = []engine.ReviewEvent{}
		}
		switch c.format {
		case formatJSON:
			return c.doc(evs)
		case formatJSONL:
			return printLines(c.out, evs)
		}
		var b strings.Builder
		for _, e := range evs {
			who := e.By
			if who == "" {
				who = e.Owner
			}
			note := e.Reason
			if e.Assessment != nil {
				note = e.Assessment.Summary
			} else if note == "" {
				note = e.Summary
			}
			fmt.Fprintf(&b, "%3d  %s  %-22s %-42s %-12s %s\n", e.Seq, time.UnixMilli(e.AtMS).UTC().Format(time.RFC3339),
				e.Type, fmt.Sprintf("%s → %s", e.From, e.To), wfCell(who), wfCell(note))
		}
		_, err = io.WriteString(c.out, b.String())
		return err
	})
	return cmd
}

// reviewOpShort says what each human command does.
var reviewOpShort = map[engine.ReviewOp]string{
	engine.ReviewOpActivate:  "activate a DRAFT task: it becomes PENDING and runs once its dependencies succeed",
	engine.ReviewOpConfig:    "configure a DRAFT task: objective, details, acceptance criteria, input",
	engine.ReviewOpSuspend:   "suspend a task: it keeps everything and runs again (from PENDING) when resumed",
	engine.ReviewOpResume:    "resume a SUSPENDED task (to PENDING) or a PAUSED one (to RUNNING)",
	engine.ReviewOpCancel:    "cancel a task: it ends CANCELED and its dependants never start",
	engine.ReviewOpStep:      "start the review of a REVIEW_REQUIRED task (REVIEWING)",
	engine.ReviewOpApprove:   "approve a task's reviewed output: SUCCESS, and its dependants may start",
	engine.ReviewOpReject:    "reject a task's output: it runs again (PENDING) with --reason as its feedback",
	engine.ReviewOpResubmit:  "send a task that needs intervention back to run again (PENDING)",
	engine.ReviewOpFix:       "mark a task that needed intervention fixed: it is reviewed again (REVIEW_REQUIRED)",
	engine.ReviewOpTerminate: "end a task that needs intervention: CANCELED",
}

// reviewOpOutput is a command's JSON document.
type reviewOpOutput struct {
	ReviewID uint64             `json:"task_id"`
	Command  string             `json:"command"`
	Status   engine.ReviewState `json:"status"`
	Seq      uint64             `json:"seq"`
	By       string             `json:"by,omitempty"`
}

func newReviewOpCommand(g *wfGlobals, op engine.ReviewOp) *cobra.Command {
	cmd := &cobra.Command{
		Use:   string(op) + " TASK",
		Short: reviewOpShort[op],
		Long: strings.ToUpper(reviewOpShort[op][:1]) + reviewOpShort[op][1:] + ".\n" +
			"TASK is a task id or JOB/PHASE. Refused, naming the task's state and the commands\n" +
			"legal in it, when the state does not allow " + string(op) + ".",
		Args: exactArgs("TASK"),
	}
	var by, reason, objective, details, input, expect string
	var acceptance []string
	fs := cmd.Flags()
	fs.StringVar(&by, "by", "", "who decides (default $HEDDLE_USER, else $USER)")
	fs.StringVar(&reason, "reason", "", "why: the feedback the next run reads (reject, resubmit, fix), or a note")
	fs.StringVar(&expect, "expect", "", "apply only while the task is in this `state` (what you saw), e.g. APPROVAL_REQUIRED")
	if op == engine.ReviewOpConfig {
		fs.StringVar(&objective, "objective", "", "the task's objective")
		fs.StringVar(&details, "details", "", "the task's details")
		fs.StringArrayVar(&acceptance, "acceptance", nil, "an acceptance criterion (repeat the flag for more; replaces the list)")
		fs.StringVar(&input, "input", "", "the work's arguments as a JSON array (replaces the input)")
	}
	cmd.RunE = g.runE(func(c *wfCall, args []string) error {
		t, err := parseReviewTarget(args[0])
		if err != nil {
			return err
		}
		tc := engine.ReviewCommand{ReviewTarget: t, Op: op, By: envDefault(by, "HEDDLE_USER", os.Getenv("USER")), Reason: reason}
		if expect != "" {
			st, err := engine.ParseReviewState(strings.ToUpper(expect))
			if err != nil {
				return usagef("--expect %q is not a task state", expect)
			}
			tc.Expect = st
		}
		if op == engine.ReviewOpConfig {
			cf := &engine.ReviewConfig{Objective: objective, Details: details, Acceptance: acceptance}
			if input != "" {
				var vals []json.RawMessage
				if err := json.Unmarshal([]byte(input), &vals); err != nil {
					return usagef("--input %q is not a JSON array: %v", input, err)
				}
				cf.Input = []byte(input)
			}
			tc.Config = cf
		}
		svc, err := c.client()
		if err != nil {
			return err
		}
		res, err := svc.ReviewCommand(c.ctx, tc)
		if err != nil {
			return err
		}
		out := reviewOpOutput{ReviewID: uint64(res.Review), Command: string(op), Status: res.State, Seq: res.Seq, By: tc.By}
		if !c.table() {
			return c.doc(out)
		}
		_, err = fmt.Fprintf(c.out, "Task %d: %s by %s; now %s.\n", out.ReviewID, op, wfCell(out.By), out.Status)
		return err
	})
	return cmd
}
