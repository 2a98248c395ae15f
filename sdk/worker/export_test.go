package worker

// Every test of this package checks that the events a worker rebuilds after
// its own writes are exactly the ones the engine stored.
func init() { verifyOwnEvents = true }
