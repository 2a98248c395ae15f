package httpapi

import (
	"slices"
	"sync"
	"time"
)

// keptSet holds what cut long polls answered after their claim returned,
// per claimer (K: the claims whose items may stand in for each other's),
// each item until a deadline, for the claimer's next long poll: the jobs
// of claimAcross (clientkept.go) and the tasks of claimReviewsAcross
// (clientkept_tasks.go). Its methods are safe for concurrent use, and none
// does I/O: what a caller gives back, it gives back after they return.
type keptSet[K comparable, T any] struct {
	mu    sync.Mutex
	items map[K][]keptItem[T]
	// wake is closed, and dropped, when items are kept for its claimer: a
	// long poll of that claimer waiting meanwhile takes them then.
	wake map[K]chan struct{}
	// stopped holds the claimers (by queue and owner) whose worker stopped
	// (ReleaseKept): nothing is kept for them until they claim again.
	stopped map[queueOwner]bool
}

// queueOwner names the claimers of one worker identity on one queue.
type queueOwner struct{ queue, owner string }

type keptItem[T any] struct {
	item  T
	until time.Time // no longer kept at or after this
}

// hold keeps items for key until until, oldest deadline first, and wakes a
// long poll of key waiting meanwhile. It keeps nothing, and reports false,
// when until has passed or owner's worker stopped.
func (s *keptSet[K, T]) hold(key K, owner queueOwner, items []T, until time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !time.Now().Before(until) || s.stopped[owner] {
		return false
	}
	if s.items == nil {
		s.items = map[K][]keptItem[T]{}
	}
	held := s.items[key]
	for _, it := range items {
		held = append(held, keptItem[T]{item: it, until: until})
	}
	// Claims answer out of order: keep the oldest deadline first, which
	// expire relies on.
	slices.SortStableFunc(held, func(a, b keptItem[T]) int { return a.until.Compare(b.until) })
	s.items[key] = held
	if ch := s.wake[key]; ch != nil {
		close(ch)
		delete(s.wake, key)
	}
	return true
}

// take returns up to max items kept for key, the oldest first. With none,
// it returns a channel closed when some are kept. A claim also ends its
// owner's stop: a worker of that identity runs again.
func (s *keptSet[K, T]) take(key K, owner queueOwner, max int) ([]T, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.stopped, owner)
	held := s.items[key]
	if len(held) == 0 {
		if s.wake == nil {
			s.wake = map[K]chan struct{}{}
		}
		ch := s.wake[key]
		if ch == nil {
			ch = make(chan struct{})
			s.wake[key] = ch
		}
		return nil, ch
	}
	n := min(max, len(held))
	out := make([]T, n)
	for i := range n {
		out[i] = held[i].item
	}
	s.keep(key, held[n:])
	return out, nil
}

// expire removes and returns the items kept for key whose time ran out.
func (s *keptSet[K, T]) expire(key K) []T {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	held := s.items[key]
	var out []T
	i := 0
	for ; i < len(held) && !held[i].until.After(now); i++ {
		out = append(out, held[i].item)
	}
	s.keep(key, held[i:])
	return out
}

// stop marks owner's worker stopped and removes and returns every item
// kept for its claimers (ownerOf names a claimer's owner).
func (s *keptSet[K, T]) stop(owner queueOwner, ownerOf func(K) queueOwner) []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped == nil {
		s.stopped = map[queueOwner]bool{}
	}
	s.stopped[owner] = true
	var out []T
	for key, held := range s.items {
		if ownerOf(key) == owner {
			for _, k := range held {
				out = append(out, k.item)
			}
			delete(s.items, key)
		}
	}
	return out
}

// drop removes the items kept for key that match.
func (s *keptSet[K, T]) drop(key K, match func(T) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	held := slices.DeleteFunc(s.items[key], func(k keptItem[T]) bool { return match(k.item) })
	s.keep(key, held)
}

// count returns how many items are kept.
func (s *keptSet[K, T]) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, held := range s.items {
		n += len(held)
	}
	return n
}

// keep sets what is kept for key to held, dropping the key when it is
// empty. Called with mu held.
func (s *keptSet[K, T]) keep(key K, held []keptItem[T]) {
	if len(held) > 0 {
		s.items[key] = held
	} else {
		delete(s.items, key)
	}
}
