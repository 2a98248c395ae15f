// Package embedded is heddle's runtime in one process: Open opens a
// database directory and returns an Engine, an engine.Service whose
// commands a LocalLog group-commits through the pure machine
// (engine/machine) and whose timers, leases, retry delays, deadlines and
// schedules a Scheduler proposes when they fall due; a Meter records the
// metrics of what is applied. New builds the same Engine over another
// Backend: raftfsm's Raft log.
package embedded
