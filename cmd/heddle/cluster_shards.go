package main

// This file is a node of a sharded cluster (docs/sharding.md): starting one
// ("heddle server --shards S --peers ...", "heddle cluster up --shards S"),
// its shards in "heddle cluster status", and the placement's admin
// commands ("heddle cluster shard-leader", "heddle cluster rebalance").

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/metrics"
	"github.com/heddlewf/heddle/raftfsm"
)

// hasPlacement reports whether dir holds a node of a sharded cluster.
func hasPlacement(dir string) bool {
	if dir == "" {
		return false
	}
	_, err := os.Stat(filepath.Join(dir, "placement"))
	return err == nil
}

// sharded reports whether o starts a node of a sharded cluster.
func (o nodeOptions) sharded() bool {
	return o.shards > 0 || len(o.peers) > 0 || hasPlacement(o.dir)
}

// parsePeers reads --peers: "id=raft-addr/http-addr", comma-separated.
func parsePeers(s string) ([]raftfsm.PlacementNode, error) {
	var out []raftfsm.PlacementNode
	for _, p := range splitAddrs(s) {
		id, addrs, ok := strings.Cut(p, "=")
		raftAddr, httpAddr, ok2 := strings.Cut(addrs, "/")
		if !ok || !ok2 || id == "" || raftAddr == "" || httpAddr == "" {
			return nil, usagef("--peers: %q is not id=raft-addr/http-addr", p)
		}
		out = append(out, raftfsm.PlacementNode{ID: id, RaftAddr: raftAddr, HTTPAddr: httpAddr})
	}
	if len(out) == 0 {
		return nil, usagef("--peers names no node")
	}
	return out, nil
}

// startHost opens a node of a sharded cluster and serves its API, whose
// service routes every request to its shard.
// With --join, the node is new to a cluster that runs: it asks a member to
// add it (POST /v1/cluster/members, which the metadata group's leader
// answers) once its API serves.
func startHost(ctx context.Context, o nodeOptions, log *slog.Logger, m *metrics.Metrics) (*clusterNode, error) {
	ln, err := listen(o.httpAddr)
	if err != nil {
		return nil, err
	}
	h, err := raftfsm.OpenHost(raftfsm.HostConfig{Config: raftfsm.Config{ID: o.id, Dir: o.dir, RaftAddr: o.raftAddr,
		HTTPAddr: ln.Addr().String(), FailoverGrace: o.grace, Logger: log, Metrics: m, Dial: chaosDialer(o.chaosProxy, o.id),
		TLS: o.sec.peerTLS(), OnSchedulerError: func(err error) { log.Warn("leader's background work", "error", err) }},
		Peers: o.peers, Shards: o.shards, Replicas: o.replicas, Join: len(o.join) > 0, DeliverTo: o.sec.deliverTo()})
	if err != nil {
		return nil, errors.Join(err, ln.Close())
	}
	cfg := o.sec.apply(httpapi.ServerConfig{Service: httpapi.NewShardRouter(h), Cluster: h, Metrics: m, Logger: log})
	api, err := serveAPI(ln, cfg, o.sec, o.httpAddr, o.wrap)
	if err != nil {
		return nil, errors.Join(err, h.Close())
	}
	cn := &clusterNode{host: h, api: api}
	if len(o.join) > 0 {
		if err := joinCluster(ctx, o, h.RaftAddr(), api.addr()); err != nil {
			return nil, errors.Join(err, cn.close())
		}
	}
	return cn, nil
}

// clusterUpSharded is clusterUp for a sharded cluster: every node is
// started with the same peers, shards and replicas, and they form the
// groups among themselves.
func clusterUpSharded(w io.Writer, log *slog.Logger, dir, host, token string, nodes, base, shards, replicas int) (err error) {
	// Every node runs in this process: their replicas share its limit of
	// open files, which each node's own check cannot see.
	r := replicas
	if r == 0 {
		r = min(3, nodes)
	}
	if limit, ok := processFileLimit(); ok {
		if err := raftfsm.CheckReplicaFiles(shards*r, limit); err != nil {
			return fmt.Errorf("%d nodes in this process, %d shards of %d replicas: %w", nodes, shards, r, err)
		}
	}
	ctx, stop := untilSignal()
	defer stop()
	peers := localPeers(host, nodes, base)
	var running []*clusterNode
	defer func() {
		for i := len(running) - 1; i >= 0; i-- {
			err = errors.Join(err, running[i].close())
		}
	}()
	stdout := newPrinter(w)
	var httpAddrs []string
	for _, p := range peers {
		o := nodeOptions{id: p.ID, dir: filepath.Join(dir, p.ID), httpAddr: p.HTTPAddr, raftAddr: p.RaftAddr,
			sec: &security{token: token}, grace: 5 * time.Second, logger: log.With("node_id", p.ID),
			shards: shards, replicas: replicas, peers: peers}
		n, err := startNode(ctx, o)
		if err != nil {
			return fmt.Errorf("node %s: %w", o.id, err)
		}
		running = append(running, n)
		httpAddrs = append(httpAddrs, n.api.addr())
		pl := n.host.Placement()
		stdout.printf("node %s: http=%s raft=%s dir=%s shards=%v\n", o.id, n.api.addr(), n.raftAddr(), o.dir, pl.ShardsOf(o.id))
	}
	pl := running[0].host.Placement()
	stdout.printf("cluster up: %d nodes, %d shards of %d replicas; HEDDLE_ADDR=%s\n", nodes, pl.Shards, pl.Replicas, strings.Join(httpAddrs, ","))
	<-ctx.Done()
	stdout.println("cluster up: stopping")
	return stdout.err()
}

// processFileLimit is raftfsm.OpenFileLimit; tests replace it.
var processFileLimit = raftfsm.OpenFileLimit

// localPeers are the nodes of a local cluster (cluster up): node i is
// n<i>, with HTTP on base+2(i-1) and Raft on the next port.
func localPeers(host string, nodes, base int) []raftfsm.PlacementNode {
	addr := func(port int) string { return host + ":" + strconv.Itoa(port) }
	var peers []raftfsm.PlacementNode
	for i := 1; i <= nodes; i++ {
		peers = append(peers, raftfsm.PlacementNode{ID: "n" + strconv.Itoa(i),
			RaftAddr: addr(base + 2*(i-1) + 1), HTTPAddr: addr(base + 2*(i-1))})
	}
	return peers
}

// shardStatusDoc is one shard as one member sees it, in "cluster status".
type shardStatusDoc struct {
	Shard         int      `json:"shard"`
	State         string   `json:"state"`
	Term          uint64   `json:"term"`
	LeaderID      string   `json:"leader_id,omitempty"`
	CommitIndex   uint64   `json:"commit_index,omitempty"`
	AppliedIndex  uint64   `json:"applied_index"`
	Replicas      []string `json:"replicas,omitempty"`
	DesiredLeader string   `json:"desired_leader,omitempty"`
	MoveFrom      string   `json:"move_from,omitempty"`
	MoveTo        string   `json:"move_to,omitempty"`
	// MoveCancelling: the move was cancelled and is being undone.
	MoveCancelling bool `json:"move_cancelling,omitempty"`
}

func shardStatusOf(s httpapi.ClusterStatus) []shardStatusDoc {
	var out []shardStatusDoc
	for _, sh := range s.Shards {
		out = append(out, shardStatusDoc{Shard: sh.Shard, State: sh.State, Term: sh.Term, LeaderID: sh.LeaderID,
			CommitIndex: sh.CommitIndex, AppliedIndex: sh.AppliedIndex, Replicas: sh.Replicas, DesiredLeader: sh.DesiredLeader,
			MoveFrom: sh.MoveFrom, MoveTo: sh.MoveTo, MoveCancelling: sh.MoveCancelling})
	}
	return out
}

// shardRow is one shard of "cluster status", from every member's view.
type shardRow struct {
	leader, desired string
	replicas        []string
	// moveFrom and moveTo are set while a replica moves, and cancelling
	// once the move was cancelled and is being undone.
	moveFrom, moveTo string
	cancelling       bool
	term             uint64
	commit           uint64
	// leaderApplied is the last entry the leader applied to its state,
	// applied each replica's (by member).
	leaderApplied uint64
	applied       map[string]uint64
	seenLeader    bool // the leader itself answered
}

// printShards prints, under the members, one line per shard: its leader
// (and the one the placement wants), its replicas, term, the leader's
// commit index and each replica's lag: the entries the leader applied to
// its state that the replica has not (Raft's own entries, such as a new
// leader's barrier, are not counted; a follower learns that the last entry
// committed with the next one). A replica whose member did not answer
// shows "?".
func printShards(p *printer, views []clusterView) {
	rows := map[int]*shardRow{}
	for _, v := range views {
		if v.Status == nil {
			continue
		}
		for _, sh := range v.Status.Shards {
			r := rows[sh.Shard]
			if r == nil {
				r = &shardRow{applied: map[string]uint64{}}
				rows[sh.Shard] = r
			}
			r.applied[v.Status.ID] = sh.AppliedIndex
			r.replicas, r.desired, r.moveFrom, r.moveTo, r.cancelling = sh.Replicas, sh.DesiredLeader, sh.MoveFrom, sh.MoveTo, sh.MoveCancelling
			r.term = max(r.term, sh.Term)
			if sh.State == "Leader" {
				r.leader, r.commit, r.leaderApplied, r.seenLeader = v.Status.ID, sh.CommitIndex, sh.AppliedIndex, true
			} else if r.leader == "" {
				r.leader = sh.LeaderID
			}
			if !r.seenLeader {
				r.commit = max(r.commit, sh.CommitIndex)
				r.leaderApplied = max(r.leaderApplied, sh.AppliedIndex)
			}
		}
	}
	if len(rows) == 0 {
		return
	}
	shards := make([]int, 0, len(rows))
	for k := range rows {
		shards = append(shards, k)
	}
	slices.Sort(shards)
	p.println("")
	p.println("SHARD\tLEADER\tDESIRED\tTERM\tCOMMIT\tREPLICAS (LAG)")
	for _, k := range shards {
		r := rows[k]
		var reps []string
		ids := r.replicas
		if r.moveTo != "" {
			ids = append(slices.Clone(ids), r.moveTo)
		}
		for _, id := range ids {
			lag := "?"
			if a, ok := r.applied[id]; ok {
				lag = strconv.FormatUint(r.leaderApplied-min(a, r.leaderApplied), 10)
			}
			reps = append(reps, id+":"+lag)
		}
		leader := r.leader
		if leader == "" {
			leader = "-"
		}
		moving := ""
		switch {
		case r.moveTo != "" && r.cancelling:
			moving = fmt.Sprintf(" (cancelling the move of %s to %s)", r.moveFrom, r.moveTo)
		case r.moveTo != "":
			moving = fmt.Sprintf(" (moving %s to %s)", r.moveFrom, r.moveTo)
		}
		p.printf("%d\t%s\t%s\t%d\t%d\t%s%s\n", k, leader, r.desired, r.term, r.commit, strings.Join(reps, " "), moving)
	}
}

func newClusterShardLeaderCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "shard-leader SHARD NODE",
		Short: "make NODE the desired leader of SHARD (a sharded cluster)",
		Long: "Sets the shard's desired leader in the placement, through the metadata group's leader;\n" +
			"the shard's current leader then hands leadership over. It holds until changed again.",
		Args: exactArgs("SHARD", "NODE"),
	}
	f := addClusterFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		shard, err := parseShardArg(args[0])
		if err != nil {
			return err
		}
		cl, err := f.client()
		if err != nil {
			return err
		}
		v, err := cl.SetShardLeader(cmd.Context(), shard, args[1])
		if err != nil {
			return err
		}
		return printPlacementChange(cmd.OutOrStdout(), *f.format, v, fmt.Sprintf("shard %d: desired leader %s", shard, args[1]))
	}
	return cmd
}

func newClusterMoveShardCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "move-shard SHARD FROM TO",
		Short: "move SHARD's replica from node FROM to node TO (a sharded cluster)",
		Long: "Records the move in the placement, through the metadata group's leader, and returns; the shard's\n" +
			"leader then adds TO to the shard's Raft group, waits until it has caught up, makes it a voter, hands\n" +
			"leadership over if FROM leads, and removes FROM, whose node then deletes its replica. The shard\n" +
			"keeps serving meanwhile. \"heddle cluster status\" shows the move until it ends. TO must hold no\n" +
			"replica of SHARD, and a shard moves one replica at a time.",
		Args: exactArgs("SHARD", "FROM", "TO"),
	}
	f := addClusterFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		shard, err := parseShardArg(args[0])
		if err != nil {
			return err
		}
		cl, err := f.client()
		if err != nil {
			return err
		}
		v, err := cl.MoveReplica(cmd.Context(), shard, args[1], args[2])
		if err != nil {
			return err
		}
		return printPlacementChange(cmd.OutOrStdout(), *f.format, v, fmt.Sprintf("shard %d: moving its replica from %s to %s", shard, args[1], args[2]))
	}
	return cmd
}

func newClusterCancelMoveCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cancel-move SHARD",
		Short: "cancel SHARD's move of a replica under way (a sharded cluster)",
		Long: "Records the cancel in the placement, through the metadata group's leader, and returns; the shard's\n" +
			"leader then takes the arriving node out of the shard's Raft group and ends the move with the\n" +
			"replicas as they were. Use it for a move to a node that is down or cannot catch up, which would\n" +
			"otherwise wait for it. A move whose leaving node already left the group cannot be undone and\n" +
			"completes instead. \"heddle cluster status\" shows the cancel until it ends.",
		Args: exactArgs("SHARD"),
	}
	f := addClusterFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		shard, err := parseShardArg(args[0])
		if err != nil {
			return err
		}
		cl, err := f.client()
		if err != nil {
			return err
		}
		v, err := cl.CancelMove(cmd.Context(), shard)
		if err != nil {
			return err
		}
		return printPlacementChange(cmd.OutOrStdout(), *f.format, v, fmt.Sprintf("shard %d: cancelling its move", shard))
	}
	return cmd
}

func newClusterRebalanceCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rebalance",
		Short: "spread the shards' leaders over the nodes again (a sharded cluster)",
		Long:  "Sets every shard's desired leader back to the spread the cluster was created with.",
		Args:  noArgs,
	}
	f := addClusterFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cl, err := f.client()
		if err != nil {
			return err
		}
		v, err := cl.RebalanceLeaders(cmd.Context())
		if err != nil {
			return err
		}
		return printPlacementChange(cmd.OutOrStdout(), *f.format, v, "leaders rebalanced")
	}
	return cmd
}

func printPlacementChange(w io.Writer, format outputFormat, version uint64, line string) error {
	if format != formatTable {
		return printDoc(w, format, struct {
			Version uint64 `json:"placement_version"`
		}{version})
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := newPrinter(tw)
	p.printf("%s (placement version %d)\n", line, version)
	if err := p.err(); err != nil {
		return err
	}
	return tw.Flush()
}

// parseShardArg reads a command's SHARD argument.
func parseShardArg(arg string) (int, error) {
	shard, err := strconv.Atoi(arg)
	if err != nil || shard < 0 {
		return 0, usagef("SHARD %q is not a shard number", arg)
	}
	return shard, nil
}
