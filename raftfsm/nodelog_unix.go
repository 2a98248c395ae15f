//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package raftfsm

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockNodeLog takes an exclusive flock of dir's lock file, so that a
// second process opening the same node log fails at once with a clear
// error instead of writing beside the first. The returned func releases
// it.
func lockNodeLog(dir string) (func(), error) {
	path := filepath.Join(dir, nodeLogLockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("raftfsm: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close() // the lock failed; nothing was written
		return nil, fmt.Errorf("raftfsm: opening the node log %s: another process holds it (is another heddle node running in this directory?): %w", dir, err)
	}
	return func() {
		// Closing the descriptor releases the lock even if unlocking failed.
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}
