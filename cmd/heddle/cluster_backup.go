package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/raftfsm"
)

// The HTTP client is a backup's view of a running cluster.
var _ raftfsm.BackupSource = (*httpapi.Client)(nil)

// newClusterBackupCommand is "heddle cluster backup": a backup of every
// shard of a running sharded cluster, through its nodes' admin API
// (docs/operations.md, "Backing up a sharded cluster").
func newClusterBackupCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "backup --to DIR",
		Short: "back up every shard of a running sharded cluster into DIR",
		Long: "Holds the cross-shard deliveries of every shard (runs go on; only deliveries between shards\n" +
			"wait), copies each shard on its leader into DIR/shard-NNNN.snap, releases the holds and writes\n" +
			"DIR/MANIFEST.json last, with each file's size and SHA-256. The copies form one consistent cut:\n" +
			"no delivery or acknowledgement crosses shards while they are taken. A hold expires after --hold\n" +
			"even if this command dies; a backup that outlasts it fails and must be run again with more.\n" +
			"DIR must not exist or be empty. Needs the admin role. Restore with \"heddle cluster restore\".",
		Args: noArgs,
	}
	f := addClusterFlags(cmd)
	var (
		to   string
		hold time.Duration
	)
	fs := cmd.Flags()
	fs.StringVar(&to, "to", "", "the backup's `directory`, new or empty (required)")
	fs.DurationVar(&hold, "hold", raftfsm.DefaultHoldTTL, "how long the deliveries may stay held (`duration`): the shards release them past it")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		switch {
		case to == "":
			return usagef("--to is required")
		case hold <= 0:
			return usagef("--hold %v: want a positive duration", hold)
		}
		cl, err := f.client()
		if err != nil {
			return err
		}
		host, _ := os.Hostname()
		m, err := raftfsm.Backup(cmd.Context(), cl, to, raftfsm.BackupOptions{Owner: "heddle cluster backup on " + host, HoldTTL: hold})
		if err != nil {
			return err
		}
		if *f.format != formatTable {
			return printDoc(cmd.OutOrStdout(), *f.format, m)
		}
		p := newPrinter(cmd.OutOrStdout())
		var bytes int64
		for _, s := range m.Files {
			p.printf("shard %d: %s, %d bytes, index %d\n", s.Shard, s.File, s.Bytes, s.AppliedIndex)
			bytes += s.Bytes
		}
		p.printf("backup %s: %d shards, %d bytes, in %s\n", m.Token, m.Shards, bytes, to)
		return p.err()
	}
	return cmd
}

// newClusterRestoreCommand is "heddle cluster restore": the directories of
// a new cluster's nodes, made from a backup.
func newClusterRestoreCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "restore --from BACKUP --dir DIR [--nodes N | --id ID --peers PEERS]",
		Short: "make a new sharded cluster's node directories from a backup",
		Long: "Checks the backup whole (its manifest, every file's size and SHA-256), then writes the\n" +
			"directories of a new cluster with the backup's shard count, every replica of a shard starting\n" +
			"from the shard's copy. Without --peers it makes DIR/n1 .. DIR/n<N> for \"heddle cluster up --dir DIR\n" +
			"--nodes N\" (same --nodes, --replicas, --base-port and --host); with --peers and --id it makes one\n" +
			"node's directory DIR for \"heddle server --id ID --dir DIR --peers PEERS\" (run it on every node, with\n" +
			"the same --peers and --replicas). The directories must not exist or be empty. Deliveries pending in\n" +
			"the backup are delivered once the new cluster runs.",
		Args: noArgs,
	}
	var (
		from, dir, id, peersFlag, host string
		nodes, replicas, base          int
	)
	fs := cmd.Flags()
	fs.StringVar(&from, "from", "", "the backup's `directory` (required)")
	fs.StringVar(&dir, "dir", "", "with --nodes, the parent `directory` of the nodes' directories; with --peers, the node's directory (required)")
	fs.IntVar(&nodes, "nodes", 3, "number of nodes of a local cluster, `N` from 1 to 9")
	fs.IntVar(&replicas, "replicas", 0, "replicas `R` of each shard (default min(3, nodes))")
	fs.IntVar(&base, "base-port", defaultHTTPPort, "HTTP `port` of node 1 of a local cluster, as cluster up takes it")
	fs.StringVar(&host, "host", "127.0.0.1", "the `address` the local cluster's nodes listen on")
	fs.StringVar(&id, "id", "", "with --peers, the `id` of the node to make")
	fs.StringVar(&peersFlag, "peers", "", "the new cluster's nodes, `id=raft-addr/http-addr`, comma-separated")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		switch {
		case from == "":
			return usagef("--from is required")
		case dir == "":
			return usagef("--dir is required")
		case peersFlag == "" && id != "":
			return usagef("--id needs --peers")
		case peersFlag != "" && id == "":
			return usagef("--peers needs --id, the node to make")
		case peersFlag == "" && (nodes < 1 || nodes > 9):
			return usagef("--nodes %d is not in [1, 9]", nodes)
		case replicas < 0:
			return usagef("--replicas %d is negative", replicas)
		}
		p := newPrinter(cmd.OutOrStdout())
		if peersFlag != "" {
			peers, err := parsePeers(peersFlag)
			if err != nil {
				return err
			}
			m, err := raftfsm.RestoreNode(raftfsm.RestoreConfig{From: from, Dir: dir, ID: id, Peers: peers, Replicas: replicas})
			if err != nil {
				return err
			}
			p.printf("node %s: restored %d shards of backup %s into %s\n", id, m.Shards, m.Token, dir)
			return p.err()
		}
		peers := localPeers(host, nodes, base)
		var m *raftfsm.BackupManifest
		for _, n := range peers {
			var err error
			m, err = raftfsm.RestoreNode(raftfsm.RestoreConfig{From: from, Dir: filepath.Join(dir, n.ID), ID: n.ID, Peers: peers, Replicas: replicas})
			if err != nil {
				return fmt.Errorf("node %s: %w", n.ID, err)
			}
		}
		args := []string{"heddle cluster up", "--dir", dir, "--nodes", fmt.Sprint(nodes)}
		if replicas > 0 {
			args = append(args, "--replicas", fmt.Sprint(replicas))
		}
		if base != defaultHTTPPort {
			args = append(args, "--base-port", fmt.Sprint(base))
		}
		if host != "127.0.0.1" {
			args = append(args, "--host", host)
		}
		p.printf("restored backup %s (%d shards) into %d nodes under %s; start them with: %s\n", m.Token, m.Shards, nodes, dir, strings.Join(args, " "))
		return p.err()
	}
	return cmd
}
