package httpapi

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// Jobs kept for the next claim of the same claimer.
//
// A worker's long poll of a sharded cluster goes to every node, and the
// first node that answers with jobs ends the claim; the polls on the other
// nodes are cut. A node that was applying a claim when the cut came answers
// with what it took, and those jobs are leased to the same owner already.
// Giving them back and claiming them again costs two Raft commands a job
// and holds the job for both: under load that was two jobs a workflow. So
// the client keeps them, and the next claim of the same claimer (the same
// queue, owner, types and build) takes them before it polls. Whatever a
// claimer does not take within keptFor is given back, fenced by its lease,
// as a cut claim's jobs were before.

// keptMaxFor bounds how long a kept job waits for its claimer's next claim:
// a worker with free slots claims again at once, and one that has none for
// this long is better served by the job going back to its queue.
const keptMaxFor = 2 * time.Second

// keptClaims holds the jobs of cut polls per claimer. Its methods are safe
// for concurrent use.
type keptClaims struct {
	mu   sync.Mutex
	jobs map[claimerKey][]keptJob
	// wake is closed, and dropped, when jobs are kept for its claimer: a
	// long poll of that claimer waiting meanwhile takes them then.
	wake map[claimerKey]chan struct{}
}

// claimerKey names a claimer: the claims whose jobs may stand in for each
// other's.
type claimerKey struct {
	queue, owner, types, buildID string
	tailEvents                   int
	leaseMS                      int64 // so that every job kept for a claimer is kept as long
}

type keptJob struct {
	job   engine.ClaimedJob
	until time.Time // given back at or after this
}

func claimerOf(c engine.Claim) claimerKey {
	return claimerKey{queue: c.Queue, owner: c.Owner, types: strings.Join(c.Types, "\x00"), buildID: c.BuildID, tailEvents: c.TailEvents, leaseMS: c.LeaseMS}
}

// keptFor is how long jobs claimed under c are kept: a quarter of their
// lease, so that a worker that takes one late still has most of the lease
// before its first heartbeat, and at most keptMaxFor.
func keptFor(c engine.Claim) time.Duration {
	lease := time.Duration(c.LeaseMS) * time.Millisecond
	if lease <= 0 {
		return 0 // the node's default lease, unknown here: keep nothing
	}
	return min(lease/4, keptMaxFor)
}

// keep holds jobs for the next claim like c, and gives back, keptFor(c)
// from now, those no claim took by then. With nothing to keep them for
// (no lease given) they are given back at once.
func (c *Client) keep(claim engine.Claim, jobs []engine.ClaimedJob) {
	if len(jobs) == 0 {
		return
	}
	d := keptFor(claim)
	if d <= 0 {
		c.releaseSurplus(context.Background(), jobs)
		return
	}
	key := claimerOf(claim)
	until := time.Now().Add(d)
	c.kept.mu.Lock()
	if c.kept.jobs == nil {
		c.kept.jobs = map[claimerKey][]keptJob{}
	}
	for _, j := range jobs {
		c.kept.jobs[key] = append(c.kept.jobs[key], keptJob{job: j, until: until})
	}
	if ch := c.kept.wake[key]; ch != nil {
		close(ch)
		delete(c.kept.wake, key)
	}
	c.kept.mu.Unlock()
	time.AfterFunc(d, func() { c.expireKept(key) })
}

// takeKept returns up to max jobs kept for claims like claim, the oldest
// first. With none, it returns a channel closed when some are kept.
func (c *Client) takeKept(claim engine.Claim, max int) ([]engine.ClaimedJob, <-chan struct{}) {
	key := claimerOf(claim)
	c.kept.mu.Lock()
	defer c.kept.mu.Unlock()
	held := c.kept.jobs[key]
	if len(held) == 0 {
		if c.kept.wake == nil {
			c.kept.wake = map[claimerKey]chan struct{}{}
		}
		ch := c.kept.wake[key]
		if ch == nil {
			ch = make(chan struct{})
			c.kept.wake[key] = ch
		}
		return nil, ch
	}
	n := min(max, len(held))
	out := make([]engine.ClaimedJob, n)
	for i := range n {
		out[i] = held[i].job
	}
	if rest := held[n:]; len(rest) > 0 {
		c.kept.jobs[key] = rest
	} else {
		delete(c.kept.jobs, key)
	}
	return out, nil
}

// expireKept gives back the jobs kept for key whose time ran out.
func (c *Client) expireKept(key claimerKey) {
	now := time.Now()
	var back []engine.ClaimedJob
	c.kept.mu.Lock()
	held := c.kept.jobs[key]
	i := 0
	for ; i < len(held) && !held[i].until.After(now); i++ {
		back = append(back, held[i].job)
	}
	if rest := held[i:]; len(rest) > 0 {
		c.kept.jobs[key] = rest
	} else {
		delete(c.kept.jobs, key)
	}
	c.kept.mu.Unlock()
	if len(back) > 0 {
		c.releaseSurplus(context.Background(), back)
	}
}
