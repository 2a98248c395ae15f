package raftfsm

import (
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/hashicorp/raft"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/clock"
	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/metrics"
	"github.com/heddlewf/heddle/storage"
)

// Config configures a Node. ID, Dir and RaftAddr are required; every other
// zero field takes the default its comment gives.
type Config struct {
	// ID is the node's Raft server id, unique and stable for its life.
	ID string
	// Dir holds the node's Raft log, snapshots and state database.
	Dir string
	// RaftAddr is the host:port the Raft transport listens on and that
	// peers dial; it must be reachable by them (not 0.0.0.0). Port 0 picks
	// a free port (see Node.RaftAddr).
	RaftAddr string
	// HTTPAddr is the node's API address (host:port) as clients reach it;
	// it is replicated so followers can send clients to the leader. Empty
	// means the node serves no API.
	HTTPAddr string
	// Bootstrap makes a node with no Raft state start a one-node cluster
	// that others then join. It is ignored when state exists.
	Bootstrap bool

	// Clock stamps commands on the leader and drives the scheduler; nil
	// means clock.Wall().
	Clock clock.Clock
	// Limits bound what one command may carry; every node must use the
	// same limits, since Apply enforces them.
	Limits engine.Limits
	// Storage tunes Badger; its Dir and InMemory are ignored, and NoSync
	// is forced on (the Raft log is the durable record; the state is
	// synced before each snapshot). Its ReserveBytes is the free space
	// under which this node, as leader, refuses proposals with
	// engine.ErrNoSpace.
	Storage storage.Options

	// HeartbeatTimeout and ElectionTimeout are Raft's; 0 means 1s each,
	// as in hashicorp/raft's defaults. LeaderLeaseTimeout 0 means 500ms.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	// SnapshotInterval and SnapshotThreshold say how often Raft checks
	// and how many new entries make it snapshot; 0 means 30s and 8192.
	SnapshotInterval  time.Duration
	SnapshotThreshold uint64
	// TrailingLogs is how many entries stay in the log after a snapshot, so
	// a slightly lagging follower catches up from the log; 0 means 10240.
	TrailingLogs uint64
	// FailoverGrace is how long a new leader waits before reclaiming
	// expired leases, so workers that could not heartbeat during the
	// election keep their jobs; 0 means 5s.
	FailoverGrace time.Duration
	// ApplyTimeout bounds the wait to hand an entry to Raft; 0 means 10s.
	ApplyTimeout time.Duration
	// MaxEntryCommands and MaxEntryBytes bound one log entry; 0 means 512
	// commands and 4 MiB.
	MaxEntryCommands int
	MaxEntryBytes    int
	// SchedulerBatch bounds the jobs of one timer, reclaim, release or
	// deadline proposal; 0 means embedded.DefaultSchedulerBatch, or
	// Limits.MaxBatch when that is smaller. It must not exceed
	// Limits.MaxBatch.
	SchedulerBatch int
	// DisableScheduler leaves timers and leases to the caller (tests), and
	// runs no batch operation.
	DisableScheduler bool
	// BatchRunsPerSecond bounds how many runs a second the leader's batch
	// runner acts on for a batch that names no rate; 0 means
	// embedded.DefaultBatchRunsPerSecond.
	BatchRunsPerSecond int
	// OnSchedulerError receives the errors of the leader's background work
	// (the scheduler's proposals, the recording of the leader's HTTP
	// address); nil drops them.
	OnSchedulerError func(error)
	// Dial, if set, opens the connections this node makes to its peers'
	// Raft addresses (the chaos suite routes them through a fault-injecting
	// proxy); nil dials TCP directly.
	Dial func(address string, timeout time.Duration) (net.Conn, error)
	// TLS, if set, makes every Raft connection mutual TLS with this
	// configuration, at both ends: it presents this node's certificate and
	// must refuse a peer whose certificate it does not accept (PeerTLS
	// builds one that admits only node certificates of the cluster's CA).
	// A peer refused in the handshake never reaches Raft. The handshake
	// runs over the connection Dial opens, so a proxy in between (the
	// chaos suite's) relays only ciphertext. Nil: plain TCP, for loopback
	// and tests only.
	TLS *tls.Config
	// LogOutput receives Raft's log lines (warnings and above); nil
	// discards them. Logger, when set, replaces it.
	LogOutput io.Writer
	// Logger, if set, receives Raft's logs and (unless Storage.Logger is
	// set) Badger's through log/slog, level for level, each line with a
	// component attribute ("raft", "raft-net", "raft-snap", "badger").
	Logger *slog.Logger
	// Metrics, if set, records the node's metrics: the engine's, measured
	// around the state machine's applying, and the Raft node's. It also
	// routes hashicorp/raft's go-metrics to it (see
	// metrics.Metrics.BridgeRaft). Nil records none.
	Metrics *metrics.Metrics
	// DisableQueueView turns off the node's view of its task queues'
	// pollers and rates (embedded.Config.DisableQueueView).
	DisableQueueView bool
	// ReadyMaxLag is how many entries the applied index may trail the
	// commit index for Ready to pass; 0 means DefaultReadyMaxLag.
	ReadyMaxLag uint64
	// ReadyMaxContact is how long a follower may go without hearing from
	// the leader for Ready to pass; 0 means twice HeartbeatTimeout.
	ReadyMaxContact time.Duration

	// group is set by a Host for the node of one shard (host.go); the
	// zero value is a node of a cluster of one Raft group.
	group groupOptions
}

// groupOptions make a Node one shard's group of a sharded node (Host): its
// transport is a layer of the Host's multiplexer, its machine the shard's,
// and its first start bootstraps the group with all its replicas.
type groupOptions struct {
	// layer is the group's stream layer; nil: the node listens on
	// RaftAddr itself.
	layer raft.StreamLayer
	// shard is the shard the node's machine applies to.
	shard engine.ShardLayout
	// peers, when set, are the group's members a Bootstrap makes.
	peers []raft.Server
	// onCommit, when set, is called after every applied batch that wrote
	// something, and onLeader at every change of the leader this node
	// knows of; neither may block.
	onCommit, onLeader func()
	// log, when set, is the Host's node log, and the group keeps its Raft
	// log and stable store in log's view of group number logGroup instead
	// of a raft.db of its own (nodelog.go).
	log      *nodeLog
	logGroup uint32
	// store, when set, is the Host's state store, and the group's state
	// is a keyspace of it instead of a database of its own (nodestore.go).
	store *nodeStore
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.HeartbeatTimeout, time.Second)
	def(&c.ElectionTimeout, time.Second)
	def(&c.LeaderLeaseTimeout, 500*time.Millisecond)
	def(&c.SnapshotInterval, 30*time.Second)
	def(&c.FailoverGrace, 5*time.Second)
	def(&c.ApplyTimeout, 10*time.Second)
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = 8192
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = 10240
	}
	if c.MaxEntryCommands == 0 {
		c.MaxEntryCommands = 512
	}
	if c.MaxEntryBytes == 0 {
		c.MaxEntryBytes = 4 << 20
	}
	if c.Clock == nil {
		c.Clock = clock.Wall()
	}
	if c.LogOutput == nil {
		c.LogOutput = io.Discard
	}
	c.Storage.NoSync = true
	c.Storage.InMemory = false
	return c.observeDefaults()
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.ID == "":
		return fmt.Errorf("%w: ID is empty", ErrConfig)
	case c.Dir == "":
		return fmt.Errorf("%w: Dir is empty", ErrConfig)
	case c.RaftAddr == "":
		return fmt.Errorf("%w: RaftAddr is empty", ErrConfig)
	case c.HeartbeatTimeout < 0 || c.ElectionTimeout < 0 || c.LeaderLeaseTimeout < 0 || c.SnapshotInterval < 0 ||
		c.FailoverGrace < 0 || c.ApplyTimeout < 0 || c.ReadyMaxContact < 0:
		return fmt.Errorf("%w: durations must not be negative", ErrConfig)
	case c.MaxEntryCommands < 0 || c.MaxEntryCommands > maxEntryCommands:
		return fmt.Errorf("%w: MaxEntryCommands %d is not in [0, %d]", ErrConfig, c.MaxEntryCommands, maxEntryCommands)
	case c.MaxEntryBytes < 0 || c.MaxEntryBytes > 64<<20:
		return fmt.Errorf("%w: MaxEntryBytes %d is not in [0, 64 MiB]", ErrConfig, c.MaxEntryBytes)
	case c.SchedulerBatch < 0:
		return fmt.Errorf("%w: SchedulerBatch %d is negative", ErrConfig, c.SchedulerBatch)
	case c.BatchRunsPerSecond < 0:
		return fmt.Errorf("%w: BatchRunsPerSecond %d is negative", ErrConfig, c.BatchRunsPerSecond)
	}
	if err := c.Limits.Validate(); err != nil {
		return err
	}
	if _, err := embedded.SchedulerBatch(c.SchedulerBatch, c.Limits); err != nil {
		return fmt.Errorf("%w: SchedulerBatch: %v", ErrConfig, err)
	}
	so := c.Storage
	so.Dir = c.Dir
	return so.Validate()
}
