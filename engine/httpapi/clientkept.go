package httpapi

import (
	"context"
	"slices"
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
// the client keeps them, and the next long poll of the same claimer (the
// same queue, owner, types, build, tail and lease) takes them before, or
// instead of, its polls. Whatever a claimer does not take within keptFor of
// the claim that took it is given back, fenced by its lease, as a cut
// claim's jobs were before; so is everything kept for a worker that
// stopped (ReleaseKept).

var _ engine.KeptClaimReleaser = (*Client)(nil)

// keptMaxFor bounds how long a kept job waits for its claimer's next claim:
// a worker with free slots claims again at once, and one that has none for
// this long is better served by the job going back to its queue.
const keptMaxFor = 2 * time.Second

// keptClaims holds the jobs of cut polls per claimer. The Client owns it;
// its methods are safe for concurrent use, and none does I/O under mu.
type keptClaims struct {
	mu   sync.Mutex
	jobs map[claimerKey][]keptJob
	// wake is closed, and dropped, when jobs are kept for its claimer: a
	// long poll of that claimer waiting meanwhile takes them then.
	wake map[claimerKey]chan struct{}
	// stopped holds the claimers whose worker stopped (ReleaseKept):
	// what is kept for them is given back at once, until they claim again.
	stopped map[queueOwner]bool
}

// claimerKey names a claimer: the claims whose jobs may stand in for each
// other's.
type claimerKey struct {
	queue, owner, types, buildID string
	tailEvents                   int
	leaseMS                      int64 // so that every job kept for a claimer is kept as long
}

type queueOwner struct{ queue, owner string }

type keptJob struct {
	job   engine.ClaimedJob
	until time.Time // given back at or after this
}

func claimerOf(c engine.Claim) claimerKey {
	return claimerKey{queue: c.Queue, owner: c.Owner, types: strings.Join(c.Types, "\x00"), buildID: c.BuildID,
		tailEvents: c.TailEvents, leaseMS: c.LeaseMS}
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

// keep holds jobs, which claim took, for the next long poll like claim,
// and gives back, keptFor(claim) after asked (when the claim was sent, so
// no later than the leases began), those no claim took by then. Jobs whose
// time is over already, or whose worker stopped, are given back at once.
func (c *Client) keep(claim engine.Claim, jobs []engine.ClaimedJob, asked time.Time) {
	if len(jobs) == 0 {
		return
	}
	until := asked.Add(keptFor(claim))
	wait := time.Until(until)
	key := claimerOf(claim)
	c.kept.mu.Lock()
	if wait <= 0 || c.kept.stopped[queueOwner{claim.Queue, claim.Owner}] {
		c.kept.mu.Unlock()
		c.releaseSurplus(context.Background(), jobs)
		return
	}
	if c.kept.jobs == nil {
		c.kept.jobs = map[claimerKey][]keptJob{}
	}
	held := c.kept.jobs[key]
	for _, j := range jobs {
		held = append(held, keptJob{job: j, until: until})
	}
	// Claims answer out of order: keep the oldest deadline first, which
	// expireKept relies on.
	slices.SortStableFunc(held, func(a, b keptJob) int { return a.until.Compare(b.until) })
	c.kept.jobs[key] = held
	if ch := c.kept.wake[key]; ch != nil {
		close(ch)
		delete(c.kept.wake, key)
	}
	c.kept.mu.Unlock()
	time.AfterFunc(wait, func() { c.expireKept(key) })
}

// takeKept returns up to max jobs kept for long polls like claim, the
// oldest first. With none, it returns a channel closed when some are kept.
// A claim also ends its claimer's stop (ReleaseKept): a worker of that
// identity runs again.
func (c *Client) takeKept(claim engine.Claim, max int) ([]engine.ClaimedJob, <-chan struct{}) {
	key := claimerOf(claim)
	c.kept.mu.Lock()
	defer c.kept.mu.Unlock()
	delete(c.kept.stopped, queueOwner{claim.Queue, claim.Owner})
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

// ReleaseKept implements engine.KeptClaimReleaser: it gives back every job
// kept for claims of queue by owner, and until their next claim gives back
// at once whatever their late answers bring. A worker calls it once its
// pollers stopped.
func (c *Client) ReleaseKept(ctx context.Context, queue, owner string) {
	var back []engine.ClaimedJob
	c.kept.mu.Lock()
	if c.kept.stopped == nil {
		c.kept.stopped = map[queueOwner]bool{}
	}
	c.kept.stopped[queueOwner{queue, owner}] = true
	for key, held := range c.kept.jobs {
		if key.queue == queue && key.owner == owner {
			for _, k := range held {
				back = append(back, k.job)
			}
			delete(c.kept.jobs, key)
		}
	}
	c.kept.mu.Unlock()
	if len(back) > 0 {
		c.releaseSurplus(ctx, back)
	}
}
