package httpapi

import (
	"context"
	"strings"
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

// keptClaims holds the jobs of cut polls per claimer. The Client owns it.
type keptClaims = keptSet[claimerKey, engine.ClaimedJob]

// claimerKey names a claimer: the claims whose jobs may stand in for each
// other's.
type claimerKey struct {
	queue, owner, types, buildID string
	tailEvents                   int
	leaseMS                      int64 // so that every job kept for a claimer is kept as long
}

func claimerOf(c engine.Claim) claimerKey {
	return claimerKey{queue: c.Queue, owner: c.Owner, types: strings.Join(c.Types, "\x00"), buildID: c.BuildID,
		tailEvents: c.TailEvents, leaseMS: c.LeaseMS}
}

// keptFor is how long jobs claimed under c are kept: a quarter of their
// lease, so that a worker that takes one late still has most of the lease
// before its first heartbeat, and at most keptMaxFor.
func keptFor(c engine.Claim) time.Duration {
	return keptForLease(c.LeaseMS, 0) // the node's default lease, unknown here: keep nothing
}

// keptForLease is a quarter of a lease of leaseMS, at most keptMaxFor, and
// unknown when the lease is the node's default (leaseMS 0).
func keptForLease(leaseMS int64, unknown time.Duration) time.Duration {
	lease := time.Duration(leaseMS) * time.Millisecond
	if lease <= 0 {
		return unknown
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
	key := claimerOf(claim)
	if !c.kept.hold(key, ownerOfClaim(key), jobs, until) {
		c.releaseSurplus(context.Background(), jobs)
		return
	}
	time.AfterFunc(time.Until(until), func() { c.expireKept(key) })
}

// ownerOfClaim names the worker identity of a job claimer.
func ownerOfClaim(k claimerKey) queueOwner { return queueOwner{k.queue, k.owner} }

// takeKept returns up to max jobs kept for long polls like claim, the
// oldest first. With none, it returns a channel closed when some are kept.
// A claim also ends its claimer's stop (ReleaseKept): a worker of that
// identity runs again.
func (c *Client) takeKept(claim engine.Claim, max int) ([]engine.ClaimedJob, <-chan struct{}) {
	key := claimerOf(claim)
	return c.kept.take(key, ownerOfClaim(key), max)
}

// dropKept removes from the jobs kept for claims like claim those with the
// leases of jobs.
func (c *Client) dropKept(claim engine.Claim, jobs []engine.ClaimedJob) {
	if len(jobs) == 0 {
		return
	}
	leases := make(map[claimedLease]bool, len(jobs))
	for _, j := range jobs {
		leases[leaseOf(j)] = true
	}
	c.kept.drop(claimerOf(claim), func(j engine.ClaimedJob) bool { return leases[leaseOf(j)] })
}

// expireKept gives back the jobs kept for key whose time ran out.
func (c *Client) expireKept(key claimerKey) {
	if back := c.kept.expire(key); len(back) > 0 {
		c.releaseSurplus(context.Background(), back)
	}
}

// ReleaseKept implements engine.KeptClaimReleaser: it gives back every job
// kept for claims of queue by owner, and until their next claim gives back
// at once whatever their late answers bring. A worker calls it once its
// pollers stopped.
func (c *Client) ReleaseKept(ctx context.Context, queue, owner string) {
	if back := c.kept.stop(queueOwner{queue, owner}, ownerOfClaim); len(back) > 0 {
		c.releaseSurplus(ctx, back)
	}
}
