// Command cluster-client runs a workflow on a three-node heddle cluster
// through the HTTP API, the way a worker or a client in another process
// does, and moves the cluster's leadership while the workflow waits on a
// timer. With -addrs it uses a cluster that is already running (for example
// one started with `heddle cluster up`); without, it starts three nodes in
// this process on loopback ports chosen at random, each with its own
// temporary directory, and stops them at the end.
//
// It exits 0 when the workflow's result is right and 1 otherwise.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/raftfsm"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// Greet and its two activities are what the cluster runs.
func Greet(ctx workflow.Context, name string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var title string
	if err := workflow.ExecuteActivity(ctx, LookupTitle, name).Get(ctx, &title); err != nil {
		return "", err
	}
	// A durable timer: it fires on whichever node leads when it is due.
	if err := workflow.Sleep(ctx, 2*time.Second); err != nil {
		return "", err
	}
	var greeting string
	err := workflow.ExecuteActivity(ctx, Compose, title, name).Get(ctx, &greeting)
	return greeting, err
}

func LookupTitle(ctx context.Context, name string) (string, error) { return "Dr.", nil }

func Compose(ctx context.Context, title, name string) (string, error) {
	return "hello, " + title + " " + name, nil
}

func main() {
	addrs := flag.String("addrs", "", "HTTP addresses of a running cluster's nodes, comma-separated (default: start three nodes here)")
	flag.Parse()
	if err := run(*addrs); err != nil {
		fmt.Fprintln(os.Stderr, "cluster-client:", err)
		os.Exit(1)
	}
}

func run(addrList string) (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	addrs := strings.Split(addrList, ",")
	local := addrList == ""
	if local {
		c, err := startCluster(ctx)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, c.stop()) }()
		addrs = c.httpAddrs
	}

	// The client implements engine.Service: the SDK runs on it unchanged.
	// It follows the leader, and retries a command whose outcome it could
	// not learn under the same request id, so the command applies once.
	svc, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: addrs})
	if err != nil {
		return err
	}
	w := worker.New(client.New(svc), "greetings", worker.Options{})
	w.RegisterWorkflow(Greet)
	w.RegisterActivity(LookupTitle)
	w.RegisterActivity(Compose)
	if err := w.Start(); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, w.Shutdown(context.Background())) }()

	c := client.New(svc)
	id := fmt.Sprintf("greet-%d", time.Now().UnixNano())
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "greetings"}, Greet, "Ada")
	if err != nil {
		return err
	}
	before, err := svc.Status(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("started %s; leader %s\n", run.GetID(), before.LeaderID)
	if local {
		// Any node forwards the request to the leader, which hands over.
		if err := svc.TransferLeader(ctx); err != nil {
			return err
		}
		after, err := waitNewLeader(ctx, svc, before.LeaderID)
		if err != nil {
			return err
		}
		fmt.Printf("leadership moved from %s to %s while the workflow waited\n", before.LeaderID, after)
	}
	var greeting string
	if err := run.Get(ctx, &greeting); err != nil {
		return err
	}
	fmt.Printf("%s: %s\n", run.GetID(), greeting)
	if greeting != "hello, Dr. Ada" {
		return fmt.Errorf("the greeting is %q, want %q", greeting, "hello, Dr. Ada")
	}
	return nil
}

// waitNewLeader waits until the cluster names a leader other than old.
func waitNewLeader(ctx context.Context, svc *httpapi.Client, old string) (string, error) {
	for {
		st, err := svc.Status(ctx)
		if err == nil && st.LeaderID != "" && st.LeaderID != old {
			return st.LeaderID, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("no new leader after %s: %w", old, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// cluster is three nodes in this process, each a Raft member with its own
// directory and its HTTP API, as `heddle server` runs one.
type cluster struct {
	dir       string
	nodes     []*raftfsm.Node
	servers   []*http.Server
	apis      []*httpapi.Server
	httpAddrs []string
}

func startCluster(ctx context.Context) (c *cluster, err error) {
	dir, err := os.MkdirTemp("", "heddle-cluster-")
	if err != nil {
		return nil, err
	}
	c = &cluster{dir: dir}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.stop())
		}
	}()
	for i := 1; i <= 3; i++ {
		id := fmt.Sprintf("n%d", i)
		// Listen first, so the node records the address clients reach.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		n, err := raftfsm.Open(raftfsm.Config{ID: id, Dir: filepath.Join(dir, id), RaftAddr: "127.0.0.1:0",
			HTTPAddr: ln.Addr().String(), Bootstrap: i == 1})
		if err != nil {
			return nil, errors.Join(err, ln.Close())
		}
		c.nodes = append(c.nodes, n)
		api, err := httpapi.NewServer(httpapi.ServerConfig{Service: n.Engine(), Cluster: n})
		if err != nil {
			return nil, errors.Join(err, ln.Close())
		}
		srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }() // ends with ErrServerClosed at stop
		c.apis, c.servers = append(c.apis, api), append(c.servers, srv)
		c.httpAddrs = append(c.httpAddrs, ln.Addr().String())
		if i == 1 {
			if _, err := n.WaitLeader(ctx); err != nil {
				return nil, err
			}
			continue
		}
		// Join through the first node's API, as `heddle server --join` does.
		admin, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: c.httpAddrs[:1]})
		if err != nil {
			return nil, err
		}
		if err := admin.Join(ctx, id, n.RaftAddr(), ln.Addr().String()); err != nil {
			return nil, fmt.Errorf("join %s: %w", id, err)
		}
	}
	// Every node knows the leader and all three members before work starts.
	for _, addr := range c.httpAddrs {
		node, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{addr}})
		if err != nil {
			return nil, err
		}
		for {
			st, err := node.Status(ctx)
			if err == nil && st.LeaderID != "" && len(st.Members) == 3 {
				break
			}
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("node at %s did not see three members and a leader: %w", addr, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	fmt.Printf("three nodes up: %s\n", strings.Join(c.httpAddrs, ","))
	return c, nil
}

// stop ends the long polls, the HTTP servers and the nodes, and removes the
// directories.
func (c *cluster) stop() error {
	var errs []error
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i, srv := range c.servers {
		c.apis[i].Close()
		errs = append(errs, srv.Shutdown(ctx))
	}
	for _, n := range c.nodes {
		errs = append(errs, n.Close())
	}
	errs = append(errs, os.RemoveAll(c.dir))
	return errors.Join(errs...)
}
