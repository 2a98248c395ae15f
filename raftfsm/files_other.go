//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package raftfsm

// processFileLimit does not know the limit where RLIMIT_NOFILE is missing.
func processFileLimit() (uint64, bool) { return 0, false }
