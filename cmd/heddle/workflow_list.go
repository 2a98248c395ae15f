package main

// This file is "heddle workflow list": one page of runs in creation order,
// as a table, with the cursor of the next page. Paging is explicit (unlike
// history) because a store may hold millions of runs; --limit and --cursor
// map to the API's limit and after.

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/heddlewf/heddle/engine"
	"github.com/spf13/cobra"
)

// wfListOutput is list's JSON document.
type wfListOutput struct {
	Workflows []wfJobDoc `json:"workflows"`
	// NextCursor is --cursor for the following page; absent on the last.
	NextCursor string `json:"next_cursor,omitempty"`
}

func newWFListCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list [--status S] [--type TYPE] [-t QUEUE] [--limit N] [--cursor C]",
		Short: "list workflow runs, filtered by status, type or queue",
		Long: "Lists runs, oldest first, one page at a time; when more match, says the cursor of\n" +
			"the next page (on stderr with -o jsonl, which prints one run per line). Filters combine.",
		Args: noArgs,
	}
	filter := addListFilterFlags(cmd)
	var (
		limit  int
		cursor string
	)
	cmd.Flags().IntVar(&limit, "limit", 100, fmt.Sprintf("most runs to print, `N` from 1 to %d", engine.MaxPage))
	cmd.Flags().StringVar(&cursor, "cursor", "", "start after this `cursor`, as printed by the previous page")
	cmd.RunE = g.runE(func(c *wfCall, _ []string) error {
		q, err := filter.query()
		if err != nil {
			return err
		}
		if limit < 1 || limit > engine.MaxPage {
			return usagef("--limit %d is not between 1 and %d", limit, engine.MaxPage)
		}
		q.Limit = limit
		if cursor != "" {
			n, err := strconv.ParseUint(cursor, 10, 64)
			if err != nil {
				return usagef("--cursor %q is not a cursor printed by list", cursor)
			}
			q.After = engine.JobID(n)
		}
		svc, err := c.client()
		if err != nil {
			return err
		}
		page, err := svc.List(c.ctx, q)
		if err != nil {
			return err
		}
		out := wfListOutput{Workflows: []wfJobDoc{}}
		for _, j := range page.Jobs {
			out.Workflows = append(out.Workflows, wfJobOf(j, nil))
		}
		if page.Next != 0 {
			out.NextCursor = strconv.FormatUint(uint64(page.Next), 10)
		}
		switch c.format {
		case formatJSON:
			return c.doc(out)
		case formatJSONL:
			if err := printLines(c.out, out.Workflows); err != nil {
				return err
			}
			if out.NextCursor != "" {
				_, err = fmt.Fprintf(c.err, "More runs match: next page with --cursor %s\n", out.NextCursor)
			}
			return err
		}
		return wfPrintList(c.out, out)
	})
	return cmd
}

// wfListFilter is the filters list and count share.
type wfListFilter struct {
	status, typ, queue string
}

func addListFilterFlags(cmd *cobra.Command) *wfListFilter {
	f := &wfListFilter{}
	fs := cmd.Flags()
	fs.StringVar(&f.status, "status", "", "only runs in this `status`: "+wfStatusNames())
	fs.StringVar(&f.typ, "type", "", "only runs of this workflow `type`")
	fs.StringVarP(&f.queue, "task-queue", "t", "", "only runs on this task `queue` (also --queue)")
	fs.StringVar(&f.queue, "queue", "", "the same as --task-queue")
	_ = fs.MarkHidden("queue")
	_ = cmd.RegisterFlagCompletionFunc("status", func(_ *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var names []string
		for _, s := range engine.Statuses() {
			names = append(names, s.String())
		}
		return completeWords(names, prefix), cobra.ShellCompDirectiveNoFileComp
	})
	return f
}

// query is the filters as the list API's query.
func (f *wfListFilter) query() (engine.ListQuery, error) {
	q := engine.ListQuery{Type: f.typ, Queue: f.queue}
	if f.status != "" {
		s, ok := wfParseStatus(f.status)
		if !ok {
			return q, usagef("--status %q is not a status; want one of %s", f.status, wfStatusNames())
		}
		q.Status = s
	}
	return q, nil
}

func wfPrintList(w io.Writer, out wfListOutput) error {
	p := newPrinter(w)
	if len(out.Workflows) == 0 {
		p.println("No workflows.")
	} else {
		tw := newWFTable(p)
		tw.row("WORKFLOW ID", "JOB", "TYPE", "QUEUE", "STATUS", "ATTEMPT", "CREATED", "CLOSED")
		for _, d := range out.Workflows {
			closed := "-"
			if d.ClosedAt != "" {
				closed = wfRelRFC(d.ClosedAt)
			}
			tw.row(wfCell(wfTruncate(d.WorkflowID, wfCellWidth)), fmt.Sprint(d.JobID), wfCell(wfTruncate(d.Type, wfCellWidth)),
				wfCell(wfTruncate(d.Queue, wfCellWidth)), d.Status, fmt.Sprint(d.Attempt), wfRelRFC(d.CreatedAt), closed)
		}
		if err := tw.flush(); err != nil {
			return err
		}
	}
	if out.NextCursor != "" {
		p.printf("More runs match: next page with --cursor %s\n", out.NextCursor)
	}
	return p.err()
}

// wfParseStatus matches a status name, ignoring case ("completed").
func wfParseStatus(name string) (engine.Status, bool) {
	for _, s := range engine.Statuses() {
		if strings.EqualFold(s.String(), name) {
			return s, true
		}
	}
	return engine.StatusNone, false
}

func wfStatusNames() string {
	var names []string
	for _, s := range engine.Statuses() {
		names = append(names, s.String())
	}
	return strings.Join(names, ", ")
}
