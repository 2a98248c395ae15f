package main

// This file is "heddle cluster": the status of each member, removing a
// member, handing leadership over, and "up", a local cluster in this
// process for trying heddle out.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/spf13/cobra"
)

func newClusterCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "status, remove, transfer-leader, or up (a local cluster)",
		Long:  "Administers a heddle cluster through the HTTP API of its members, or runs a local one.",
		Args:  unknownCommandArgs,
		RunE:  missingCommand,
	}
	cmd.AddCommand(newClusterStatusCommand(), newClusterRemoveCommand(), newClusterTransferCommand(), newClusterUpCommand())
	cmd.AddCommand(newClusterShardLeaderCommand(), newClusterRebalanceCommand(), newClusterMoveShardCommand(), newClusterCancelMoveCommand())
	cmd.AddCommand(newClusterDeliveriesCommand(), newClusterBackupCommand(), newClusterRestoreCommand())
	return cmd
}

// clusterFlags are the flags every client subcommand of cluster has.
type clusterFlags struct {
	addr, token, tlsCA string
	format             *outputFormat
}

func addClusterFlags(cmd *cobra.Command) *clusterFlags {
	f := &clusterFlags{}
	fs := cmd.Flags()
	fs.StringVar(&f.addr, "addr", "", "HTTP `addresses` of cluster members, comma-separated (default $HEDDLE_ADDR, else "+defaultAddr+")")
	fs.StringVar(&f.token, "token", "", "bearer `token` of the HTTP API (default $HEDDLE_TOKEN)")
	fs.StringVar(&f.tlsCA, "tls-ca", "", tlsCAUsage)
	f.format = addOutputFlags(fs)
	completeOutput(cmd)
	return f
}

// addrs returns the members to ask.
func (f *clusterFlags) addrs() ([]string, error) {
	a := splitAddrs(envDefault(f.addr, "HEDDLE_ADDR", defaultAddr))
	if len(a) == 0 {
		return nil, usagef("--addr names no address")
	}
	return a, nil
}

func (f *clusterFlags) client() (*httpapi.Client, error) {
	addrs, err := f.addrs()
	if err != nil {
		return nil, err
	}
	tlsConfig, err := clientTLSFor(f.tlsCA)
	if err != nil {
		return nil, err
	}
	refusals := &nodeRefusals{}
	c, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: addrs, Token: envDefault(f.token, "HEDDLE_TOKEN", ""), TLS: tlsConfig,
		RetryTimeout: 10 * time.Second, OnRetry: stopWhenAllRefuse(addrs, refusals)})
	if err != nil {
		return nil, usagef("--addr %q: %v", f.addr, err)
	}
	refusals.setNamed(c.Addrs())
	return c, nil
}

// clusterView is one member's answer to "cluster status", as JSON.
type clusterView struct {
	Addr string `json:"addr"`
	// Discovered: --addr did not name the member; another member's list
	// of members did.
	Discovered bool `json:"discovered,omitempty"`
	// Ready is what the member's /readyz answered; NotReady says why not.
	Ready    bool              `json:"ready"`
	NotReady string            `json:"not_ready,omitempty"`
	Status   *clusterStatusDoc `json:"status,omitempty"`
	Error    string            `json:"error,omitempty"`
}

// clusterStatusDoc is a member's view of the cluster. It is the CLI's own
// type, like the workflow documents, so that its JSON stays put whatever
// the API's types become.
type clusterStatusDoc struct {
	ID           string             `json:"id"`
	State        string             `json:"state"`
	Term         uint64             `json:"term"`
	LeaderID     string             `json:"leader_id,omitempty"`
	LeaderHTTP   string             `json:"leader_http,omitempty"`
	CommitIndex  uint64             `json:"commit_index,omitempty"`
	AppliedIndex uint64             `json:"applied_index"`
	LastIndex    uint64             `json:"last_index,omitempty"`
	Members      []clusterMemberDoc `json:"members,omitempty"`
	// A sharded cluster: the shard count, the placement's version and
	// the shards this member holds (the fields above are then the
	// metadata group's).
	ShardCount       int              `json:"shard_count,omitempty"`
	PlacementVersion uint64           `json:"placement_version,omitempty"`
	Shards           []shardStatusDoc `json:"shards,omitempty"`
}

type clusterMemberDoc struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	HTTPAddr string `json:"http_addr,omitempty"`
	Voter    bool   `json:"voter,omitempty"`
	Leader   bool   `json:"leader,omitempty"`
}

func clusterStatusOf(s httpapi.ClusterStatus) *clusterStatusDoc {
	d := &clusterStatusDoc{ID: s.ID, State: s.State, Term: s.Term, LeaderID: s.LeaderID, LeaderHTTP: s.LeaderHTTP,
		CommitIndex: s.CommitIndex, AppliedIndex: s.AppliedIndex, LastIndex: s.LastIndex,
		ShardCount: s.ShardCount, PlacementVersion: s.PlacementVersion, Shards: shardStatusOf(s)}
	for _, m := range s.Members {
		d.Members = append(d.Members, clusterMemberDoc{ID: m.ID, RaftAddr: m.RaftAddr, HTTPAddr: m.HTTPAddr, Voter: m.Voter, Leader: m.Leader})
	}
	return d
}

func newClusterStatusCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "each member, its role, its applied index and whether it is ready",
		Long: "Asks every member named by --addr whether it is alive (/healthz) and ready\n" +
			"(/readyz: a known leader, its state caught up) and for its view of the cluster, so\n" +
			"that a lagging applied index or a node that thinks it leads shows. The members the\n" +
			"answers list and --addr does not name are asked too (unless --named-only), so that\n" +
			"one address shows the whole cluster: every member and, sharded, every shard. Exits 1\n" +
			"when one does not answer.",
		Args: noArgs,
	}
	f := addClusterFlags(cmd)
	namedOnly := cmd.Flags().Bool("named-only", false, "ask only the members --addr names, not the others they list")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		addrs, err := f.addrs()
		if err != nil {
			return err
		}
		token := envDefault(f.token, "HEDDLE_TOKEN", "")
		tlsConfig, err := clientTLSFor(f.tlsCA)
		if err != nil {
			return err
		}
		ask := func(a string) clusterView {
			v := clusterView{Addr: a}
			one, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{a}, Token: token, TLS: tlsConfig, RetryTimeout: 2 * time.Second})
			if err == nil {
				err = probeMember(cmd.Context(), one, &v)
			}
			if err == nil {
				var st httpapi.ClusterStatus
				if st, err = one.Status(cmd.Context()); err == nil {
					v.Status = clusterStatusOf(st)
				}
			}
			if err != nil {
				v.Error = err.Error()
			}
			return v
		}
		// The members are asked all at once: one that is down costs its
		// timeout once, not once per member after it.
		askAll := func(addrs []string, discovered bool) []clusterView {
			out := make([]clusterView, len(addrs))
			var wg sync.WaitGroup
			for i, a := range addrs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					out[i] = ask(a)
					out[i].Discovered = discovered
				}()
			}
			wg.Wait()
			return out
		}
		views := askAll(addrs, false)
		if !*namedOnly {
			views = append(views, askAll(unnamedMembers(views), true)...)
		}
		unreachable := 0
		for _, v := range views {
			if v.Status == nil {
				unreachable++
			}
		}
		if err := printClusterStatus(cmd.OutOrStdout(), *f.format, views); err != nil {
			return err
		}
		if unreachable > 0 {
			// Exit status 1 says it already; the line only names how many.
			_, _ = fmt.Fprintf(cmd.ErrOrStderr(), "%s: %d of %d members did not answer\n", cmd.CommandPath(), unreachable, len(views))
			return exitError{code: 1}
		}
		return nil
	}
	return cmd
}

// stopWhenAllRefuse is an API client's OnRetry that ends the call at once,
// naming the addresses tried, when every one of addrs refused the
// connection or names no host before any node answered (nodeRefusals:
// no node runs there, and nothing was sent); other failures are retried
// until the client's RetryTimeout (a leader being elected).
func stopWhenAllRefuse(addrs []string, refusals *nodeRefusals) func(addr string, err error) error {
	return func(addr string, err error) error {
		if allFailed, noHost := refusals.note(addr, err, true); allFailed {
			return &wfNoNodeError{addrs: addrs, err: err, refused: !noHost, unknownHost: noHost, noRetryFlag: true}
		}
		return nil
	}
}

// unnamedMembers returns the HTTP addresses of the members that views
// list and that none of them is: neither asked at that address nor
// answering with that member's id. A member listed without an address (a
// node that has not announced one yet) cannot be asked.
func unnamedMembers(views []clusterView) []string {
	asked, seen := map[string]bool{}, map[string]bool{}
	for _, v := range views {
		asked[hostPortOf(v.Addr)] = true
		if v.Status != nil {
			seen[v.Status.ID] = true
		}
	}
	var out []string
	for _, v := range views {
		if v.Status == nil {
			continue
		}
		for _, m := range v.Status.Members {
			if m.HTTPAddr == "" || seen[m.ID] || asked[hostPortOf(m.HTTPAddr)] {
				continue
			}
			asked[hostPortOf(m.HTTPAddr)], seen[m.ID] = true, true
			out = append(out, m.HTTPAddr)
		}
	}
	return out
}

// hostPortOf returns an address without its scheme and trailing slash:
// --addr may name a member as http://host:port/ where the members list it
// as host:port.
func hostPortOf(addr string) string {
	a := strings.TrimRight(strings.TrimSpace(addr), "/")
	if _, rest, ok := strings.Cut(a, "://"); ok {
		return rest
	}
	return a
}

func printClusterStatus(w io.Writer, format outputFormat, views []clusterView) error {
	switch format {
	case formatJSON:
		return printDoc(w, format, views)
	case formatJSONL:
		return printLines(w, views)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := newPrinter(tw)
	p.println("ADDR\tID\tSTATE\tTERM\tAPPLIED\tLEADER\tMEMBERS\tREADY")
	for _, v := range views {
		if v.Status == nil {
			p.printf("%s\t-\tunreachable\t\t\t\t\t%s\n", v.Addr, v.Error)
			continue
		}
		s := v.Status
		ready := "yes"
		if !v.Ready {
			ready = "no: " + v.NotReady
		}
		p.printf("%s\t%s\t%s\t%d\t%d\t%s\t%d\t%s\n", v.Addr, s.ID, s.State, s.Term, s.AppliedIndex, s.LeaderID, len(s.Members), ready)
	}
	printShards(p, views)
	if err := p.err(); err != nil {
		return err
	}
	return tw.Flush()
}

// clusterChange is the JSON document of remove and transfer-leader.
type clusterChange struct {
	Removed            string `json:"removed,omitempty"`
	LeadershipTransfer bool   `json:"leadership_transferred,omitempty"`
}

func newClusterRemoveCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "remove ID",
		Short: "take a member out of the cluster",
		Long:  "Takes the member with node id ID out of the cluster's configuration.",
		Args:  exactArgs("ID"),
	}
	f := addClusterFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		cl, err := f.client()
		if err != nil {
			return err
		}
		if err := cl.Remove(cmd.Context(), args[0]); err != nil {
			return err
		}
		if *f.format != formatTable {
			return printDoc(cmd.OutOrStdout(), *f.format, clusterChange{Removed: args[0]})
		}
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", args[0])
		return err
	}
	return cmd
}

func newClusterTransferCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "transfer-leader",
		Short: "hand leadership to another member",
		Long:  "Asks the leader to hand leadership to another member, as before taking it down.",
		Args:  noArgs,
	}
	f := addClusterFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cl, err := f.client()
		if err != nil {
			return err
		}
		if err := cl.TransferLeader(cmd.Context()); err != nil {
			return err
		}
		if *f.format != formatTable {
			return printDoc(cmd.OutOrStdout(), *f.format, clusterChange{LeadershipTransfer: true})
		}
		_, err = fmt.Fprintln(cmd.OutOrStdout(), "leadership transferred")
		return err
	}
	return cmd
}

// newClusterUpCommand runs a local cluster in this process: node i listens
// on base+2(i-1) for HTTP and the port after it for Raft. With the same
// --dir a second run restarts the same cluster from its directories.
func newClusterUpCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "up --dir DIR [--nodes N] [--shards S] [--base-port PORT]",
		Short: "run a local cluster of N nodes in this process",
		Long: "Runs a local cluster of N nodes in this process until it is interrupted. Node i\n" +
			"keeps its data in DIR/n<i>; run again with the same --dir to restart the same cluster.\n" +
			"With --shards S above 1 the cluster is sharded: S Raft groups, their leaders spread\n" +
			"over the nodes (docs/sharding.md).",
		Args: noArgs,
	}
	fs := cmd.Flags()
	var (
		nodes, base, shards, replicas int
		dir, host, token              string
	)
	fs.IntVar(&nodes, "nodes", 3, "number of nodes, `N` from 1 to 9")
	fs.IntVar(&shards, "shards", 1, "number of shards, `S` from 1 to 4096; 1 is a cluster of one Raft group")
	fs.IntVar(&replicas, "replicas", 0, "replicas `R` of each shard, with --shards above 1 (default min(3, N))")
	fs.StringVar(&dir, "dir", "", "parent `directory` of the nodes' directories (required)")
	fs.IntVar(&base, "base-port", defaultHTTPPort, "HTTP `port` of node 1; node i uses base+2(i-1) for HTTP and the next port for Raft")
	fs.StringVar(&host, "host", "127.0.0.1", "the `address` the nodes listen on")
	fs.StringVar(&token, "token", "", tokenUsage)
	obs := addObserveFlags(fs, "warn")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		log, err := obs.logger(cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		if obs.pprofAddr != "" {
			if err := checkPprofAddr(obs.pprofAddr); err != nil {
				return err
			}
		}
		switch {
		case dir == "":
			return usagef("--dir is required")
		case nodes < 1 || nodes > 9:
			return usagef("--nodes %d is not in [1, 9]", nodes)
		case base < 1 || base+2*nodes > 65535:
			return usagef("--base-port %d leaves no room for %d nodes", base, nodes)
		case shards < 1 || shards > 4096:
			return usagef("--shards %d is not in [1, 4096]", shards)
		case replicas < 0 || replicas > nodes:
			return usagef("--replicas %d is not in [1, %d]", replicas, nodes)
		case replicas > 0 && shards == 1:
			return usagef("--replicas needs --shards above 1")
		}
		// A directory that holds a sharded cluster restarts it: its nodes
		// keep the shard count they were created with, and a --shards that
		// differs is refused by the nodes.
		restartSharded := hasPlacement(filepath.Join(dir, "n1"))
		if restartSharded && !fs.Changed("shards") {
			shards = 0
		}
		pp, err := startPprof(obs.pprofAddr, log)
		if err != nil {
			return err
		}
		defer pp.close()
		if shards > 1 || restartSharded {
			return clusterUpSharded(cmd.OutOrStdout(), log, dir, host, envDefault(token, "HEDDLE_TOKEN", ""), nodes, base, shards, replicas)
		}
		return clusterUp(cmd.OutOrStdout(), log, dir, host, envDefault(token, "HEDDLE_TOKEN", ""), nodes, base)
	}
	return cmd
}

// clusterUp starts the nodes one by one, each joining through the first,
// and runs them until SIGINT or SIGTERM.
func clusterUp(w io.Writer, log *slog.Logger, dir, host, token string, nodes, base int) (err error) {
	ctx, stop := untilSignal()
	defer stop()
	addr := func(port int) string { return host + ":" + strconv.Itoa(port) }
	var running []*clusterNode
	defer func() {
		for i := len(running) - 1; i >= 0; i-- {
			err = errors.Join(err, running[i].close())
		}
	}()
	// A line that could not be printed does not stop the cluster; it makes
	// the exit status say so once the cluster has stopped.
	stdout := newPrinter(w)
	var httpAddrs []string
	for i := 1; i <= nodes; i++ {
		o := nodeOptions{id: "n" + strconv.Itoa(i), dir: filepath.Join(dir, "n"+strconv.Itoa(i)),
			httpAddr: addr(base + 2*(i-1)), raftAddr: addr(base + 2*(i-1) + 1), sec: &security{token: token}, grace: 5 * time.Second,
			logger: log.With("node_id", "n"+strconv.Itoa(i))}
		if i == 1 {
			o.bootstrap = true
		} else {
			o.join = httpAddrs[:1]
		}
		n, err := startNode(ctx, o)
		if err != nil {
			return fmt.Errorf("node %s: %w", o.id, err)
		}
		running = append(running, n)
		httpAddrs = append(httpAddrs, n.api.addr())
		stdout.printf("node %s: http=%s raft=%s dir=%s\n", o.id, n.api.addr(), n.raftAddr(), o.dir)
	}
	stdout.printf("cluster up: %d nodes; HEDDLE_ADDR=%s\n", nodes, strings.Join(httpAddrs, ","))
	<-ctx.Done()
	stdout.println("cluster up: stopping")
	return stdout.err()
}

// notReadyReason returns the why of a member's /readyz refusal, "httpapi:
// not ready: raftfsm: not ready: <why>". A sharded node names the group
// that is not ready before the why ("shard 2: raftfsm: not ready: this
// Follower ..."), and the shard is kept: the row's state is the metadata
// group's, and a why about a shard's group read as the member's own ("n1
// Leader ... no: this Follower ...").
func notReadyReason(msg string) string {
	msg = strings.TrimPrefix(msg, "httpapi: not ready: ")
	return strings.Replace(msg, "raftfsm: not ready: ", "", 1)
}

// probeMember asks a member whether it is alive and ready, into v. It
// returns an error only when the member does not answer as alive; a member
// that answers "not ready" is shown as such.
func probeMember(ctx context.Context, c *httpapi.Client, v *clusterView) error {
	if err := c.Live(ctx); err != nil {
		return err
	}
	err := c.Ready(ctx)
	switch {
	case err == nil:
		v.Ready = true
	case errors.Is(err, httpapi.ErrNotReady):
		v.NotReady = notReadyReason(err.Error())
	default:
		return err
	}
	return nil
}
