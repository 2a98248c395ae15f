package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/heddlewf/heddle/engine/httpapi"
)

// runClusterCommand dispatches "heddle cluster <sub>".
func runClusterCommand(args []string, stdout, stderr io.Writer) int {
	usage := func(w io.Writer) {
		fmt.Fprint(w, "Usage: heddle cluster <status|remove|transfer-leader|up> [flags]\n\n"+
			"  status            each member, its role and its applied index\n"+
			"  remove ID         take a member out of the cluster\n"+
			"  transfer-leader   hand leadership to another member\n"+
			"  up                run a local cluster of N nodes in this process\n\n"+
			"Run \"heddle cluster <sub> -h\" for its flags.\n")
	}
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "status":
		return clusterStatus(args[1:], stdout, stderr)
	case "remove":
		return clusterRemove(args[1:], stdout, stderr)
	case "transfer-leader":
		return clusterTransfer(args[1:], stdout, stderr)
	case "up":
		return clusterUp(args[1:], stdout, stderr)
	case "-h", "-help", "--help":
		usage(stdout)
		return 0
	}
	fmt.Fprintf(stderr, "heddle cluster: unknown subcommand %q\n\n", args[0])
	usage(stderr)
	return 2
}

// clusterFlags are the flags every client subcommand shares.
type clusterFlags struct {
	addr, token *string
	json        *bool
}

// defaultAddr is the API address clients use when --addr is not given.
func defaultAddr() string {
	if a := os.Getenv("HEDDLE_ADDR"); a != "" {
		return a
	}
	return "127.0.0.1:7233"
}

func newClusterFlags(fs *flag.FlagSet) clusterFlags {
	return clusterFlags{
		addr:  fs.String("addr", defaultAddr(), "HTTP address(es) of cluster members, comma-separated (default $HEDDLE_ADDR or 127.0.0.1:7233)"),
		token: fs.String("token", os.Getenv("HEDDLE_TOKEN"), "the API's bearer token (default $HEDDLE_TOKEN)"),
		json:  fs.Bool("json", false, "print JSON"),
	}
}

func (f clusterFlags) client() (*httpapi.Client, error) {
	return httpapi.NewClient(httpapi.ClientConfig{Addrs: splitAddrs(*f.addr), Token: *f.token, RetryTimeout: 10 * time.Second})
}

// parseSub parses a subcommand's flags, allowing want positional arguments.
func parseSub(fs *flag.FlagSet, args []string, want int) ([]string, int) {
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		if err == flag.ErrHelp {
			return nil, 0
		}
		return nil, 2
	}
	if len(pos) != want {
		fmt.Fprintf(fs.Output(), "heddle %s: want %d argument(s), got %d\n", fs.Name(), want, len(pos))
		fs.Usage()
		return nil, 2
	}
	return pos, -1
}

func clusterStatus(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cluster status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := newClusterFlags(fs)
	if _, code := parseSub(fs, args, 0); code >= 0 {
		return code
	}
	if len(splitAddrs(*cf.addr)) == 0 {
		fmt.Fprintln(stderr, "heddle cluster status: --addr names no address")
		return 2
	}
	ctx := context.Background()
	// Ask every member given, so that an operator sees each one's view
	// (a lagging applied index, a node that thinks it leads).
	type view struct {
		Addr   string                 `json:"addr"`
		Status *httpapi.ClusterStatus `json:"status,omitempty"`
		Error  string                 `json:"error,omitempty"`
	}
	var views []view
	for _, a := range splitAddrs(*cf.addr) {
		one, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{a}, Token: *cf.token, RetryTimeout: 2 * time.Second})
		v := view{Addr: a}
		if err == nil {
			var st httpapi.ClusterStatus
			if st, err = one.Status(ctx); err == nil {
				v.Status = &st
			}
		}
		if err != nil {
			v.Error = err.Error()
		}
		views = append(views, v)
	}
	if *cf.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(views)
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ADDR\tID\tSTATE\tTERM\tAPPLIED\tLEADER\tMEMBERS")
		for _, v := range views {
			if v.Status == nil {
				fmt.Fprintf(tw, "%s\t-\tunreachable\t\t\t\t%s\n", v.Addr, v.Error)
				continue
			}
			s := v.Status
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%d\n", v.Addr, s.ID, s.State, s.Term, s.AppliedIndex, s.LeaderID, len(s.Members))
		}
		tw.Flush()
	}
	for _, v := range views {
		if v.Status == nil {
			return 1
		}
	}
	return 0
}

func clusterRemove(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cluster remove", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := newClusterFlags(fs)
	rest, code := parseSub(fs, args, 1)
	if code >= 0 {
		return code
	}
	cl, err := cf.client()
	if err != nil {
		fmt.Fprintf(stderr, "heddle cluster remove: %v\n", err)
		return 2
	}
	if err := cl.Remove(context.Background(), rest[0]); err != nil {
		fmt.Fprintf(stderr, "heddle cluster remove: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "removed %s\n", rest[0])
	return 0
}

func clusterTransfer(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cluster transfer-leader", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := newClusterFlags(fs)
	if _, code := parseSub(fs, args, 0); code >= 0 {
		return code
	}
	cl, err := cf.client()
	if err != nil {
		fmt.Fprintf(stderr, "heddle cluster transfer-leader: %v\n", err)
		return 2
	}
	if err := cl.TransferLeader(context.Background()); err != nil {
		fmt.Fprintf(stderr, "heddle cluster transfer-leader: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "leadership transferred")
	return 0
}

// clusterUp runs a local cluster in this process: node i listens on
// base+2(i-1) for HTTP and the port after it for Raft. With the same --dir
// a second run restarts the same cluster from its directories.
func clusterUp(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cluster up", flag.ContinueOnError)
	fs.SetOutput(stderr)
	nodes := fs.Int("nodes", 3, "number of nodes")
	dir := fs.String("dir", "", "parent directory of the nodes' directories (required)")
	base := fs.Int("base-port", 7233, "HTTP port of node 1; node i uses base+2(i-1) for HTTP and the next port for Raft")
	host := fs.String("host", "127.0.0.1", "the address the nodes listen on")
	token := fs.String("token", os.Getenv("HEDDLE_TOKEN"), "bearer token the API requires (default $HEDDLE_TOKEN)")
	if _, code := parseSub(fs, args, 0); code >= 0 {
		return code
	}
	switch {
	case *dir == "":
		fmt.Fprintln(stderr, "heddle cluster up: --dir is required")
		return 2
	case *nodes < 1 || *nodes > 9:
		fmt.Fprintf(stderr, "heddle cluster up: --nodes %d is not in [1, 9]\n", *nodes)
		return 2
	case *base < 1 || *base+2**nodes > 65535:
		fmt.Fprintf(stderr, "heddle cluster up: --base-port %d leaves no room for %d nodes\n", *base, *nodes)
		return 2
	}
	ctx, stop := untilSignal()
	defer stop()
	addr := func(port int) string { return *host + ":" + strconv.Itoa(port) }
	var running []*clusterNode
	defer func() {
		for i := len(running) - 1; i >= 0; i-- {
			running[i].close()
		}
	}()
	var httpAddrs []string
	for i := 1; i <= *nodes; i++ {
		o := nodeOptions{id: "n" + strconv.Itoa(i), dir: filepath.Join(*dir, "n"+strconv.Itoa(i)),
			httpAddr: addr(*base + 2*(i-1)), raftAddr: addr(*base + 2*(i-1) + 1), token: *token, grace: 5 * time.Second}
		if i == 1 {
			o.bootstrap = true
		} else {
			o.join = httpAddrs[:1]
		}
		n, err := startNode(ctx, o)
		if err != nil {
			fmt.Fprintf(stderr, "heddle cluster up: node %s: %v\n", o.id, err)
			return 1
		}
		running = append(running, n)
		httpAddrs = append(httpAddrs, n.api.addr())
		fmt.Fprintf(stdout, "node %s: http=%s raft=%s dir=%s\n", o.id, n.api.addr(), n.node.RaftAddr(), o.dir)
	}
	fmt.Fprintf(stdout, "cluster up: %d nodes; HEDDLE_ADDR=%s\n", *nodes, joinAddrs(httpAddrs))
	<-ctx.Done()
	fmt.Fprintln(stdout, "cluster up: stopping")
	return 0
}

func joinAddrs(a []string) string {
	out := ""
	for i, s := range a {
		if i > 0 {
			out += ","
		}
		out += s
	}
	return out
}
