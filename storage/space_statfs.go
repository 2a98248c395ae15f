//go:build linux || darwin

package storage

import "syscall"

// statFree returns the bytes of the file system holding dir that an
// unprivileged process may still write.
func statFree(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}
