package main

// This file is "heddle task-queue": the task queues of a node or cluster,
// with Temporal's command names (temporal task-queue describe --task-queue
// Q). Describe lists the workers that polled a queue lately (identity, last
// access, what they run, their build) and the queue's backlog and rates;
// list shows every queue in one table.

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/heddlewf/heddle/engine"
)

func newTaskQueueCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "task-queue",
		Aliases: []string{"tq"},
		Short:   "describe or list task queues: their pollers, backlog and rates",
		Long: "Shows the task queues of a heddle node or cluster through its HTTP API: the\n" +
			"workers that polled each lately (who, when last, which workflow and activity\n" +
			"types they run, their build), how many jobs wait and how old the oldest is, and\n" +
			"how fast jobs are added and dispatched. A node remembers the polls it served in\n" +
			"memory; a cluster's answer merges what every member saw.",
		Args: unknownCommandArgs,
		RunE: missingCommand,
	}
	g := addAPIFlags(cmd)
	cmd.AddCommand(newTaskQueueDescribeCommand(g), newTaskQueueListCommand(g))
	return cmd
}

// tqDoc is one task queue as -o json prints it.
type tqDoc struct {
	TaskQueue  string        `json:"task_queue"`
	Pollers    []tqPollerDoc `json:"pollers"`
	Stats      tqStatsDoc    `json:"stats"`
	LastPollAt string        `json:"last_poll_at,omitempty"`
	LastPoller string        `json:"last_poller,omitempty"`
	// Unreached are the cluster members that could not be asked for their
	// pollers.
	Unreached []string `json:"unreached,omitempty"`
}

// tqPollerDoc is one worker polling the queue: Temporal's Identity,
// LastAccessTime, and what heddle's claims say besides.
type tqPollerDoc struct {
	Identity       string   `json:"identity"`
	LastAccessTime string   `json:"last_access_time"`
	Polling        bool     `json:"polling"`
	BuildID        string   `json:"build_id,omitempty"`
	WorkflowTypes  []string `json:"workflow_types"`
	ActivityTypes  []string `json:"activity_types"`
	AnyType        bool     `json:"any_type,omitempty"`
	TypesTruncated bool     `json:"types_truncated,omitempty"`
	DispatchRate   float64  `json:"dispatch_rate"`
	Nodes          []string `json:"nodes,omitempty"`
}

// tqStatsDoc is Temporal's TaskQueueStats, with the delayed jobs apart.
type tqStatsDoc struct {
	ApproximateBacklogCount int64   `json:"approximate_backlog_count"`
	BacklogCountCapped      bool    `json:"backlog_count_capped,omitempty"`
	ApproximateBacklogAgeMS int64   `json:"approximate_backlog_age_ms"`
	DelayedCount            int64   `json:"delayed_count"`
	DelayedCountCapped      bool    `json:"delayed_count_capped,omitempty"`
	TasksAddRate            float64 `json:"tasks_add_rate"`
	TasksDispatchRate       float64 `json:"tasks_dispatch_rate"`
}

func tqDocOf(d *engine.TaskQueueDescription) tqDoc {
	doc := tqDoc{TaskQueue: d.Name, Pollers: []tqPollerDoc{}, LastPollAt: wfRFC3339(d.LastPollMS), LastPoller: d.LastPoller,
		Unreached: d.Unreached, Stats: tqStatsDoc{
			ApproximateBacklogCount: d.Stats.BacklogCount, BacklogCountCapped: d.Stats.BacklogCountCapped,
			ApproximateBacklogAgeMS: d.Stats.BacklogAgeMS, DelayedCount: d.Stats.DelayedCount,
			DelayedCountCapped: d.Stats.DelayedCountCapped, TasksAddRate: d.Stats.AddRate, TasksDispatchRate: d.Stats.DispatchRate}}
	for _, p := range d.Pollers {
		pd := tqPollerDoc{Identity: p.Identity, LastAccessTime: wfRFC3339(p.LastAccessMS), Polling: p.Polling, BuildID: p.BuildID,
			WorkflowTypes: p.WorkflowTypes, ActivityTypes: p.ActivityTypes, AnyType: p.AnyType, TypesTruncated: p.TypesTruncated,
			DispatchRate: p.DispatchRate, Nodes: p.Nodes}
		if pd.WorkflowTypes == nil {
			pd.WorkflowTypes = []string{}
		}
		if pd.ActivityTypes == nil {
			pd.ActivityTypes = []string{}
		}
		doc.Pollers = append(doc.Pollers, pd)
	}
	return doc
}

func newTaskQueueDescribeCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "describe --task-queue NAME [--task-queue-type workflow|activity]",
		Short: "show a task queue's pollers, backlog and rates",
		Long: "Shows the workers that polled task queue NAME in the last five minutes (as\n" +
			"Temporal lists them): identity, last access, whether a poll of it waits now,\n" +
			"its build, and the workflow and activity types it runs. A worker polls while it\n" +
			"has a free slot, each long poll lasting up to 30s: a last access over a minute\n" +
			"old means a worker at capacity, or gone. Then the queue's backlog (jobs ready to\n" +
			"claim, and the age of the oldest), the jobs that wait for a retry's backoff or\n" +
			"were passed over by workers that do not run their type (delayed), and the jobs\n" +
			"added to and dispatched from the queue per second over the last minute.",
		Args: noArgs,
	}
	var queue, kind string
	cmd.Flags().StringVarP(&queue, "task-queue", "t", "", "the task `queue` to describe (required)")
	cmd.Flags().StringVar(&kind, "task-queue-type", "", "list only the pollers that run this `kind` of task: workflow or activity (default: all)")
	cmd.RunE = g.runE(func(c *wfCall, _ []string) error {
		if queue == "" {
			return usagef("--task-queue is required")
		}
		keep := func(*engine.TaskQueuePoller) bool { return true }
		switch strings.ToLower(kind) {
		case "":
		case "workflow":
			keep = (*engine.TaskQueuePoller).RunsWorkflows
		case "activity":
			keep = (*engine.TaskQueuePoller).RunsActivities
		default:
			return usagef("--task-queue-type %q: want workflow or activity", kind)
		}
		svc, err := c.client()
		if err != nil {
			return err
		}
		d, err := svc.DescribeTaskQueue(c.ctx, queue)
		if err != nil {
			return err
		}
		kept := d.Pollers[:0]
		for _, p := range d.Pollers {
			if keep(&p) {
				kept = append(kept, p)
			}
		}
		d.Pollers = kept
		if !c.table() {
			return c.doc(tqDocOf(d))
		}
		return tqPrintOne(c.out, d)
	})
	return cmd
}

func newTaskQueueListCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "list the task queues with their pollers, backlog and rates",
		Long: "Lists the task queues that ever held a job or were polled lately, with the\n" +
			"number of their pollers, their backlog (counted up to 10,000 each), its age, the\n" +
			"delayed jobs, the rates and the last poll.",
		Args: noArgs,
	}
	cmd.RunE = g.runE(func(c *wfCall, _ []string) error {
		svc, err := c.client()
		if err != nil {
			return err
		}
		l, err := svc.ListTaskQueues(c.ctx)
		if err != nil {
			return err
		}
		docs := make([]tqDoc, 0, len(l.Queues))
		for i := range l.Queues {
			docs = append(docs, tqDocOf(&l.Queues[i]))
		}
		switch c.format {
		case formatJSON:
			return c.doc(struct {
				TaskQueues []tqDoc  `json:"task_queues"`
				Truncated  bool     `json:"truncated,omitempty"`
				Unreached  []string `json:"unreached,omitempty"`
			}{docs, l.Truncated, l.Unreached})
		case formatJSONL:
			return printLines(c.out, docs)
		}
		return tqPrintList(c.out, l)
	})
	return cmd
}

// tqAgo is how long before now ms was, for people: "4s ago", "just now".
func tqAgo(nowMS, ms int64) string {
	if ms == 0 {
		return "-"
	}
	d := time.Duration(nowMS-ms) * time.Millisecond
	if d < time.Second {
		return "just now"
	}
	return wfDuration(d) + " ago"
}

// tqCount is a count that may have stopped at its bound: "10000+".
func tqCount(n int64, capped bool) string {
	if capped {
		return fmt.Sprintf("%d+", n)
	}
	return fmt.Sprint(n)
}

// tqRate is a rate per second for a table.
func tqRate(r float64) string {
	if r == 0 {
		return "0"
	}
	return fmt.Sprintf("%.2f", r)
}

// tqTypes lists the types a poller runs for a table.
func tqTypes(names []string, any bool) string {
	switch {
	case any:
		return "(any)"
	case len(names) == 0:
		return "-"
	}
	return wfCell(strings.Join(names, ","))
}

func tqPrintOne(w io.Writer, d *engine.TaskQueueDescription) error {
	p := newPrinter(w)
	kv := func(k, v string) { wfKV(p, k, v) }
	kv("Task queue", wfCell(d.Name))
	backlog := tqCount(d.Stats.BacklogCount, d.Stats.BacklogCountCapped) + " ready"
	if d.Stats.BacklogCount > 0 {
		backlog += ", the oldest waiting " + wfDuration(time.Duration(d.Stats.BacklogAgeMS)*time.Millisecond)
	}
	kv("Backlog", backlog)
	kv("Delayed", tqCount(d.Stats.DelayedCount, d.Stats.DelayedCountCapped)+" (retry backoff, or passed over by workers that do not run their type)")
	kv("Rates", fmt.Sprintf("%s added/s, %s dispatched/s (last minute)", tqRate(d.Stats.AddRate), tqRate(d.Stats.DispatchRate)))
	if d.LastPollMS > 0 {
		kv("Last poll", fmt.Sprintf("%s, by %s", tqAgo(d.NowMS, d.LastPollMS), wfCell(d.LastPoller)))
	} else {
		kv("Last poll", "never (since this node started)")
	}
	if len(d.Unreached) > 0 {
		kv("Not asked", strings.Join(d.Unreached, ", ")+" (down or unreachable: their pollers are missing)")
	}
	if err := p.err(); err != nil {
		return err
	}
	if len(d.Pollers) == 0 {
		_, err := fmt.Fprintf(w, "\nNo worker has polled task queue %s in the last %s.\n", wfCell(d.Name), wfDuration(engine.PollerWindow))
		return err
	}
	if _, err := io.WriteString(w, "\nPollers:\n"); err != nil {
		return err
	}
	t := newWFTable(w)
	t.row("IDENTITY", "LAST ACCESS", "POLLING", "BUILD", "WORKFLOW TYPES", "ACTIVITY TYPES", "DISPATCH/S", "NODES")
	for _, pl := range d.Pollers {
		polling := "no"
		if pl.Polling {
			polling = "yes"
		}
		t.row(wfCell(pl.Identity), tqAgo(d.NowMS, pl.LastAccessMS), polling, stepDash(wfCell(pl.BuildID)),
			tqTypes(pl.WorkflowTypes, pl.AnyType), tqTypes(pl.ActivityTypes, pl.AnyType), tqRate(pl.DispatchRate),
			stepDash(strings.Join(pl.Nodes, ",")))
	}
	return t.flush()
}

func tqPrintList(w io.Writer, l *engine.TaskQueueList) error {
	if len(l.Queues) == 0 {
		_, err := io.WriteString(w, "No task queues.\n")
		return err
	}
	t := newWFTable(w)
	t.row("TASK QUEUE", "POLLERS", "BACKLOG", "OLDEST", "DELAYED", "ADDED/S", "DISPATCHED/S", "LAST POLL")
	for _, d := range l.Queues {
		oldest := "-"
		if d.Stats.BacklogCount > 0 {
			oldest = wfDuration(time.Duration(d.Stats.BacklogAgeMS) * time.Millisecond)
		}
		last := tqAgo(d.NowMS, d.LastPollMS)
		if d.LastPollMS > 0 {
			last += " (" + wfCell(d.LastPoller) + ")"
		}
		t.row(wfCell(d.Name), fmt.Sprint(len(d.Pollers)), tqCount(d.Stats.BacklogCount, d.Stats.BacklogCountCapped), oldest,
			tqCount(d.Stats.DelayedCount, d.Stats.DelayedCountCapped), tqRate(d.Stats.AddRate), tqRate(d.Stats.DispatchRate), last)
	}
	if err := t.flush(); err != nil {
		return err
	}
	var notes []string
	if l.Truncated {
		notes = append(notes, fmt.Sprintf("only the first %d task queues are listed", engine.MaxTaskQueues))
	}
	if len(l.Unreached) > 0 {
		notes = append(notes, "not asked for their pollers: "+strings.Join(l.Unreached, ", "))
	}
	for _, n := range notes {
		if _, err := fmt.Fprintf(w, "(%s)\n", n); err != nil {
			return err
		}
	}
	return nil
}
