// Package engine is heddle's job state machine: commands, the one pure Apply
// that validates and records them over a storage transaction, the Log that
// group-commits them, the scheduler that proposes timer, reclaim, release and
// deadline commands when they fall due, and the Engine that ties these to a
// directory.
//
// Everything that changes a job goes through Apply, in the embedded mode
// (LocalLog) and in the cluster mode (a Raft FSM) alike, so both behave the
// same by construction. Apply reads no clock, starts no goroutine and does no
// I/O besides its transaction: time arrives in each command's header.
package engine
