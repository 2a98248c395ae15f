//go:build !unix

package bench

import "os"

// allocatedBytes falls back to the file's size where blocks are not known.
func allocatedBytes(info os.FileInfo) int64 { return info.Size() }
