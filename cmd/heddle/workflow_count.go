package main

// This file is "heddle workflow count": how many runs match the filters of
// list, and how many of them are in each status. The HTTP API has no count
// route, so the command pages through the list API, engine.MaxPage runs a
// request; on a store of millions of runs that is thousands of requests,
// which the help says.

import (
	"fmt"
	"io"

	"github.com/heddlewf/heddle/engine"
	"github.com/spf13/cobra"
)

// wfCountOutput is count's JSON document.
type wfCountOutput struct {
	Count uint64 `json:"count"`
	// ByStatus counts the matching runs per status name; statuses with
	// none are absent.
	ByStatus map[string]uint64 `json:"by_status"`
}

func newWFCountCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "count [--status S] [--type TYPE] [-t QUEUE]",
		Short: "count workflow runs, filtered as list filters them, per status",
		Long: fmt.Sprintf("Counts the runs that match the filters, which are list's, in all and per status.\n"+
			"It reads every matching run through the list API, %d a request.", engine.MaxPage),
		Args: noArgs,
	}
	filter := addListFilterFlags(cmd)
	cmd.RunE = g.runE(func(c *wfCall, _ []string) error {
		q, err := filter.query()
		if err != nil {
			return err
		}
		svc, err := c.client()
		if err != nil {
			return err
		}
		out := wfCountOutput{ByStatus: map[string]uint64{}}
		q.Limit = engine.MaxPage
		for {
			page, err := svc.List(c.ctx, q)
			if err != nil {
				return err
			}
			for _, j := range page.Jobs {
				out.Count++
				out.ByStatus[j.Status.String()]++
			}
			if page.Next == 0 {
				break
			}
			q.After = page.Next
		}
		if !c.table() {
			return c.doc(out)
		}
		return wfPrintCount(c.out, out)
	})
	return cmd
}

// wfPrintCount prints the total and the statuses that have runs, in the
// order of the lifecycle.
func wfPrintCount(w io.Writer, out wfCountOutput) error {
	tw := newWFTable(w)
	tw.row("STATUS", "COUNT")
	for _, s := range engine.Statuses() {
		if n, ok := out.ByStatus[s.String()]; ok {
			tw.row(s.String(), fmt.Sprint(n))
		}
	}
	tw.row("Total", fmt.Sprint(out.Count))
	return tw.flush()
}
