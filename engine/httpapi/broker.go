package httpapi

import (
	"context"
	"sync"
)

// broker hands queries from the clients that ask them to the workers that
// answer them, per task queue, in memory. Queries are not commands: they
// write nothing, so they never go through the log and are lost, harmlessly,
// when a node restarts (the asking client times out).
type broker struct {
	mu     sync.Mutex
	queues map[string]*queryQueue
	// taken holds every query a client still waits for, by id, whether a
	// worker has picked it up yet or not.
	taken map[string]*brokered
	// parked, when a test sets it, is told each time a query (poll false)
	// or a worker's poll starts to wait in a queue, so the test can act
	// while it waits.
	parked func(queue string, poll bool)
}

// queryQueue is one task queue's queries not yet picked up.
type queryQueue struct {
	waiting []*brokered
	pollers int
	// wake is closed (and replaced) when a query arrives.
	wake chan struct{}
}

// brokered is one query on its way.
type brokered struct {
	q      PendingQuery
	answer chan QueryAnswer // buffered: the answering worker never blocks
}

func newBroker() *broker {
	return &broker{queues: map[string]*queryQueue{}, taken: map[string]*brokered{}}
}

// queue returns the queue named, creating it. b.mu must be held.
func (b *broker) queue(name string) *queryQueue {
	q := b.queues[name]
	if q == nil {
		q = &queryQueue{wake: make(chan struct{})}
		b.queues[name] = q
	}
	return q
}

// release drops a queue that nobody uses any more, so the map holds only
// queues in use. b.mu must be held.
func (b *broker) release(name string, q *queryQueue) {
	if len(q.waiting) == 0 && q.pollers == 0 {
		delete(b.queues, name)
	}
}

// ask queues pq for the workers of queue and waits for the answer until ctx
// ends; it reports false when no worker answered in time.
func (b *broker) ask(ctx context.Context, queue string, pq PendingQuery) (QueryAnswer, bool) {
	bq := &brokered{q: pq, answer: make(chan QueryAnswer, 1)}
	b.mu.Lock()
	q := b.queue(queue)
	q.waiting = append(q.waiting, bq)
	b.taken[pq.ID] = bq
	close(q.wake)
	q.wake = make(chan struct{})
	b.mu.Unlock()
	if b.parked != nil {
		b.parked(queue, false)
	}

	select {
	case a := <-bq.answer:
		return a, true
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.taken, pq.ID)
	if q := b.queues[queue]; q != nil {
		for i, w := range q.waiting {
			if w == bq {
				q.waiting = append(q.waiting[:i], q.waiting[i+1:]...)
				break
			}
		}
		b.release(queue, q)
	}
	select { // an answer may have raced the deadline
	case a := <-bq.answer:
		return a, true
	default:
		return QueryAnswer{}, false
	}
}

// poll takes up to max queries of queue, waiting until one arrives or ctx
// ends (then it returns none).
func (b *broker) poll(ctx context.Context, queue string, max int) []PendingQuery {
	b.mu.Lock()
	q := b.queue(queue)
	q.pollers++
	defer func() {
		b.mu.Lock()
		q.pollers--
		b.release(queue, q)
		b.mu.Unlock()
	}()
	for {
		if n := min(len(q.waiting), max); n > 0 {
			out := make([]PendingQuery, n)
			for i, bq := range q.waiting[:n] {
				out[i] = bq.q
			}
			q.waiting = append(q.waiting[:0], q.waiting[n:]...)
			b.mu.Unlock()
			return out
		}
		wake := q.wake
		b.mu.Unlock()
		if b.parked != nil {
			b.parked(queue, true)
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return nil // queries arriving now are left for the next poll
		}
		b.mu.Lock()
	}
}

// answer delivers a worker's answer; it reports false when nobody waits
// for it any more.
func (b *broker) answer(a QueryAnswer) bool {
	b.mu.Lock()
	bq := b.taken[a.ID]
	delete(b.taken, a.ID)
	b.mu.Unlock()
	if bq == nil {
		return false
	}
	bq.answer <- a
	return true
}
