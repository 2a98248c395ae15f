// Package raftfsm runs heddle as a node of a Raft cluster: every command
// goes through a hashicorp/raft log and is applied on every node by the same
// engine.Apply the embedded mode uses.
//
// A Node owns four things. The FSM applies committed log entries to a Badger
// database, a batch of entries in one transaction, with the applied index
// written in that same transaction so a restarted node skips what it already
// holds. The proposer packs concurrent proposals on the leader into one log
// entry and stamps them with the leader's clock. The read barrier makes reads
// linearizable (read-index: confirm leadership, then wait until the local
// state has applied the commit index). The leader alone runs the scheduler
// that fires timers and reclaims expired leases, after a failover grace.
//
// On disk a node's directory holds raft/ (the BoltDB log and stable store and
// the snapshot files) and state/ (CURRENT, naming the live database
// directory data-NNNNNN). A snapshot restore loads into a fresh data
// directory and switches CURRENT only once the load succeeded. A state
// database that fails storage's integrity checks at start is moved aside
// (damaged-NNNNNN-T) and rebuilt from the node's newest snapshot and log,
// or from the leader's snapshot.
package raftfsm
