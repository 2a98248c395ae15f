package engine

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// This file is the contract of a sharded cluster (docs/sharding.md): how
// many shards there may be, which shard a workflow id, a job id or a review
// id belongs to, and the error that refuses what would cross shards before
// phase 2 delivers it. Everything here is a pure function of its arguments,
// so the machine (which checks that what it stores belongs to its shard),
// the HTTP router of a node and the Go client all compute the same answer.

// MaxShards is the largest shard count a cluster may be created with.
const MaxShards = 4096

// ShardIDShift is where a shard's index sits in the job and review ids it
// assigns: id = shard<<ShardIDShift | n, with n counting from 1 in the
// shard. The 12 bits above it hold indexes up to MaxShards-1, so the
// largest id is 2^53-1, the largest integer JSON readers in JavaScript
// hold exactly; every shard has 2^41-1 (about 2.2 trillion) ids. Shard 0
// assigns exactly the ids an unsharded store does (embedded mode, and a
// cluster of one group), so every id stored before sharding existed stays
// valid and keeps its meaning.
const ShardIDShift = 41

// MaxShardSeq is the largest counter value one shard may put under its
// index (2^41-1).
const MaxShardSeq = 1<<ShardIDShift - 1

// ResourceHomeShard is the shard that holds the whole resource pool in phase
// 1: resource commands route there, and a step elsewhere that asks for a
// resource is refused with ErrCrossShard until phase 2 leases units across
// shards.
const ResourceHomeShard = 0

// ErrCrossShard: the command would act across two shards of a sharded
// cluster (a child whose workflow id hashes to another shard than its
// parent's, a schedule whose runs would live on another shard, a step
// leasing from the resource pool of another shard, a heartbeat naming
// leases of several shards sent to one node). Phase 1 refuses it, writing
// nothing; see CrossShardError and docs/sharding.md.
var ErrCrossShard = errors.New("engine: crosses shards")

// CrossShardCode is the stable code of a CrossShardError.
const CrossShardCode = "HDL-ENGINE-0100"

// CrossShardError details ErrCrossShard: what was asked, the shard it was
// applied on and the shard it would have to reach. It also matches
// ErrInvalidCommand, since retrying the same command cannot succeed.
type CrossShardError struct {
	Command string // the command kind's name
	What    string // what crossed, in words
	From    int    // the shard the command was applied on (or routed to)
	To      int    // the shard it would reach; -1: several
}

func (e *CrossShardError) Error() string {
	where := fmt.Sprintf("lives on shard %d, not on shard %d", e.To, e.From)
	if e.To < 0 {
		where = fmt.Sprintf("would not all live on shard %d", e.From)
	}
	return fmt.Sprintf("engine: crosses shards: %s: %s %s; "+
		"a sharded cluster does not deliver this across shards yet: ids that share a hash tag, such as "+
		"order-{42} and order-{42}-payment, live on one shard (docs/sharding.md, \"Cross-shard work\") [%s]",
		e.Command, e.What, where, CrossShardCode)
}

// Unwrap matches ErrCrossShard and ErrInvalidCommand.
func (e *CrossShardError) Unwrap() []error { return []error{ErrCrossShard, ErrInvalidCommand} }

// Code returns CrossShardCode.
func (e *CrossShardError) Code() string { return CrossShardCode }

// ShardLayout says which shard of how many a store holds. The zero value
// (and Count 1) is an unsharded store: embedded mode and a cluster of one
// Raft group, whose ids and checks are exactly those of before sharding.
type ShardLayout struct {
	// Index is the shard, in [0, Count).
	Index int
	// Count is the cluster's shard count, fixed when it was created;
	// 0 and 1 mean unsharded.
	Count int
}

// Sharded reports whether the layout has more than one shard, the only case
// in which the machine checks that what it stores belongs to its shard.
func (l ShardLayout) Sharded() bool { return l.Count > 1 }

// Validate reports a layout no cluster can have.
func (l ShardLayout) Validate() error {
	switch {
	case l.Count < 0 || l.Count > MaxShards:
		return fmt.Errorf("%w: shard count %d is not in [1, %d]", ErrInvalidCommand, l.Count, MaxShards)
	case l.Index < 0 || l.Index >= max(l.Count, 1):
		return fmt.Errorf("%w: shard index %d is not in [0, %d)", ErrInvalidCommand, l.Index, max(l.Count, 1))
	}
	return nil
}

// JobIDOf returns the id of the n-th job of shard s (n from 1).
func JobIDOf(s int, n uint64) JobID { return JobID(uint64(s)<<ShardIDShift | n) }

// ShardOfJob returns the shard whose index is in id's high bits. It may be
// beyond a cluster's count for an id no shard assigned: such a job exists
// nowhere.
func ShardOfJob(id JobID) int { return int(uint64(id) >> ShardIDShift) }

// ShardOfReview returns the shard whose index is in a review task id's high
// bits, as ShardOfJob.
func ShardOfReview(id ReviewID) int { return int(uint64(id) >> ShardIDShift) }

// ShardOfKey returns the shard, among count, of a workflow id (also of a
// schedule id and of a review job's name, which route the same way). With
// count 0 or 1 it is 0. Otherwise:
//
//   - a name a shard gave a job started without a workflow id, "job-<id>" or
//     "job-<id>.<n>" (see the machine's defaultWorkflowID), belongs to the
//     shard in that id's high bits, when that shard is below count;
//   - a key holding a hash tag, the text between its first '{' and the
//     first '}' after it when that text is not empty (Redis Cluster's
//     convention), hashes by the tag alone, so that ids sharing a tag share
//     a shard: "order-{42}" and the ids the SDK derives from it for its
//     children and activities ("order-{42}/17/a1");
//   - any other key hashes whole.
//
// The hash is 64-bit FNV-1a, modulo count: stable across versions and
// platforms (it is specified, and in Go's standard library), cheap on the
// short strings ids are, and spreading them evenly enough for a count fixed
// when the cluster is created (docs/sharding.md, "Shards").
func ShardOfKey(key string, count int) int {
	if count <= 1 {
		return 0
	}
	if id, ok := derivedJobID(key); ok {
		if s := ShardOfJob(id); s < count {
			return s
		}
	}
	return int(hashKey(hashTag(key)) % uint64(count))
}

// ShardOfPrefix returns the shard, among count, of every key that starts
// with prefix, and whether there is one: only a prefix holding a non-empty
// hash tag (or any prefix with count 0 or 1) fixes the shard of what
// follows it. A schedule's runs (its workflow id, then "-<time>") live on
// one shard only so.
func ShardOfPrefix(prefix string, count int) (int, bool) {
	if count <= 1 {
		return 0, true
	}
	tag := hashTag(prefix)
	if tag == prefix {
		return 0, false
	}
	return int(hashKey(tag) % uint64(count)), true
}

// hashKey is 64-bit FNV-1a of k.
func hashKey(k string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(k)) // a hash.Hash never fails to write
	return h.Sum64()
}

// hashTag returns the part of key that decides its shard: its hash tag when
// it has a non-empty one, else key.
func hashTag(key string) string {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return key
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return key
	}
	return key[open+1 : open+1+end]
}

// derivedJobID reads the job id of "job-<id>" or "job-<id>.<n>" written
// in canonical decimal (no sign, no leading zero).
func derivedJobID(key string) (JobID, bool) {
	rest, ok := strings.CutPrefix(key, "job-")
	if !ok {
		return 0, false
	}
	num, suffix, dotted := strings.Cut(rest, ".")
	if dotted && !canonicalDecimal(suffix) {
		return 0, false
	}
	if !canonicalDecimal(num) {
		return 0, false
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil || n == 0 {
		return 0, false
	}
	return JobID(n), true
}

func canonicalDecimal(s string) bool {
	if s == "" || len(s) > 20 || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ShardOfTarget returns the shard of the job t names: by its id when it
// has one, else by its workflow id.
func ShardOfTarget(t Target, count int) int {
	if count <= 1 {
		return 0
	}
	if t.Job != 0 {
		return ShardOfJob(t.Job)
	}
	return ShardOfKey(t.WorkflowID, count)
}

// ShardOfReviewTarget returns the shard of the review task t names: by its
// id when it has one, else by its job's name.
func ShardOfReviewTarget(t ReviewTarget, count int) int {
	if count <= 1 {
		return 0
	}
	if t.ID != 0 {
		return ShardOfReview(t.ID)
	}
	return ShardOfKey(t.Job, count)
}

// ShardOfCreate returns the shard a CreateJob goes to: its parent's when it
// names one (the parent's shard checks the parent's lease, and delivers a
// child whose workflow id routes to another shard through its outbox);
// else its workflow id's; without either, the shard its request id hashes
// to, so that a retry lands where the first try did. It returns -1 for a create that
// has none of the three: the router picks a shard.
func ShardOfCreate(c *CreateJob, count int) int {
	switch {
	case count <= 1:
		return 0
	case c.ParentID != 0:
		// A child goes to its parent's shard, which checks the parent's
		// lease; one whose workflow id routes elsewhere is delivered from
		// there through the parent shard's outbox (phase 2).
		return ShardOfJob(c.ParentID)
	case c.WorkflowID != "":
		return ShardOfKey(c.WorkflowID, count)
	case c.RequestID != "":
		return int(hashKey(c.RequestID) % uint64(count))
	}
	return -1
}

// ShardRoute says how a command reaches the shards of a sharded cluster.
type ShardRoute uint8

const (
	// RouteNone: the command has no route on a sharded cluster; it is
	// refused there. A command kind added without deciding its route gets
	// this (and fails TestEveryKindHasAShardRoute).
	RouteNone ShardRoute = iota
	// RouteOne: the command acts on one shard, the one ShardOfCommand
	// returns.
	RouteOne
	// RouteLocal: claims. Each node claims from the shards it leads, and
	// a worker polls the nodes (docs/sharding.md, "Claims").
	RouteLocal
	// RouteSplit: a heartbeat naming leases of several shards; it is
	// split by shard, each part sent to its shard.
	RouteSplit
	// RouteInternal: the sweeps a shard's leader proposes to its own group
	// (timers, reclaims, deadlines, schedules, a batch's pages); never
	// routed.
	RouteInternal
	// RouteEvery: a batch operation, which acts on the runs a query finds
	// on every shard: the router starts (or stops) the batch on each shard
	// under one batch id, and each shard's leader runs its part.
	RouteEvery
)

// ShardOfCommand returns how cmd routes among count shards and, for
// RouteOne, its shard; -1 for a CreateJob the router places (see
// ShardOfCreate). Every command kind has a decision here; the table test
// fails for a kind without one.
func ShardOfCommand(cmd Command, count int) (int, ShardRoute) {
	job := func(id JobID) (int, ShardRoute) { return ShardOfJob(id), RouteOne }
	target := func(t Target) (int, ShardRoute) { return ShardOfTarget(t, count), RouteOne }
	key := func(k string) (int, ShardRoute) { return ShardOfKey(k, count), RouteOne }
	switch c := cmd.(type) {
	case *CreateJob:
		return ShardOfCreate(c, count), RouteOne
	case *Claim, *ClaimReviews:
		return 0, RouteLocal
	case *Heartbeat:
		return leasesShard(len(c.Leases), func(i int) int { return ShardOfJob(c.Leases[i].Job) })
	case *ReviewHeartbeat:
		return leasesShard(len(c.Leases), func(i int) int { return ShardOfReview(c.Leases[i].Review) })
	case *AppendEvents:
		return job(c.Job)
	case *CommitStep:
		return job(c.Job)
	case *Wait:
		return job(c.Job)
	case *Complete:
		return job(c.Job)
	case *Fail:
		return job(c.Job)
	case *Requeue:
		return job(c.Job)
	case *ContinueAsNew:
		return job(c.Job)
	case *LeaseStep:
		return job(c.Job)
	case *StepHeartbeat:
		return job(c.Job)
	case *EndStepAttempt:
		return job(c.Job)
	case *CompleteAsync:
		return job(c.Job)
	case *Signal:
		if c.Sender != nil {
			// A run's worker signalling on behalf of its step: the
			// sender's shard checks its lease, records the outcome as the
			// step's effect, and reaches a target elsewhere through its
			// outbox.
			return job(c.Sender.Job)
		}
		return target(c.Target)
	case *Cancel:
		return target(c.Target)
	case *Activate:
		return target(c.Target)
	case *Suspend:
		return target(c.Target)
	case *Resume:
		return target(c.Target)
	case *RequestCancel:
		if c.Sender != nil {
			return job(c.Sender.Job) // as a Signal's Sender
		}
		return target(c.Target)
	case *Terminate:
		if c.ByParent != nil {
			// A parent's worker terminating its child as the parent ends:
			// the parent's shard checks its lease, and reaches a child on
			// another shard through its outbox.
			return job(c.ByParent.Job)
		}
		return target(c.Target)
	case *Pause:
		return target(c.Target)
	case *Unpause:
		return target(c.Target)
	case *PauseActivity:
		// A run's activity tasks live on its shard (phase 1 refuses one
		// elsewhere), so the activity commands reach them there.
		return target(c.Target)
	case *UnpauseActivity:
		return target(c.Target)
	case *ResetActivity:
		return target(c.Target)
	case *UpdateActivityOptions:
		return target(c.Target)
	case *ResetJob:
		// The new run has the base run's workflow id, so it is created on
		// the base run's shard.
		return target(c.Target)
	case *AnswerStep:
		return target(c.Target)
	case *ConfigureJob:
		return target(c.Target)
	case *AddResource, *DrainResource, *RemoveResource:
		return ResourceHomeShard, RouteOne
	case *CreateSchedule:
		return key(c.ID)
	case *UpdateSchedule:
		return key(c.ID)
	case *PauseSchedule:
		return key(c.ID)
	case *TriggerSchedule:
		return key(c.ID)
	case *DeleteSchedule:
		return key(c.ID)
	case *BackfillSchedule:
		return key(c.ID)
	case *CreateReview:
		if c.ParentJob != 0 {
			// A workflow step's task goes to its run's shard, which checks
			// the run's lease; one whose review job routes elsewhere is
			// delivered from there through that shard's outbox.
			return job(c.ParentJob)
		}
		return key(c.Job)
	case *ReviewCommand:
		return ShardOfReviewTarget(c.ReviewTarget, count), RouteOne
	case *ReviewReport:
		return ShardOfReview(c.Review), RouteOne
	case *FireTimers, *Reclaim, *ReleaseDelayed, *ExpireDeadlines, *FireSchedules, *ExpireSteps, *ReclaimReviews, *AdvanceBatch:
		return 0, RouteInternal
	case *StartBatch, *StopBatch:
		return 0, RouteEvery
	case *Deliver:
		// A node delivers an outbox entry to the entry's target shard.
		return c.Target, RouteOne
	case *AckDelivery, *ChildClosed, *CloseChild, *ScheduleRunClosed, *AskUnit, *UnitGranted, *ReleaseUnit, *ReviewClosed:
		// The source's leader acknowledges to its own group; the others
		// travel only inside a Deliver.
		return 0, RouteInternal
	}
	return 0, RouteNone
}

// leasesShard is the route of a heartbeat over n leases: RouteOne when they
// all live on one shard (none: shard 0), else RouteSplit.
func leasesShard(n int, shard func(i int) int) (int, ShardRoute) {
	if n == 0 {
		return 0, RouteOne
	}
	s := shard(0)
	for i := 1; i < n; i++ {
		if shard(i) != s {
			return 0, RouteSplit
		}
	}
	return s, RouteOne
}
