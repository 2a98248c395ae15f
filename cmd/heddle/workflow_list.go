package main

// This file is "heddle workflow list": one page of runs in creation order,
// as a table, with the cursor of the next page. Paging is explicit (unlike
// history) because a store may hold millions of runs; --limit and --cursor
// map to the API's limit and after.

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/listfilter"
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
		Use:   "list [--query Q] [--status S] [--type TYPE] [-t QUEUE] [--limit N] [--cursor C]",
		Short: "list workflow runs, filtered by status, type, queue, id or time",
		Long: "Lists runs, oldest first, one page at a time; when more match, says the cursor of\n" +
			"the next page (on stderr with -o jsonl, which prints one run per line). Filters combine.\n\n" +
			wfQueryHelp,
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
		q, err := filter.filter(time.Now())
		if err != nil {
			return err
		}
		if limit < 1 || limit > engine.MaxPage {
			return usagef("--limit %d is not between 1 and %d", limit, engine.MaxPage)
		}
		var after engine.JobID
		if cursor != "" {
			n, err := strconv.ParseUint(cursor, 10, 64)
			if err != nil {
				return usagef("--cursor %q is not a cursor printed by list", cursor)
			}
			after = engine.JobID(n)
		}
		svc, err := c.client()
		if err != nil {
			return err
		}
		page, err := q.Page(c.ctx, svc, after, limit, 0)
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
		if page.Cut {
			// The page is short because the filter matched few of the
			// runs read, not because the runs ended.
			if _, err := fmt.Fprintf(c.err, "Read %d runs to fill this page and stopped; later runs may match.\n", page.Scanned); err != nil {
				return err
			}
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
	status, typ, queue, query string
}

func addListFilterFlags(cmd *cobra.Command) *wfListFilter {
	f := &wfListFilter{}
	fs := cmd.Flags()
	fs.StringVarP(&f.query, "query", "q", "", "only runs that match this filter `query`, such as 'status=Running created>-24h'")
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

// filter is --query and the other filter flags as one query, relative
// times counted back from now.
func (f *wfListFilter) filter(now time.Time) (*listfilter.Query, error) {
	lq := engine.ListQuery{Type: f.typ, Queue: f.queue}
	if f.status != "" {
		s, ok := wfParseStatus(f.status)
		if !ok {
			return nil, usagef("--status %q is not a status; want one of %s", f.status, wfStatusNames())
		}
		lq.Status = s
	}
	q, err := listfilter.Parse(f.query, now)
	if err != nil {
		var se *listfilter.SyntaxError
		if errors.As(err, &se) {
			return nil, usagef("--query %q, at column %d: %s", se.Query, se.Col, se.Msg)
		}
		return nil, usagef("--query: %v", err)
	}
	return q.And(listfilter.FromListQuery(lq)), nil
}

// wfQueryHelp describes --query in the help of list and count.
const wfQueryHelp = "--query takes terms separated by spaces, all of which must hold:\n" +
	"  status=Running,Waiting   status!=Completed     (= any of, != none of; any case)\n" +
	"  type=Order  queue=orders  id=order-*           (a trailing * matches a prefix)\n" +
	"  created>2026-11-01T00:00Z  created>=-24h  closed<now-7d   (> >= < <=)\n" +
	"  paused=true                                    (open runs an operator paused)\n" +
	"Times are RFC 3339, a date, Unix ms, now, or back from now (-90m, -24h, -7d); UTC\n" +
	"without a zone. Quote values with spaces or commas: type=\"Nightly report\". The web\n" +
	"UI's workflow filter is the same language."

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
			status := d.Status
			if d.Paused != nil {
				status += " (paused)"
			}
			tw.row(wfCell(wfTruncate(d.WorkflowID, wfCellWidth)), fmt.Sprint(d.JobID), wfCell(wfTruncate(d.Type, wfCellWidth)),
				wfCell(wfTruncate(d.Queue, wfCellWidth)), status, fmt.Sprint(d.Attempt), wfRelRFC(d.CreatedAt), closed)
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
