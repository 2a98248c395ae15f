package raftfsm

import "fmt"

// filesPerReplica is how many files and sockets one shard replica holds
// open at rest: its Raft group's connections to each peer (its state is a
// keyspace of the node's one store, whose files do not grow with the
// replicas). Measured with `heddle cluster up --nodes 3` at 64 and 256
// shards: 3.9 and 3.7 a replica, the node stores, node logs and
// listeners included (when each replica had a Badger of its own, 10).
// A replica under load holds more connections.
const filesPerReplica = 4

// CheckReplicaFiles returns an error matching ErrTooManyReplicas when
// replicas shard replicas, run in one process that may open limitFiles
// files (OpenFileLimit), would hold more than half of them at rest. A
// process past its limit fails part-way through: a replica's store or a
// peer's connection cannot be opened, and a new cluster is left half
// created. The other half is for what the replicas open under load, and
// for the node's clients. OpenHost checks its own replicas; a command that
// runs several nodes in one process checks them all.
func CheckReplicaFiles(replicas int, limitFiles uint64) error {
	need := uint64(max(replicas, 0)) * filesPerReplica
	if need <= limitFiles/2 {
		return nil
	}
	return fmt.Errorf("%w: %d shard replicas hold about %d files open at rest (%d each), more than half of the %d this process may open "+
		"(RLIMIT_NOFILE); use fewer shards, spread them over more nodes, or raise the limit (ulimit -n, LimitNOFILE=)",
		ErrTooManyReplicas, replicas, need, filesPerReplica, limitFiles)
}

// OpenFileLimit returns how many files this process may open (its soft
// RLIMIT_NOFILE, which Go raises to the hard limit at start), and false
// where the platform does not say.
func OpenFileLimit() (uint64, bool) { return processFileLimit() }

// openFileLimit is what OpenHost checks against; tests replace it.
var openFileLimit = OpenFileLimit

// checkHostFiles is CheckReplicaFiles for the replicas one node holds,
// against this process's limit; nil where the limit is unknown.
func checkHostFiles(replicas int) error {
	limit, ok := openFileLimit()
	if !ok {
		return nil
	}
	return CheckReplicaFiles(replicas, limit)
}
