package main

// This file is "heddle workflow count": how many runs match the filters of
// list, and how many of them are in each status. The node counts them
// (GET /v1/jobs/count, Temporal's CountWorkflow): a count of statuses alone
// reads only the status indexes, any other filter each run its indexes
// allow.

import (
	"fmt"
	"io"
	"time"

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
		Use:   "count [--query Q] [--status S] [--type TYPE] [-t QUEUE] [-w ID]",
		Short: "count workflow runs, filtered as list filters them, per status",
		Long: "Counts the runs that match the filters, which are list's, in all and per heddle status.\n" +
			"A filter of statuses alone is counted from the status indexes; any other reads every\n" +
			"run the filter's indexes allow.\n\n" + wfQueryHelp,
		Args: noArgs,
	}
	filter := addListFilterFlags(cmd)
	cmd.RunE = g.runE(func(c *wfCall, _ []string) error {
		lq, err := filter.listQuery(time.Now())
		if err != nil {
			return err
		}
		svc, err := c.client()
		if err != nil {
			return err
		}
		res, err := svc.Count(c.ctx, lq)
		if err != nil {
			return err
		}
		out := wfCountOutput{Count: res.Count, ByStatus: res.ByStatus}
		if out.ByStatus == nil {
			out.ByStatus = map[string]uint64{}
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
