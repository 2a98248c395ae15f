package replay

import (
	"container/list"
	"sync"

	"github.com/heddlewf/heddle/engine"
)

// Cache keeps the executions of recently run jobs alive, up to a bound, so
// that resuming a cached job costs only its new events instead of a replay
// from the start. A worker Takes an execution out while it drives it and Puts
// it back after, so no execution is ever driven by two goroutines; the least
// recently put execution is closed when the cache is full. Safe for
// concurrent use.
type Cache struct {
	mu       sync.Mutex
	capacity int
	order    *list.List // front: most recently put
	byJob    map[engine.JobID]*list.Element
}

// NewCache returns a cache of at most capacity executions; 0 disables
// caching (every Take misses, every Put closes).
func NewCache(capacity int) *Cache {
	return &Cache{capacity: max(capacity, 0), order: list.New(), byJob: map[engine.JobID]*list.Element{}}
}

// Take removes and returns job's execution, or nil on a miss.
func (c *Cache) Take(job engine.JobID) *Execution {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byJob[job]
	if !ok {
		return nil
	}
	c.order.Remove(el)
	delete(c.byJob, job)
	return el.Value.(*Execution)
}

// Put returns an execution to the cache, closing the least recently used one
// when the cache is over its bound. An execution that stopped (Fault) or
// finished is closed instead of kept.
func (c *Cache) Put(x *Execution) {
	done, _, _ := x.Finished()
	if c.capacity == 0 || x.Fault() != nil || done {
		x.Close()
		return
	}
	c.mu.Lock()
	if old, ok := c.byJob[x.Job]; ok { // a stale copy: the newer one wins
		c.order.Remove(old)
		defer old.Value.(*Execution).Close()
	}
	c.byJob[x.Job] = c.order.PushFront(x)
	var evicted []*Execution
	for c.order.Len() > c.capacity {
		el := c.order.Back()
		c.order.Remove(el)
		ev := el.Value.(*Execution)
		delete(c.byJob, ev.Job)
		evicted = append(evicted, ev)
	}
	c.mu.Unlock()
	for _, ev := range evicted {
		ev.Close()
	}
}

// Evict drops and closes job's execution, if cached (for example when the
// job was claimed by another worker and the cached state is stale).
func (c *Cache) Evict(job engine.JobID) {
	if x := c.Take(job); x != nil {
		x.Close()
	}
}

// Len returns the number of cached executions.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
