package httpapi

import (
	"context"
	"runtime/debug"
	"sync"
	"time"
)

// bodyBudget bounds the request body bytes held in memory at once, across
// every request a Server is serving. A request reserves its body's bytes
// before reading them (all of them when its Content-Length is known, as
// they arrive otherwise) and gives them back once it has been answered.
// Without it, forty concurrent 8 MiB bodies took a server from 40 MB to
// over 1 GB.
//
// When the budget is whole again after a burst that reserved a good part
// of it, the memory the burst made the process take is given back to the
// operating system (debug.FreeOSMemory, at most once per giveBackEvery):
// an idle server runs no garbage collection that would otherwise return
// it for minutes.
type bodyBudget struct {
	max int64
	// wait bounds a request's wait for room: bodyBudgetWait, shorter in
	// tests.
	wait time.Duration

	mu      sync.Mutex
	free    int64
	peak    int64         // the most reserved at once since the last give-back
	changed chan struct{} // closed (and replaced) whenever bytes come back
	lastGC  time.Time
	gc      func() // debug.FreeOSMemory; replaced in tests
}

// giveBackEvery bounds how often an idle budget gives memory back: a full
// collection costs a few milliseconds of CPU.
const giveBackEvery = time.Second

func newBodyBudget(max int64) *bodyBudget {
	return &bodyBudget{max: max, wait: bodyBudgetWait, free: max, changed: make(chan struct{}), gc: debug.FreeOSMemory}
}

// acquire reserves n bytes, waiting until they are free or ctx ends.
func (b *bodyBudget) acquire(ctx context.Context, n int64) error {
	for {
		b.mu.Lock()
		if b.free >= n {
			b.free -= n
			b.peak = max(b.peak, b.max-b.free)
			b.mu.Unlock()
			return nil
		}
		ch := b.changed
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// release gives n reserved bytes back.
func (b *bodyBudget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.free += n
	close(b.changed)
	b.changed = make(chan struct{})
	giveBack := b.free == b.max && b.peak >= b.max/4 && time.Since(b.lastGC) >= giveBackEvery
	if giveBack {
		b.peak, b.lastGC = 0, time.Now()
	}
	b.mu.Unlock()
	if giveBack {
		go b.gc()
	}
}

// inUse returns how many bytes are reserved now.
func (b *bodyBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.max - b.free
}
