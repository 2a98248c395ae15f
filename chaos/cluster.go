package chaos

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/heddlewf/heddle/engine/httpapi"
)

// node is one `heddle server` process and what it needs to be restarted
// on the same directory and addresses.
type node struct {
	id, dir, http, raft string
	proc                *proc
	paused              bool
	status              *httpapi.Client // asks this node alone
}

// cluster is three server processes whose Raft connections go through
// one proxy. The nodes run as a deployment should: the API over TLS and
// Raft over mutual TLS, with certificates of a CA made for the run, so
// the proxy relays only ciphertext and every fault is injected into
// secured connections.
type cluster struct {
	bin   string
	logs  string
	ps    *procs
	proxy *Proxy
	nodes []*node
	certs *runCerts
	// shards is the shard count of a sharded cluster (docs/sharding.md),
	// 0 for a cluster of one Raft group. A sharded cluster has four nodes,
	// each shard three replicas on three of them, so that a replica can
	// move to the fourth during the run.
	shards int
}

// shardedNodes is the node count of a sharded chaos cluster.
const shardedNodes = 4

func startCluster(ctx context.Context, bin, dir, logs string, ps *procs, shards int) (*cluster, error) {
	count := 3
	if shards > 0 {
		count = shardedNodes
	}
	var ids []string
	for i := 1; i <= count; i++ {
		ids = append(ids, fmt.Sprintf("n%d", i))
	}
	certs, err := makeCerts(filepath.Join(dir, "certs"), ids...)
	if err != nil {
		return nil, err
	}
	c := &cluster{bin: bin, logs: logs, ps: ps, certs: certs, shards: shards}
	targets := map[string]string{}
	for i := 1; i <= count; i++ {
		h, err := freePort()
		if err != nil {
			return nil, err
		}
		r, err := freePort()
		if err != nil {
			return nil, err
		}
		id := fmt.Sprintf("n%d", i)
		st, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{h}, TLS: certs.client, RetryTimeout: 300 * time.Millisecond, RequestTimeout: time.Second})
		if err != nil {
			return nil, err
		}
		c.nodes = append(c.nodes, &node{id: id, dir: filepath.Join(dir, id), http: h, raft: r, status: st})
		targets[r] = id
	}
	if c.proxy, err = NewProxy("127.0.0.1:0", targets); err != nil {
		return nil, err
	}
	if shards > 0 {
		// A sharded cluster's nodes start together, each knowing them all.
		var peers []string
		for _, n := range c.nodes {
			peers = append(peers, n.id+"="+n.raft+"/"+n.http)
		}
		for _, n := range c.nodes {
			if err := c.start(n, "--shards", strconv.Itoa(shards), "--peers", strings.Join(peers, ",")); err != nil {
				return c, err
			}
		}
		for _, n := range c.nodes {
			if err := c.waitMember(ctx, n); err != nil {
				return c, err
			}
		}
		return c, nil
	}
	for i, n := range c.nodes {
		var extra []string
		if i == 0 {
			extra = []string{"--bootstrap"}
		} else {
			extra = []string{"--join", c.nodes[0].http}
		}
		if err := c.start(n, extra...); err != nil {
			return c, err
		}
		if err := c.waitMember(ctx, n); err != nil {
			return c, err
		}
	}
	return c, nil
}

// start runs n's server process; a restart passes no extra flags, since a
// node with a directory rejoins by itself.
func (c *cluster) start(n *node, extra ...string) error {
	args := append([]string{"server", "--id", n.id, "--dir", n.dir, "--http-addr", n.http, "--raft-addr", n.raft,
		"--chaos-proxy", c.proxy.Addr(), "--tls-cert", c.certs.cert(n.id), "--tls-key", c.certs.key(n.id), "--tls-ca", c.certs.ca}, extra...)
	p, err := c.ps.start(n.id, c.bin, args, filepath.Join(c.logs, n.id+".log"))
	if err != nil {
		return err
	}
	n.proc, n.paused = p, false
	return nil
}

// waitMember waits until n answers and knows a leader.
func (c *cluster) waitMember(ctx context.Context, n *node) error {
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if n.proc.exited() {
			return fmt.Errorf("chaos: node %s exited while starting (see %s.log)", n.id, n.id)
		}
		st, err := c.status(ctx, n)
		if err == nil && st.LeaderID != "" && len(st.Members) >= 1 && c.shardsLed(st) {
			for _, m := range st.Members {
				if m.ID == n.id {
					return nil
				}
			}
		}
		if !sleepCtx(ctx, 100*time.Millisecond) {
			return ctx.Err()
		}
	}
	return fmt.Errorf("chaos: node %s did not join the cluster within 90s", n.id)
}

func (c *cluster) status(ctx context.Context, n *node) (httpapi.ClusterStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return n.status.Status(ctx)
}

// shardsLed reports whether st, a node's status, names a leader for every
// shard the node holds a replica of (always true of a cluster of one
// group), and no move is under way.
func (c *cluster) shardsLed(st httpapi.ClusterStatus) bool {
	if c.shards == 0 {
		return true
	}
	if st.ShardCount != c.shards {
		return false
	}
	for _, s := range st.Shards {
		if s.LeaderID == "" || s.MoveTo != "" {
			return false
		}
	}
	return true
}

// leader returns the node that reports itself the leader, or nil. In a
// sharded cluster that is the node leading the most shards (the metadata
// group's leader among equals): the faults aimed at "the leader" then hit
// a node holding several leaders at once.
func (c *cluster) leader(ctx context.Context) *node {
	if c.shards > 0 {
		var best *node
		most := -1
		for _, n := range c.nodes {
			if n.paused || n.proc == nil || n.proc.exited() {
				continue
			}
			st, err := c.status(ctx, n)
			if err != nil {
				continue
			}
			led := 0
			for _, s := range st.Shards {
				if s.State == "Leader" {
					led++
				}
			}
			if led > most || (led == most && st.State == "Leader") {
				best, most = n, led
			}
		}
		return best
	}
	for _, n := range c.nodes {
		if n.paused || n.proc == nil || n.proc.exited() {
			continue
		}
		if st, err := c.status(ctx, n); err == nil && st.State == "Leader" {
			return n
		}
	}
	return nil
}

// healthy reports whether every node runs, answers, and all name the same
// leader.
func (c *cluster) healthy(ctx context.Context) bool {
	lead := ""
	shardLead := map[int]string{}
	for _, n := range c.nodes {
		if n.paused || n.proc.exited() {
			return false
		}
		st, err := c.status(ctx, n)
		if err != nil || st.LeaderID == "" || (lead != "" && st.LeaderID != lead) || !c.shardsLed(st) {
			return false
		}
		lead = st.LeaderID
		// In a sharded cluster every shard's replicas name one leader too.
		for _, s := range st.Shards {
			if l, ok := shardLead[s.Shard]; ok && l != s.LeaderID {
				return false
			}
			shardLead[s.Shard] = s.LeaderID
		}
	}
	return len(shardLead) == c.shards
}

// waitHealthy waits up to d for healthy.
func (c *cluster) waitHealthy(ctx context.Context, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if c.healthy(ctx) {
			return true
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
	return false
}

func (c *cluster) addrs() []string {
	var out []string
	for _, n := range c.nodes {
		out = append(out, n.http)
	}
	return out
}

// sleepCtx waits for d, or until ctx ends; it reports whether it waited
// the whole d. Loops that check ctx themselves ignore the answer.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
