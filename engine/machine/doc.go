// Package machine is heddle's pure state machine: Apply validates a
// command of the contract (package engine) against the stored state and
// records it over one storage transaction, through one apply table keyed by
// the command's kind. It also holds the record and command codecs, the
// queries over a storage reader and Verify.
//
// Apply reads no clock, starts no goroutine, draws no randomness and does
// no I/O besides its transaction: time and randomness arrive in each
// command's header. The embedded runtime (engine/embedded) and the Raft
// state machine (raftfsm) both apply commands through it, so both behave
// the same by construction.
//
// The files are named by concept: job_* (create, claim and leases,
// lifecycle, cron, config), turn.go (what a worker's turn writes: appends,
// step commits, waits, signals, timers), step*.go (explicit step leases,
// resources and their waiters, people's answers), resource*.go, review*.go
// (review tasks), schedule*.go and async.go (asynchronous completion).
package machine
