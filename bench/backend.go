package bench

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/httpapi"
	lb "github.com/heddlewf/heddle/internal/loopback"
	"github.com/heddlewf/heddle/internal/pki"
	"github.com/heddlewf/heddle/raftfsm"
	"github.com/heddlewf/heddle/storage"
)

// The modes a workload runs in.
const (
	ModeEmbedded = "embedded"
	ModeCluster  = "cluster"
	// ModeClusterMTLS is ModeCluster secured as a deployment is: Raft over
	// mutual TLS between the nodes, the API over TLS, certificates of a CA
	// made for the run.
	ModeClusterMTLS = "cluster-mtls"
)

// Modes lists the modes.
func Modes() []string { return []string{ModeEmbedded, ModeCluster, ModeClusterMTLS} }

// clustered reports whether mode runs three Raft nodes.
func clustered(mode string) bool { return mode == ModeCluster || mode == ModeClusterMTLS }

// backend is where a workload runs: one durable engine in this process, or
// three Raft nodes on loopback reached over HTTP as a remote worker would.
type backend struct {
	mode string
	// svc is what the workload's workers and clients use: the engine, or an
	// httpapi.Client holding all three nodes' addresses.
	svc *counting
	// dirs are the data directories, measured for disk per workflow.
	dirs []string
	// nodes are the cluster's nodes (nil when embedded or sharded).
	nodes []*raftfsm.Node
	// hosts are a sharded cluster's nodes.
	hosts []*raftfsm.Host
	// eng is the embedded engine (nil in a cluster).
	eng   *embedded.Engine
	close func() error
}

// setup returns an in-process engine for untimed preparation that would
// take too long through the API (building a million finished jobs): the
// embedded engine, or the cluster's current leader's.
func (b *backend) setup() *embedded.Engine {
	if b.eng != nil {
		return b.eng
	}
	for _, h := range b.hosts {
		if h.LeadsShard(0) {
			return h.Engines()[0]
		}
	}
	for _, n := range b.nodes {
		if n.IsLeader() {
			return n.Engine()
		}
	}
	return b.nodes[0].Engine()
}

// openBackend opens a backend of mode in a new directory under root,
// observed as obs says (the zero observation: not at all).
func openBackend(mode, root string, obs observation, shards int) (*backend, error) {
	if shards > 1 && clustered(mode) {
		return openShardedCluster(root, obs, mode == ModeClusterMTLS, shards)
	}
	switch mode {
	case ModeEmbedded:
		dir := filepath.Join(root, "engine")
		m, err := obs.newMetrics()
		if err != nil {
			return nil, err
		}
		e, err := embedded.Open(embedded.Config{Dir: dir, Storage: storage.Options{Logger: quietLogger{}}, Metrics: m,
			DisableQueueView: obs.queueViewOff})
		if err != nil {
			return nil, err
		}
		return &backend{mode: mode, svc: &counting{Service: e}, dirs: []string{dir}, eng: e, close: e.Close}, nil
	case ModeCluster:
		return openCluster(root, obs, false)
	case ModeClusterMTLS:
		return openCluster(root, obs, true)
	}
	return nil, fmt.Errorf("bench: unknown mode %q", mode)
}

// openCluster starts three raftfsm nodes with real directories under root,
// each serving the HTTP API on a 127.0.0.1 listener, and returns a backend
// whose service is an httpapi.Client of all three. Raft keeps its default
// timeouts, as a deployment would. With secure, Raft runs over mutual TLS
// and the API over TLS, with the certificates of a CA made for the run.
func openCluster(root string, obs observation, secure bool) (*backend, error) {
	b := &backend{mode: ModeCluster}
	var certs *benchCerts
	if secure {
		b.mode = ModeClusterMTLS
		var err error
		if certs, err = newBenchCerts(); err != nil {
			return nil, err
		}
	}
	var servers []*http.Server
	var apis []*httpapi.Server
	b.close = func() error {
		for _, s := range apis {
			s.Close() // ends the long polls
		}
		// The workers are stopped and the long polls ended: nothing in
		// flight is worth waiting for. Shutdown would wait up to 5 s for
		// any connection a client opened but never sent a request on
		// (net/http counts a connection idle only after its first one),
		// and time out.
		var errs []error
		for _, s := range servers {
			errs = append(errs, s.Close())
		}
		for _, n := range b.nodes {
			errs = append(errs, n.Close())
		}
		return errors.Join(errs...)
	}
	fail := func(err error) (*backend, error) {
		return nil, errors.Join(err, b.close())
	}
	var addrs []string
	for i := 1; i <= 3; i++ {
		id := fmt.Sprintf("n%d", i)
		dir := filepath.Join(root, id)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fail(err)
		}
		m, err := obs.newMetrics()
		if err != nil {
			return fail(errors.Join(err, ln.Close()))
		}
		rc := raftfsm.Config{ID: id, Dir: dir, RaftAddr: "127.0.0.1:0", HTTPAddr: ln.Addr().String(),
			Bootstrap: i == 1, Storage: storage.Options{Logger: quietLogger{}}, Metrics: m, DisableQueueView: obs.queueViewOff}
		sc := httpapi.ServerConfig{Metrics: m, TracerProvider: obs.tracer}
		if certs != nil {
			node, err := certs.node(id)
			if err != nil {
				return fail(errors.Join(err, ln.Close()))
			}
			rc.TLS = pki.PeerTLS(node, certs.roots)
			sc.ClientCAs, sc.ForwardScheme = certs.roots, "https"
			// The same transport as the plain cluster's forwarding, with TLS.
			t := httpapi.NewTransport(nil)
			t.TLSClientConfig = pki.ClientTLS(certs.roots, nil)
			sc.ForwardClient = &http.Client{Transport: t}
			ln = tls.NewListener(ln, pki.ServerTLS(node, certs.roots))
		}
		n, err := raftfsm.Open(rc)
		if err != nil {
			return fail(errors.Join(err, ln.Close()))
		}
		b.nodes = append(b.nodes, n)
		b.dirs = append(b.dirs, dir)
		sc.Service, sc.Cluster = n.Engine(), n
		api, err := httpapi.NewServer(sc)
		if err != nil {
			return fail(errors.Join(err, ln.Close()))
		}
		apis = append(apis, api)
		srv := api.HTTPServer()
		servers = append(servers, srv)
		// Serve returns http.ErrServerClosed at Shutdown; a failure before
		// that shows as the client's errors, which fail the run.
		go func() { _ = srv.Serve(ln) }()
		addrs = append(addrs, ln.Addr().String())
		if i == 1 {
			if err := waitServing(n); err != nil {
				return fail(err)
			}
			continue
		}
		if err := joinThroughLeader(b.nodes, id, n.RaftAddr(), ln.Addr().String()); err != nil {
			return fail(fmt.Errorf("bench: joining %s: %w", id, err))
		}
	}
	cc := httpapi.ClientConfig{Addrs: addrs}
	if certs != nil {
		cc.TLS = pki.ClientTLS(certs.roots, nil)
	}
	c, err := httpapi.NewClient(cc)
	if err != nil {
		return fail(err)
	}
	b.svc = &counting{Service: c}
	return b, nil
}

// openShardedCluster is openCluster for a sharded cluster of shards shards
// (docs/sharding.md): three raftfsm Hosts started with the same peers,
// each serving the API through an httpapi.ShardRouter, and an
// httpapi.Client of all three that routes by the shard map.
func openShardedCluster(root string, obs observation, secure bool, shards int) (*backend, error) {
	// The three nodes run in this process and share its open files.
	if limit, ok := raftfsm.OpenFileLimit(); ok {
		if err := raftfsm.CheckReplicaFiles(shards*3, limit); err != nil {
			return nil, fmt.Errorf("bench: %d shards on three nodes in this process: %w", shards, err)
		}
	}
	b := &backend{mode: ModeCluster}
	var certs *benchCerts
	if secure {
		b.mode = ModeClusterMTLS
		var err error
		if certs, err = newBenchCerts(); err != nil {
			return nil, err
		}
	}
	var servers []*http.Server
	var apis []*httpapi.Server
	b.close = func() error {
		for _, s := range apis {
			s.Close()
		}
		var errs []error
		for _, s := range servers {
			errs = append(errs, s.Close())
		}
		for _, h := range b.hosts {
			errs = append(errs, h.Close())
		}
		return errors.Join(errs...)
	}
	fail := func(err error) (*backend, error) {
		return nil, errors.Join(err, b.close())
	}
	// Every node is started knowing every node's addresses: the HTTP
	// listeners are opened first, the Raft addresses reserved.
	var peers []raftfsm.PlacementNode
	var lns []net.Listener
	for i := 1; i <= 3; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fail(err)
		}
		lns = append(lns, ln)
		raftAddr, err := lb.Reserve()
		if err != nil {
			return fail(errors.Join(err, ln.Close()))
		}
		peers = append(peers, raftfsm.PlacementNode{ID: fmt.Sprintf("n%d", i), RaftAddr: raftAddr, HTTPAddr: ln.Addr().String()})
	}
	var addrs []string
	for i, p := range peers {
		ln := lns[i]
		dir := filepath.Join(root, p.ID)
		// Metrics are not recorded per shard yet (raftfsm.HostConfig).
		rc := raftfsm.Config{ID: p.ID, Dir: dir, RaftAddr: p.RaftAddr, HTTPAddr: p.HTTPAddr,
			Storage: storage.Options{Logger: quietLogger{}}, DisableQueueView: obs.queueViewOff}
		sc := httpapi.ServerConfig{TracerProvider: obs.tracer}
		if certs != nil {
			node, err := certs.node(p.ID)
			if err != nil {
				return fail(errors.Join(err, ln.Close()))
			}
			rc.TLS = pki.PeerTLS(node, certs.roots)
			sc.ClientCAs, sc.ForwardScheme = certs.roots, "https"
			t := httpapi.NewTransport(nil)
			t.TLSClientConfig = pki.ClientTLS(certs.roots, nil)
			sc.ForwardClient = &http.Client{Transport: t}
			ln = tls.NewListener(ln, pki.ServerTLS(node, certs.roots))
		}
		// Cross-shard deliveries go to the other nodes' APIs, as the node
		// (its certificate under mutual TLS).
		sender := httpapi.NodeSender{}
		if certs != nil {
			node, err := certs.node(p.ID)
			if err != nil {
				return fail(errors.Join(err, ln.Close()))
			}
			t := httpapi.NewTransport(nil)
			t.TLSClientConfig = pki.ClientTLS(certs.roots, &node)
			sender = httpapi.NodeSender{Client: &http.Client{Transport: t}, Scheme: "https"}
		}
		deliverTo := func(ctx context.Context, _, httpAddr string, d *engine.Deliver) (*engine.DeliverResult, error) {
			return sender.Deliver(ctx, httpAddr, d)
		}
		h, err := raftfsm.OpenHost(raftfsm.HostConfig{Config: rc, Peers: peers, Shards: shards, DeliverTo: deliverTo})
		if err != nil {
			return fail(errors.Join(err, ln.Close()))
		}
		b.hosts = append(b.hosts, h)
		b.dirs = append(b.dirs, dir)
		sc.Service, sc.Cluster = httpapi.NewShardRouter(h), h
		api, err := httpapi.NewServer(sc)
		if err != nil {
			return fail(errors.Join(err, ln.Close()))
		}
		apis = append(apis, api)
		srv := api.HTTPServer()
		servers = append(servers, srv)
		go func() { _ = srv.Serve(ln) }()
		addrs = append(addrs, ln.Addr().String())
	}
	if err := waitHostsReady(b.hosts, shards); err != nil {
		return fail(err)
	}
	cc := httpapi.ClientConfig{Addrs: addrs}
	if certs != nil {
		cc.TLS = pki.ClientTLS(certs.roots, nil)
	}
	c, err := httpapi.NewClient(cc)
	if err != nil {
		return fail(err)
	}
	b.svc = &counting{Service: c}
	return b, nil
}

// waitHostsReady waits until every host is ready and every shard is led
// by the node the placement wants, so the run starts with the leaders
// spread.
// nodeLogCounts sums a sharded cluster's node logs' commits and appends
// (zero for other backends, which have no node log).
func (b *backend) nodeLogCounts() raftfsm.NodeLogCounts {
	var c raftfsm.NodeLogCounts
	for _, h := range b.hosts {
		n := h.NodeLogCounts()
		c.Commits += n.Commits
		c.Appends += n.Appends
	}
	return c
}

func waitHostsReady(hosts []*raftfsm.Host, shards int) error {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		ok := true
		for _, h := range hosts {
			if h.Ready(context.Background()) != nil {
				ok = false
			}
		}
		p := hosts[0].Placement()
		for k := 0; ok && k < shards; k++ {
			led := false
			for _, h := range hosts {
				led = led || (h.ID() == p.Groups[k].Leader && h.LeadsShard(k))
			}
			ok = led
		}
		if ok {
			return nil
		}
	}
	return errors.New("bench: the sharded cluster's shards never all had their desired leaders")
}

// waitServing waits until n leads and serves linearizable reads.
func waitServing(n *raftfsm.Node) error {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := n.Engine().List(context.Background(), engine.ListQuery{Limit: 1}); err == nil {
			return nil
		}
	}
	return errors.New("bench: the bootstrap node never became a serving leader")
}

// quietLogger drops Badger's messages: the benchmark's output is its
// figures, and Badger's warnings (a small block cache under a million
// finished jobs) would interleave with the progress bar.
type quietLogger struct{}

func (quietLogger) Errorf(string, ...any)   {}
func (quietLogger) Warningf(string, ...any) {}
func (quietLogger) Infof(string, ...any)    {}
func (quietLogger) Debugf(string, ...any)   {}

// duBytes is the disk space the files under dirs take, in bytes (allocated
// blocks where the platform reports them, as du does, else file sizes).
func duBytes(dirs ...string) int64 {
	var total int64
	for _, d := range dirs {
		// The walk goes on past what it cannot read (its function never
		// fails), so the figure counts every file it could see.
		_ = filepath.Walk(d, func(_ string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() {
				total += allocatedBytes(info)
			}
			return nil
		})
	}
	return total
}

// benchCerts are the certificates of a secured cluster: a CA made for the
// run, whose node certificates are made as the nodes start.
type benchCerts struct {
	ca    *pki.CA
	roots *x509.CertPool
}

func newBenchCerts() (*benchCerts, error) {
	ca, err := pki.NewCA("heddle bench CA")
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	return &benchCerts{ca: ca, roots: roots}, nil
}

// node returns node id's certificate, for 127.0.0.1.
func (c *benchCerts) node(id string) (tls.Certificate, error) {
	is, err := c.ca.NodeCert(id, []string{"127.0.0.1"})
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(is.CertPEM, is.KeyPEM)
}

// joinThroughLeader adds node id to the cluster of nodes through whichever
// of them leads, for up to a minute. Join is idempotent, so it is retried
// while leadership moves: on a loaded machine the first node can lose
// leadership for a moment after the second joins, and a join sent to it
// then fails with engine.ErrNotLeader.
func joinThroughLeader(nodes []*raftfsm.Node, id, raftAddr, httpAddr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		err := engine.ErrNotLeader
		for _, n := range nodes {
			if n.IsLeader() {
				err = n.Join(ctx, id, raftAddr, httpAddr)
				break
			}
		}
		retry := errors.Is(err, engine.ErrNotLeader) || errors.Is(err, engine.ErrUnknownOutcome)
		if !retry {
			return err // nil when joined
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
