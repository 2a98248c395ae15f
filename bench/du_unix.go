//go:build unix

package bench

import (
	"os"
	"syscall"
)

// allocatedBytes is the space a file takes on disk: its 512-byte blocks,
// which for Badger's preallocated, sparse value log is far less than its
// size.
func allocatedBytes(info os.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return info.Size()
}
