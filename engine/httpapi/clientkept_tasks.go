package httpapi

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// Tasks kept for the next task claim of the same claimer.
//
// A task long poll of a sharded cluster goes to every node, as a job claim
// does, and the polls on the other nodes are cut once one answered. A node
// that was applying a claim when the cut came answers with the tasks it
// took, leased to the same owner already, after the claim returned. They
// are kept, as a job claim's are (clientkept.go), and the next long poll of
// the same claimer (the same role, queue, owner, types and lease) takes
// them before, or instead of, its polls. Unlike a job, a task has no
// command that gives it back, so a task no claim takes within keptFor of
// the claim that took it is dropped, and waits out its lease.

// keptTaskClaims holds the tasks of cut polls per claimer. The Client owns
// it; its methods are safe for concurrent use.
type keptTaskClaims struct {
	mu    sync.Mutex
	tasks map[taskClaimerKey][]keptTask
	// wake is closed, and dropped, when tasks are kept for its claimer: a
	// long poll of that claimer waiting meanwhile takes them then.
	wake map[taskClaimerKey]chan struct{}
}

// taskClaimerKey names a task claimer: the claims whose tasks may stand in
// for each other's.
type taskClaimerKey struct {
	role         engine.ReviewRole
	queue, owner string
	types        string
	leaseMS      int64
}

type keptTask struct {
	task  engine.ClaimedReview
	until time.Time // dropped at or after this
}

func taskClaimerOf(c engine.ClaimReviews) taskClaimerKey {
	return taskClaimerKey{role: c.Role, queue: c.Queue, owner: c.Owner, types: strings.Join(c.Types, "\x00"), leaseMS: c.LeaseMS}
}

// keptTaskFor is how long tasks claimed under c are kept: as for jobs, a
// quarter of their lease and at most keptMaxFor; keptMaxFor when the lease
// is the node's default, unknown here (a task kept nowhere would only wait
// out that lease).
func keptTaskFor(c engine.ClaimReviews) time.Duration {
	lease := time.Duration(c.LeaseMS) * time.Millisecond
	if lease <= 0 {
		return keptMaxFor
	}
	return min(lease/4, keptMaxFor)
}

// keepTasks holds tasks, which claim took, for the next long poll like
// claim, until keptTaskFor(claim) after asked (when the claim was sent, so
// no later than the leases began).
func (c *Client) keepTasks(claim engine.ClaimReviews, tasks []engine.ClaimedReview, asked time.Time) {
	if len(tasks) == 0 {
		return
	}
	until := asked.Add(keptTaskFor(claim))
	wait := time.Until(until)
	if wait <= 0 {
		return
	}
	key := taskClaimerOf(claim)
	k := &c.keptTasks
	k.mu.Lock()
	if k.tasks == nil {
		k.tasks = map[taskClaimerKey][]keptTask{}
	}
	held := k.tasks[key]
	for _, t := range tasks {
		held = append(held, keptTask{task: t, until: until})
	}
	// Claims answer out of order: keep the oldest deadline first, which
	// expireKeptTasks relies on.
	slices.SortStableFunc(held, func(a, b keptTask) int { return a.until.Compare(b.until) })
	k.tasks[key] = held
	if ch := k.wake[key]; ch != nil {
		close(ch)
		delete(k.wake, key)
	}
	k.mu.Unlock()
	time.AfterFunc(wait, func() { c.expireKeptTasks(key) })
}

// takeKeptTasks returns up to max tasks kept for long polls like claim, the
// oldest first. With none, it returns a channel closed when some are kept.
func (c *Client) takeKeptTasks(claim engine.ClaimReviews, max int) ([]engine.ClaimedReview, <-chan struct{}) {
	key := taskClaimerOf(claim)
	k := &c.keptTasks
	k.mu.Lock()
	defer k.mu.Unlock()
	held := k.tasks[key]
	if len(held) == 0 {
		if k.wake == nil {
			k.wake = map[taskClaimerKey]chan struct{}{}
		}
		ch := k.wake[key]
		if ch == nil {
			ch = make(chan struct{})
			k.wake[key] = ch
		}
		return nil, ch
	}
	n := min(max, len(held))
	out := make([]engine.ClaimedReview, n)
	for i := range n {
		out[i] = held[i].task
	}
	if rest := held[n:]; len(rest) > 0 {
		k.tasks[key] = rest
	} else {
		delete(k.tasks, key)
	}
	return out, nil
}

// expireKeptTasks drops the tasks kept for key whose time ran out.
func (c *Client) expireKeptTasks(key taskClaimerKey) {
	now := time.Now()
	k := &c.keptTasks
	k.mu.Lock()
	defer k.mu.Unlock()
	held := k.tasks[key]
	i := 0
	for i < len(held) && !held[i].until.After(now) {
		i++
	}
	if rest := held[i:]; len(rest) > 0 {
		k.tasks[key] = rest
	} else {
		delete(k.tasks, key)
	}
}
