// Package engine is heddle's contract: the commands that change jobs, with
// the one table of their kinds (kinds.go) and their results; the events of
// a job's history; the job statuses, step states and review task states
// with their three transition tables; the records (a job, its steps, the
// resource pool, review tasks, schedules); the limits a command is checked
// against; the errors, with stable codes; and Service, what a client or a
// worker asks of heddle. It imports no storage, so everything that only
// speaks the contract (the SDK, the HTTP API) links no database.
//
// Two packages implement it. engine/machine is the pure state machine:
// Apply records a command over one storage transaction, reading no clock,
// starting no goroutine and doing no I/O besides its transaction (time and
// randomness arrive in each command's header). engine/embedded is the
// runtime in one process: Open returns an Engine whose local log
// group-commits commands through the machine and whose scheduler proposes
// timers, lease expiries, retries, deadlines and schedules when they fall
// due. A Raft node (package raftfsm) builds the same Engine over its log,
// so the embedded and the cluster mode behave the same by construction.
package engine
