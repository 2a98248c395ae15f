package httpapi

import (
	"strings"
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
// command that gives it back, so a task no claim takes within keptTaskFor of
// the claim that took it is dropped, and waits out its lease.

// keptTaskClaims holds the tasks of cut polls per claimer. The Client owns
// it.
type keptTaskClaims = keptSet[taskClaimerKey, engine.ClaimedReview]

// taskClaimerKey names a task claimer: the claims whose tasks may stand in
// for each other's.
type taskClaimerKey struct {
	role         engine.ReviewRole
	queue, owner string
	types        string
	leaseMS      int64
}

func taskClaimerOf(c engine.ClaimReviews) taskClaimerKey {
	return taskClaimerKey{role: c.Role, queue: c.Queue, owner: c.Owner, types: strings.Join(c.Types, "\x00"), leaseMS: c.LeaseMS}
}

// keptTaskFor is how long tasks claimed under c are kept: as for jobs, a
// quarter of their lease and at most keptMaxFor; keptMaxFor when the lease
// is the node's default, unknown here (a task kept nowhere would only wait
// out that lease).
func keptTaskFor(c engine.ClaimReviews) time.Duration {
	return keptForLease(c.LeaseMS, keptMaxFor)
}

// keepTasks holds tasks, which claim took, for the next long poll like
// claim, until keptTaskFor(claim) after asked (when the claim was sent, so
// no later than the leases began).
func (c *Client) keepTasks(claim engine.ClaimReviews, tasks []engine.ClaimedReview, asked time.Time) {
	if len(tasks) == 0 {
		return
	}
	until := asked.Add(keptTaskFor(claim))
	key := taskClaimerOf(claim)
	// A task is not given back (nothing can), so a task claimer is never
	// stopped: its owner is the zero one.
	if c.keptTasks.hold(key, queueOwner{}, tasks, until) {
		time.AfterFunc(time.Until(until), func() { c.keptTasks.expire(key) })
	}
}

// takeKeptTasks returns up to max tasks kept for long polls like claim, the
// oldest first. With none, it returns a channel closed when some are kept.
func (c *Client) takeKeptTasks(claim engine.ClaimReviews, max int) ([]engine.ClaimedReview, <-chan struct{}) {
	return c.keptTasks.take(taskClaimerOf(claim), queueOwner{}, max)
}
