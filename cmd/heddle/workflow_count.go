package main

// This file is "heddle workflow count": how many runs match the filters of
// list, and how many of them are in each status. The HTTP API has no count
// route, so the command pages through the list API, engine.MaxPage runs a
// request; on a store of millions of runs that is thousands of requests,
// which the help says.

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
		Use:   "count [--query Q] [--status S] [--type TYPE] [-t QUEUE]",
		Short: "count workflow runs, filtered as list filters them, per status",
		Long: fmt.Sprintf("Counts the runs that match the filters, which are list's, in all and per status.\n"+
			"It reads every matching run through the list API, %d a request.\n\n", engine.MaxPage) + wfQueryHelp,
		Args: noArgs,
	}
	filter := addListFilterFlags(cmd)
	cmd.RunE = g.runE(func(c *wfCall, _ []string) error {
		q, err := filter.filter(time.Now())
		if err != nil {
			return err
		}
		svc, err := c.client()
		if err != nil {
			return err
		}
		out := wfCountOutput{ByStatus: map[string]uint64{}}
		err = q.All(c.ctx, svc, func(j *engine.Job) error {
			out.Count++
			out.ByStatus[j.Status.String()]++
			return nil
		})
		if err != nil {
			return err
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
