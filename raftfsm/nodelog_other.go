//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package raftfsm

// lockNodeLog does nothing where flock is missing: one process per
// directory is then the operator's to keep.
func lockNodeLog(string) (func(), error) { return func() {}, nil }
