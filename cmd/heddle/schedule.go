package main

// This file is "heddle schedule", the operator's command for the schedules
// of a running node or cluster, through its HTTP API like "heddle
// workflow" (whose connection and -o flags it shares). The spec and action
// flags of create and update are in schedule_flags.go.

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/spf13/cobra"
)

func newScheduleCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "create, list, describe, pause, unpause, trigger, backfill, update or delete schedules",
		Long: "Manages the schedules of a heddle node or cluster through its HTTP API. A schedule\n" +
			"starts a workflow run at each time of its spec (cron expressions and intervals, in UTC);\n" +
			"each run's workflow id is the schedule's base id, \"-\", and the time in RFC 3339.\n\n" +
			"Results print for people, or with -o json as one JSON document (-o jsonl: one line).",
		Args: unknownCommandArgs,
		RunE: missingCommand,
	}
	g := addAPIFlags(cmd)
	cmd.AddCommand(
		newSchedCreateCommand(g),
		newSchedUpdateCommand(g),
		newSchedListCommand(g),
		newSchedDescribeCommand(g),
		newSchedPauseCommand(g, true),
		newSchedPauseCommand(g, false),
		newSchedTriggerCommand(g),
		newSchedBackfillCommand(g),
		newSchedDeleteCommand(g),
	)
	return cmd
}

// schedDoc is a schedule as the JSON output shows it.
type schedDoc struct {
	ID                string          `json:"id"`
	CronExpressions   []string        `json:"cron_expressions,omitempty"`
	Intervals         []string        `json:"intervals,omitempty"` // "1h" or "1h/15m" (every/offset)
	StartAt           string          `json:"start_at,omitempty"`
	EndAt             string          `json:"end_at,omitempty"`
	Jitter            string          `json:"jitter,omitempty"`
	WorkflowID        string          `json:"workflow_id,omitempty"`
	Type              string          `json:"type"`
	TaskQueue         string          `json:"task_queue"`
	Overlap           string          `json:"overlap"`
	CatchupWindow     string          `json:"catchup_window,omitempty"`
	PauseOnFailure    bool            `json:"pause_on_failure,omitempty"`
	Paused            bool            `json:"paused"`
	Note              string          `json:"note,omitempty"`
	RemainingActions  *int64          `json:"remaining_actions,omitempty"`
	NumActions        int64           `json:"num_actions"`
	NumMissedCatchup  int64           `json:"num_missed_catchup"`
	NumSkippedOverlap int64           `json:"num_skipped_overlap"`
	Buffered          int             `json:"buffered,omitempty"`
	Running           []schedRunDoc   `json:"running,omitempty"`
	Recent            []schedRunDoc   `json:"recent,omitempty"`
	NextActionTimes   []string        `json:"next_action_times,omitempty"`
	Created           string          `json:"created"`
	Updated           string          `json:"updated"`
	Started           []schedStartDoc `json:"started,omitempty"` // the runs this command started
}

type schedRunDoc struct {
	WorkflowID string `json:"workflow_id"`
	JobID      uint64 `json:"job_id"`
	// StartingOnShard is the shard of a sharded cluster a run's create is
	// on its way to (its job id is not known yet).
	StartingOnShard *int   `json:"starting_on_shard,omitempty"`
	ScheduledTime   string `json:"scheduled_time"`
	ActualTime      string `json:"actual_time"`
}

// jobText names a schedule's run: its job, or the shard its create is on
// its way to.
func (r schedRunDoc) jobText() string {
	if r.JobID == 0 && r.StartingOnShard != nil {
		return fmt.Sprintf("starting on shard %d", *r.StartingOnShard)
	}
	return fmt.Sprintf("job %d", r.JobID)
}

type schedStartDoc struct {
	WorkflowID      string `json:"workflow_id"`
	JobID           uint64 `json:"job_id"`
	StartingOnShard *int   `json:"starting_on_shard,omitempty"`
}

func (s schedStartDoc) jobText() string {
	return schedRunDoc{JobID: s.JobID, StartingOnShard: s.StartingOnShard}.jobText()
}

func durString(ms int64) string {
	if ms == 0 {
		return ""
	}
	return (time.Duration(ms) * time.Millisecond).String()
}

func newSchedDoc(s *engine.Schedule, next []int64) schedDoc {
	d := schedDoc{ID: s.ID, CronExpressions: s.Spec.CronExpressions, StartAt: wfRFC3339(s.Spec.StartAtMS), EndAt: wfRFC3339(s.Spec.EndAtMS),
		Jitter: durString(s.Spec.JitterMS), WorkflowID: s.Action.WorkflowID, Type: s.Action.Type, TaskQueue: s.Action.Queue,
		Overlap: s.Policy.Overlap.String(), CatchupWindow: durString(s.Policy.CatchupWindowMS), PauseOnFailure: s.Policy.PauseOnFailure,
		Paused: s.State.Paused, Note: s.State.Note, NumActions: s.NumActions, NumMissedCatchup: s.NumMissedCatchup,
		NumSkippedOverlap: s.NumSkippedOverlap, Buffered: len(s.Buffered), Created: wfRFC3339(s.CreatedMS), Updated: wfRFC3339(s.UpdatedMS)}
	if s.Policy.Overlap == engine.OverlapUnspecified {
		d.Overlap = engine.OverlapSkip.String()
	}
	if s.State.LimitedActions {
		n := s.State.RemainingActions
		d.RemainingActions = &n
	}
	for _, iv := range s.Spec.Intervals {
		v := durString(iv.EveryMS)
		if iv.OffsetMS != 0 {
			v += "/" + durString(iv.OffsetMS)
		}
		d.Intervals = append(d.Intervals, v)
	}
	run := func(r engine.ScheduleRun) schedRunDoc {
		d := schedRunDoc{WorkflowID: r.WorkflowID, JobID: uint64(r.Job), ScheduledTime: wfRFC3339(r.NominalMS), ActualTime: wfRFC3339(r.ActualMS)}
		if r.Job == 0 && r.Delivery != nil {
			d.StartingOnShard = &r.Delivery.Target
		}
		return d
	}
	for _, r := range s.Running {
		d.Running = append(d.Running, run(r))
	}
	for _, r := range s.Recent {
		d.Recent = append(d.Recent, run(r))
	}
	for _, at := range next {
		d.NextActionTimes = append(d.NextActionTimes, wfRFC3339(at))
	}
	return d
}

// printSchedDoc prints one schedule for people.
func printSchedDoc(w io.Writer, d schedDoc) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			_, _ = fmt.Fprintf(tw, "%s:\t%s\n", k, v) // tabwriter reports write errors at Flush
		}
	}
	row("Schedule", wfCell(d.ID))
	row("Cron", strings.Join(d.CronExpressions, "; "))
	row("Every", strings.Join(d.Intervals, ", "))
	row("Start at", d.StartAt)
	row("End at", d.EndAt)
	row("Jitter", d.Jitter)
	row("Workflow", fmt.Sprintf("%s on queue %s", wfCell(d.Type), wfCell(d.TaskQueue)))
	row("Workflow id", wfCell(d.WorkflowID))
	row("Overlap", d.Overlap)
	row("Catch-up window", d.CatchupWindow)
	state := "active"
	if d.Paused {
		state = "paused"
	}
	row("State", state)
	row("Note", wfCell(d.Note))
	if d.RemainingActions != nil {
		row("Remaining actions", fmt.Sprint(*d.RemainingActions))
	}
	row("Actions", fmt.Sprintf("%d taken, %d skipped by overlap, %d missed the catch-up window, %d buffered",
		d.NumActions, d.NumSkippedOverlap, d.NumMissedCatchup, d.Buffered))
	for i, r := range d.Running {
		row(map[bool]string{true: "Running", false: ""}[i == 0], fmt.Sprintf("%s (%s)", wfCell(r.WorkflowID), r.jobText()))
	}
	for i, r := range d.Recent {
		row(map[bool]string{true: "Recent", false: ""}[i == 0], fmt.Sprintf("%s (%s) at %s", wfCell(r.WorkflowID), r.jobText(), r.ActualTime))
	}
	row("Next", strings.Join(d.NextActionTimes, ", "))
	for _, s := range d.Started {
		row("Started", fmt.Sprintf("%s (%s)", wfCell(s.WorkflowID), s.jobText()))
	}
	return tw.Flush()
}

// schedResult prints a command's result: the schedule and the runs started.
func (c *wfCall) schedResult(res *engine.ScheduleResult, what string) error {
	d := newSchedDoc(res.Schedule, engine.NextActionTimes(res.Schedule, 3))
	for _, s := range res.Started {
		started := schedStartDoc{WorkflowID: s.WorkflowID, JobID: uint64(s.Job)}
		if s.Job == 0 && s.Delivery != nil {
			started.StartingOnShard = &s.Delivery.Target
		}
		d.Started = append(d.Started, started)
	}
	if !c.table() {
		return c.doc(d)
	}
	if _, err := fmt.Fprintf(c.out, "Schedule %s %s.\n", wfCell(d.ID), what); err != nil {
		return err
	}
	return printSchedDoc(c.out, d)
}

func newSchedCreateCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create ID {--cron EXPR | --every DURATION}... --type TYPE -t QUEUE [flags]",
		Short: "create a schedule",
		Long: "Creates schedule ID, which starts a run of workflow TYPE on queue QUEUE at each time\n" +
			"of its spec: the union of its cron expressions (5 fields, or 6 with seconds first, or\n" +
			"@hourly, @daily, ...; in UTC) and its intervals (every DURATION, optionally /OFFSET).",
		Args: exactArgs("ID"),
	}
	f := addSchedFlags(cmd)
	trigger := cmd.Flags().Bool("trigger-immediately", false, "also start a run now")
	cmd.RunE = g.runE(func(c *wfCall, args []string) error {
		create := engine.CreateSchedule{ID: args[0], TriggerImmediately: *trigger}
		if err := f.apply(&create.Spec, &create.Action, &create.Policy, &create.State, true); err != nil {
			return err
		}
		svc, err := c.client()
		if err != nil {
			return err
		}
		res, err := svc.CreateSchedule(c.ctx, create)
		if err != nil {
			return err
		}
		return c.schedResult(res, "created")
	})
	return cmd
}

func newSchedUpdateCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "update ID [flags]",
		Short: "change a schedule's spec, action or policies",
		Long: "Reads schedule ID and writes it back with what the flags give changed; --cron and\n" +
			"--every, when given, replace all the spec's expressions and intervals. Its next time\n" +
			"is computed afresh from now; its counters and open runs are kept.",
		Args: exactArgs("ID"),
	}
	f := addSchedFlags(cmd)
	cmd.RunE = g.runE(func(c *wfCall, args []string) error {
		svc, err := c.client()
		if err != nil {
			return err
		}
		cur, err := svc.DescribeSchedule(c.ctx, args[0])
		if err != nil {
			return err
		}
		s := cur.Schedule
		up := engine.UpdateSchedule{ID: s.ID, Spec: s.Spec, Action: s.Action, Policy: s.Policy, State: s.State}
		if err := f.apply(&up.Spec, &up.Action, &up.Policy, &up.State, false); err != nil {
			return err
		}
		res, err := svc.UpdateSchedule(c.ctx, up)
		if err != nil {
			return err
		}
		return c.schedResult(res, "updated")
	})
	return cmd
}

// schedListOutput is list's JSON document.
type schedListOutput struct {
	Schedules  []schedDoc `json:"schedules"`
	NextCursor string     `json:"next_cursor,omitempty"`
}

func newSchedListCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list [--limit N] [--cursor C]",
		Short: "list schedules",
		Long:  "Lists schedules in id order, one page at a time, with their next action times.",
		Args:  noArgs,
	}
	var (
		limit  int
		cursor string
	)
	cmd.Flags().IntVar(&limit, "limit", 100, fmt.Sprintf("most schedules to print, `N` from 1 to %d", engine.MaxPage))
	cmd.Flags().StringVar(&cursor, "cursor", "", "start after this `cursor` (a schedule id), as printed by the previous page")
	cmd.RunE = g.runE(func(c *wfCall, _ []string) error {
		if limit < 1 || limit > engine.MaxPage {
			return usagef("--limit %d is not between 1 and %d", limit, engine.MaxPage)
		}
		svc, err := c.client()
		if err != nil {
			return err
		}
		page, err := svc.ListSchedules(c.ctx, engine.ScheduleListQuery{After: cursor, Limit: limit})
		if err != nil {
			return err
		}
		out := schedListOutput{Schedules: []schedDoc{}, NextCursor: page.Next}
		for _, d := range page.Schedules {
			out.Schedules = append(out.Schedules, newSchedDoc(d.Schedule, d.NextActionTimesMS))
		}
		switch c.format {
		case formatJSON:
			return c.doc(out)
		case formatJSONL:
			if out.NextCursor != "" {
				_, _ = fmt.Fprintf(c.err, "next page: --cursor %s\n", out.NextCursor)
			}
			return printLines(c.out, out.Schedules)
		}
		tw := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
		_, _ = fmt.Fprintln(tw, "ID\tSPEC\tWORKFLOW\tSTATE\tACTIONS\tNEXT")
		for _, d := range out.Schedules {
			spec := strings.Join(append(append([]string(nil), d.CronExpressions...), prefixAll("every ", d.Intervals)...), "; ")
			state, next := "active", "-"
			if d.Paused {
				state = "paused"
			}
			if len(d.NextActionTimes) > 0 {
				next = d.NextActionTimes[0]
			}
			_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", wfCell(d.ID), wfCell(spec), wfCell(d.Type), state, d.NumActions, next)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if out.NextCursor != "" {
			_, err = fmt.Fprintf(c.out, "More: --cursor %s\n", out.NextCursor)
		}
		return err
	})
	return cmd
}

func prefixAll(p string, vs []string) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = p + v
	}
	return out
}

func newSchedDescribeCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "describe ID",
		Short: "show a schedule, its recent and running workflows and its next times",
		Args:  exactArgs("ID"),
	}
	cmd.RunE = g.runE(func(c *wfCall, args []string) error {
		svc, err := c.client()
		if err != nil {
			return err
		}
		d, err := svc.DescribeSchedule(c.ctx, args[0])
		if err != nil {
			return err
		}
		doc := newSchedDoc(d.Schedule, d.NextActionTimesMS)
		if !c.table() {
			return c.doc(doc)
		}
		return printSchedDoc(c.out, doc)
	})
	return cmd
}

func newSchedPauseCommand(g *wfGlobals, pause bool) *cobra.Command {
	verb, short, done := "unpause", "resume a paused schedule from its next time after now", "unpaused"
	if pause {
		verb, short, done = "pause", "pause a schedule (its times pass without actions)", "paused"
	}
	cmd := &cobra.Command{
		Use:   verb + " ID [--note TEXT]",
		Short: short,
		Args:  exactArgs("ID"),
	}
	note := cmd.Flags().String("note", "", "why, kept on the schedule (default \""+strings.ToUpper(done[:1])+done[1:]+" via CLI\")")
	cmd.RunE = g.runE(func(c *wfCall, args []string) error {
		svc, err := c.client()
		if err != nil {
			return err
		}
		n := *note
		if n == "" {
			n = strings.ToUpper(done[:1]) + done[1:] + " via CLI"
		}
		res, err := svc.PauseSchedule(c.ctx, engine.PauseSchedule{ID: args[0], Paused: pause, Note: n})
		if err != nil {
			return err
		}
		return c.schedResult(res, done)
	})
	return cmd
}

func newSchedTriggerCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trigger ID [--overlap POLICY]",
		Short: "start a schedule's workflow now",
		Long: "Takes one action of schedule ID now, paused or not, under its overlap policy or\n" +
			"--overlap; the run's workflow id carries the current time.",
		Args: exactArgs("ID"),
	}
	var overlap engine.OverlapPolicy
	cmd.Flags().Func("overlap", "overlap `policy` for this action: "+overlapNames(), func(s string) error {
		p, err := engine.ParseOverlapPolicy(s)
		overlap = p
		return err
	})
	cmd.RunE = g.runE(func(c *wfCall, args []string) error {
		svc, err := c.client()
		if err != nil {
			return err
		}
		res, err := svc.TriggerSchedule(c.ctx, engine.TriggerSchedule{ID: args[0], Overlap: overlap})
		if err != nil {
			return err
		}
		what := "triggered"
		if len(res.Started) == 0 {
			what = "triggered; its overlap policy started nothing now"
		}
		return c.schedResult(res, what)
	})
	return cmd
}

func newSchedBackfillCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "backfill ID --start TIME --end TIME [--overlap POLICY]",
		Short: "take the actions of a past (or future) range of a schedule's times now",
		Long: "Takes the actions of schedule ID's times between --start and --end (RFC 3339, inclusive)\n" +
			fmt.Sprintf("now, as if they were passing, paused or not; at most %d times per call.", engine.MaxBackfillTimes),
		Args: exactArgs("ID"),
	}
	var start, end string
	var overlap engine.OverlapPolicy
	cmd.Flags().StringVar(&start, "start", "", "first `time` of the range, RFC 3339 (required)")
	cmd.Flags().StringVar(&end, "end", "", "last `time` of the range, RFC 3339 (required)")
	cmd.Flags().Func("overlap", "overlap `policy` for these actions: "+overlapNames()+" (default the schedule's)", func(s string) error {
		p, err := engine.ParseOverlapPolicy(s)
		overlap = p
		return err
	})
	cmd.RunE = g.runE(func(c *wfCall, args []string) error {
		var ms [2]int64
		for i, v := range []struct{ name, val string }{{"start", start}, {"end", end}} {
			at, err := time.Parse(time.RFC3339, v.val)
			if err != nil {
				return usagef("--%s %q is not an RFC 3339 time", v.name, v.val)
			}
			ms[i] = at.UnixMilli()
		}
		svc, err := c.client()
		if err != nil {
			return err
		}
		res, err := svc.BackfillSchedule(c.ctx, engine.BackfillSchedule{ID: args[0], StartMS: ms[0], EndMS: ms[1], Overlap: overlap})
		if err != nil {
			return err
		}
		return c.schedResult(res, fmt.Sprintf("backfilled (%d runs started)", len(res.Started)))
	})
	return cmd
}

func newSchedDeleteCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete ID",
		Short: "delete a schedule (the runs it started go on)",
		Args:  exactArgs("ID"),
	}
	cmd.RunE = g.runE(func(c *wfCall, args []string) error {
		svc, err := c.client()
		if err != nil {
			return err
		}
		if err := svc.DeleteSchedule(c.ctx, engine.DeleteSchedule{ID: args[0]}); err != nil {
			return err
		}
		if !c.table() {
			return c.doc(map[string]any{"id": args[0], "deleted": true})
		}
		_, err = fmt.Fprintf(c.out, "Schedule %s deleted.\n", wfCell(args[0]))
		return err
	})
	return cmd
}
