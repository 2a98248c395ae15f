//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package raftfsm

import "syscall"

// processFileLimit reads the process's soft RLIMIT_NOFILE.
func processFileLimit() (uint64, bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, false
	}
	return uint64(rl.Cur), true
}
