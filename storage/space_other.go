//go:build !(linux || darwin)

package storage

// statFree cannot measure free space here; the reserve is not enforced
// unless Options.FreeBytes is set.
func statFree(string) (uint64, error) { return 0, errNoFreeProbe }
