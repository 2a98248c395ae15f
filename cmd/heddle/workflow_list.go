package main

// This file is "heddle workflow list": one page of runs, newest first
// unless --order or the query's ORDER BY says otherwise, as a table, with
// the page tokens of the pages after and before it. Paging is explicit
// (unlike history) because a store may hold millions of runs; --limit and
// --page-token map to the API's limit and page_token. The filters are the
// engine's (internal/listfilter): Temporal's syntax or heddle's terms.

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
	// Order is the page's order: start_desc (the default), start_asc,
	// close_desc or close_asc.
	Order string `json:"order"`
	// NextPageToken and PrevPageToken are --page-token for the pages after
	// and before this one; absent at either end.
	NextPageToken string `json:"next_page_token,omitempty"`
	PrevPageToken string `json:"prev_page_token,omitempty"`
	// NextCursor is --cursor for the following page when paging with
	// --cursor (oldest first, as list did before page tokens).
	NextCursor string `json:"next_cursor,omitempty"`
}

func newWFListCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list [--query Q] [--status S] [--type TYPE] [-t QUEUE] [-w ID] [--order O] [--limit N] [--page-token T]",
		Short: "list workflow runs, newest first, filtered by status, type, queue, id or time",
		Long: "Lists runs one page at a time, newest first (--order, or ORDER BY in --query, sorts\n" +
			"by start or closing time either way), and says the --page-token of the page after\n" +
			"and of the page before (on stderr with -o jsonl, which prints one run per line).\n" +
			"-w ID lists every run of a workflow id: a continue-as-new chain, retries, later\n" +
			"starts, each linked to the run that followed it. Filters combine.\n\n" +
			wfQueryHelp,
		Args: noArgs,
	}
	filter := addListFilterFlags(cmd)
	var (
		limit                int
		order, token, cursor string
	)
	fs := cmd.Flags()
	fs.IntVar(&limit, "limit", 100, fmt.Sprintf("most runs to print, `N` from 1 to %d", engine.MaxPage))
	fs.StringVar(&order, "order", "", "sort by `order`: start_desc (newest first, the default), start_asc, close_desc, close_asc")
	fs.StringVar(&token, "page-token", "", "the page after or before a page: a `token` list printed")
	fs.StringVar(&cursor, "cursor", "", "start after this `cursor`, oldest first (before page tokens)")
	_ = fs.MarkHidden("cursor")
	_ = cmd.RegisterFlagCompletionFunc("order", func(_ *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return completeWords([]string{"start_desc", "start_asc", "close_desc", "close_asc"}, prefix), cobra.ShellCompDirectiveNoFileComp
	})
	cmd.RunE = g.runE(func(c *wfCall, _ []string) error {
		lq, err := filter.listQuery(time.Now())
		if err != nil {
			return err
		}
		if limit < 1 || limit > engine.MaxPage {
			return usagef("--limit %d is not between 1 and %d", limit, engine.MaxPage)
		}
		lq.Limit, lq.PageToken = limit, token
		if lq.Order, err = engine.ParseListOrder(order); err != nil {
			return usagef("--order %q is not an order: want start_desc, start_asc, close_desc or close_asc", order)
		}
		if cursor != "" {
			n, err := strconv.ParseUint(cursor, 10, 64)
			if err != nil {
				return usagef("--cursor %q is not a cursor printed by list", cursor)
			}
			if token != "" {
				return usagef("--cursor and --page-token both say where to start: give one")
			}
			lq.After = engine.JobID(n)
		}
		svc, err := c.client()
		if err != nil {
			return err
		}
		page, err := svc.List(c.ctx, lq)
		if err != nil {
			return err
		}
		out := wfListOutput{Workflows: []wfJobDoc{}, Order: page.Order.String(), NextPageToken: page.NextPageToken, PrevPageToken: page.PrevPageToken}
		for _, j := range page.Jobs {
			out.Workflows = append(out.Workflows, wfJobOf(j, nil))
		}
		if cursor != "" && page.Next != 0 {
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
			p := newPrinter(c.err)
			wfPrintPaging(p, out)
			return p.err()
		}
		return wfPrintList(c.out, out)
	})
	return cmd
}

// wfListFilter is the filters list and count share.
type wfListFilter struct {
	status, typ, queue, workflowID, query string
}

func addListFilterFlags(cmd *cobra.Command) *wfListFilter {
	f := &wfListFilter{}
	fs := cmd.Flags()
	fs.StringVarP(&f.query, "query", "q", "", "only runs that match this filter `query`: 'WorkflowType = \"order\" AND StartTime > \"-24h\"', or 'type=order created>-24h'")
	fs.StringVar(&f.status, "status", "", "only runs in this `status`, as Temporal names them (Running: every open run): "+strings.Join(listfilter.ExecutionStatusNames(), ", "))
	fs.StringVar(&f.typ, "type", "", "only runs of this workflow `type`")
	fs.StringVarP(&f.queue, "task-queue", "t", "", "only runs on this task `queue` (also --queue)")
	fs.StringVar(&f.queue, "queue", "", "the same as --task-queue")
	_ = fs.MarkHidden("queue")
	fs.StringVarP(&f.workflowID, "workflow-id", "w", "", "only the runs of this workflow `id`: every run, the current one and those before it")
	_ = cmd.RegisterFlagCompletionFunc("status", func(_ *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return completeWords(listfilter.ExecutionStatusNames(), prefix), cobra.ShellCompDirectiveNoFileComp
	})
	return f
}

// listQuery is the filter flags as a list query. The query is parsed here
// too (relative times counted back from now), so that a mistake is a usage
// error naming where it is before anything is sent; the server parses it
// again.
func (f *wfListFilter) listQuery(now time.Time) (engine.ListQuery, error) {
	lq := engine.ListQuery{Type: f.typ, Queue: f.queue, WorkflowID: f.workflowID, Query: f.query}
	if f.status != "" {
		if !listfilter.ValidExecutionStatus(f.status) {
			return lq, usagef("--status %q is not a status; want one of %s (heddle's exact statuses: --query 'HeddleStatus=Running')",
				f.status, strings.Join(listfilter.ExecutionStatusNames(), ", "))
		}
		lq.ExecutionStatus = f.status
	}
	if _, err := listfilter.Parse(f.query, now); err != nil {
		var se *listfilter.SyntaxError
		if errors.As(err, &se) {
			at := "at the end"
			if se.Token != "" {
				at = fmt.Sprintf("at %q", se.Token)
			}
			return lq, usagef("--query %q, column %d, %s: %s", se.Query, se.Col, at, se.Msg)
		}
		return lq, usagef("--query: %v", err)
	}
	return lq, nil
}

// wfQueryHelp describes --query in the help of list and count.
const wfQueryHelp = "--query takes Temporal's list filter, or heddle's shorter terms, or both:\n" +
	"  WorkflowType = \"Order\" AND ExecutionStatus = \"Running\"\n" +
	"  (WorkflowId = \"a\" OR WorkflowId STARTS_WITH \"order-\") AND StartTime > \"2026-11-01T00:00:00Z\"\n" +
	"  ExecutionStatus IN (\"Failed\", \"TimedOut\") ORDER BY CloseTime DESC\n" +
	"  StartTime BETWEEN \"2026-11-01\" AND \"2026-11-02\"     TaskQueue != \"orders\"   RunId = 42\n" +
	"  status=Running,Waiting type=Order id=order-* created>-24h closed<now-7d\n" +
	"Fields: ExecutionStatus (status), WorkflowType (type), TaskQueue (queue), WorkflowId\n" +
	"(id), RunId, StartTime (created), CloseTime (closed), HeddleStatus, Paused (paused).\n" +
	"A space between two comparisons is an AND; AND binds tighter than OR. Statuses are\n" +
	"Temporal's: Running is every open run (heddle's Queued, Running, Waiting, Parked,\n" +
	"Retrying, Draft, Suspended), Completed leaves out ContinuedAsNew; also Open, Closed,\n" +
	"and heddle's open statuses by name. HeddleStatus=Running is a run a worker holds now.\n" +
	"paused=true (or Temporal's ExecutionStatus = \"Paused\") keeps the open runs that are\n" +
	"paused; a paused run keeps its status, so Running and Open include it. Times are\n" +
	"RFC 3339, a date, Unix ms, now, or back from now (-90m, -24h, -7d); UTC without a\n" +
	"zone. The web UI's workflow filter is the same language."

// wfPrintPaging says the tokens of the pages around this one.
func wfPrintPaging(p *printer, out wfListOutput) {
	if out.NextPageToken != "" {
		p.printf("Next page: --page-token %s\n", out.NextPageToken)
	}
	if out.PrevPageToken != "" {
		p.printf("Previous page: --page-token %s\n", out.PrevPageToken)
	}
	if out.NextCursor != "" {
		p.printf("More runs match: next page with --cursor %s\n", out.NextCursor)
	}
}

func wfPrintList(w io.Writer, out wfListOutput) error {
	p := newPrinter(w)
	if len(out.Workflows) == 0 {
		p.println("No workflows.")
	} else {
		// A page that holds a run a later run continued says which.
		chained := false
		for _, d := range out.Workflows {
			chained = chained || d.NextRunID != 0
		}
		tw := newWFTable(p)
		header := []string{"WORKFLOW ID", "JOB", "TYPE", "QUEUE", "STATUS", "ATTEMPT", "CREATED", "CLOSED"}
		if chained {
			header = append(header, "NEXT RUN")
		}
		tw.row(header...)
		for _, d := range out.Workflows {
			closed := "-"
			if d.ClosedAt != "" {
				closed = wfRelRFC(d.ClosedAt)
			}
			row := []string{wfCell(wfTruncate(d.WorkflowID, wfCellWidth)), fmt.Sprint(d.JobID), wfCell(wfTruncate(d.Type, wfCellWidth)),
				wfCell(wfTruncate(d.Queue, wfCellWidth)), wfStatusCell(d), fmt.Sprint(d.Attempt), wfRelRFC(d.CreatedAt), closed}
			if chained {
				next := "-"
				if d.NextRunID != 0 {
					next = fmt.Sprintf("%s → %d", engine.NextRunText(d.NextRunReason), d.NextRunID)
				}
				row = append(row, next)
			}
			tw.row(row...)
		}
		if err := tw.flush(); err != nil {
			return err
		}
	}
	wfPrintPaging(p, out)
	return p.err()
}

// wfStatusCell is a run's status in a table: heddle's, except that a run
// that continued as new says so (Temporal's ContinuedAsNew) rather than a
// bare Completed.
func wfStatusCell(d wfJobDoc) string {
	if d.ExecutionStatus == "ContinuedAsNew" {
		return d.ExecutionStatus
	}
	if d.Paused != nil {
		return d.Status + " (paused)"
	}
	return d.Status
}
