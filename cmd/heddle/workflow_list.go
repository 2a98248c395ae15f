package main

// This file is "heddle workflow list": one page of runs in creation order,
// as a table, with the cursor of the next page. Paging is explicit (unlike
// history) because a store may hold millions of runs; --limit and --cursor
// map to the API's limit and after.

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/heddlewf/heddle/engine"
)

// wfListOutput is list's JSON document.
type wfListOutput struct {
	Workflows []wfJobDoc `json:"workflows"`
	// NextCursor is --cursor for the following page; absent on the last.
	NextCursor string `json:"next_cursor,omitempty"`
}

func runWFList(ctx context.Context, wio wfIO, args []string) error {
	f := newWFFlags(wio, "[--status S] [--type T] [--queue Q] [--limit N] [--cursor C] [flags]",
		"Lists runs, oldest first, one page at a time; when more match, prints the cursor\n"+
			"of the next page. Filters combine.")
	var (
		q              engine.ListQuery
		status, cursor string
	)
	f.fs.StringVar(&status, "status", "", "only runs in this `status`: "+wfStatusNames())
	f.fs.StringVar(&q.Type, "type", "", "only runs of this workflow `type`")
	f.fs.StringVar(&q.Queue, "queue", "", "only runs on this task `queue`")
	f.fs.IntVar(&q.Limit, "limit", 100, fmt.Sprintf("most runs to print, `N` from 1 to %d", engine.MaxPage))
	f.fs.StringVar(&cursor, "cursor", "", "start after this `cursor`, as printed by the previous page")
	if _, err := f.parse(args); err != nil {
		return err
	}
	if status != "" {
		s, ok := wfParseStatus(status)
		if !ok {
			return wfUsagef("--status %q is not a status; want one of %s", status, wfStatusNames())
		}
		q.Status = s
	}
	if q.Limit < 1 || q.Limit > engine.MaxPage {
		return wfUsagef("--limit %d is not between 1 and %d", q.Limit, engine.MaxPage)
	}
	if cursor != "" {
		n, err := strconv.ParseUint(cursor, 10, 64)
		if err != nil {
			return wfUsagef("--cursor %q is not a cursor printed by list", cursor)
		}
		q.After = engine.JobID(n)
	}
	svc, err := f.client()
	if err != nil {
		return err
	}
	page, err := svc.List(ctx, q)
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
	if f.json {
		return wfPrintJSON(wio.out, out)
	}
	return wfPrintList(wio, out)
}

func wfPrintList(wio wfIO, out wfListOutput) error {
	if len(out.Workflows) == 0 {
		fmt.Fprintln(wio.out, "No workflows.")
	} else {
		tw := newWFTable(wio.out)
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
		fmt.Fprintf(wio.out, "More runs match: next page with --cursor %s\n", out.NextCursor)
	}
	return nil
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
