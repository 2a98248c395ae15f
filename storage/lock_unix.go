//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package storage

import (
	"fmt"
	"os"
	"syscall"
)

// lockDir takes the lock Badger takes on a data directory (an exclusive
// flock of the directory itself), so that the checks and repairs run on
// files no database is writing. The returned func releases it.
func lockDir(dir string) (func(), error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close() // the lock failed; nothing was written
		return nil, fmt.Errorf("storage: %s is open in another database (a process or this one): %w", dir, err)
	}
	return func() {
		// Closing the descriptor releases the lock even if unlocking failed.
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}
