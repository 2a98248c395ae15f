package main

import (
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// newClusterDeliveriesCommand is "heddle cluster deliveries": the
// cross-shard deliveries pending in the shards' outboxes, as the node asked
// reads them (docs/sharding.md, "How phase 2 delivers").
func newClusterDeliveriesCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "deliveries",
		Short: "show the cross-shard deliveries pending in each shard's outbox (a sharded cluster)",
		Long: "Asks one node (the first of --addr that answers) what the outboxes of the cluster's shards\n" +
			"have pending: per source and target shard, how many entries, the first and last sequence,\n" +
			"and when the first was written. The node reads each shard it does not lead at the shard's\n" +
			"leader; where the leader cannot be asked, from its own replica (READ says replica: it may\n" +
			"trail the leader). An empty table means nothing is waiting to cross shards.",
		Args: noArgs,
	}
	f := addClusterFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cl, err := f.client()
		if err != nil {
			return err
		}
		rep, err := cl.DeliveryBacklog(cmd.Context())
		if err != nil {
			return err
		}
		if *f.format != formatTable {
			return printDoc(cmd.OutOrStdout(), *f.format, rep)
		}
		tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
		p := newPrinter(tw)
		p.printf("SOURCE\tTARGET\tPENDING\tFIRST\tLAST\tOLDEST_MS\tREAD\n")
		for _, b := range rep.Backlog {
			read := "leader"
			if b.Stale {
				read = "replica"
			}
			p.printf("%d\t%d\t%d\t%d\t%d\t%d\t%s\n", b.Source, b.Target, b.Pending, b.FirstSeq, b.LastSeq, b.OldestMS, read)
		}
		for _, k := range rep.Unread {
			p.printf("%s\t-\t?\t\t\t\tunread: no leader answered, and this node holds no replica\n", strconv.Itoa(k))
		}
		if err := p.err(); err != nil {
			return err
		}
		return tw.Flush()
	}
	return cmd
}
