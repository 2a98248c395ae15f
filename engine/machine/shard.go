package machine

import (
	"fmt"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// What a shard of a sharded cluster checks (docs/sharding.md). A shard's
// store holds only what routes to it: runs whose workflow id hashes to it,
// schedules whose id does and whose runs will, review tasks of the review
// jobs that hash to it, and (on the resource home shard) the resource pool.
// A command that would link this shard to another without a delivery (a
// task of a run elsewhere, a resource command off the pool's shard) is
// refused with an *engine.CrossShardError; it writes nothing. What phase 2
// delivers (children, signals, schedules' runs, resource units) goes
// through the outbox instead. On an unsharded store (embedded, or a cluster of
// one group) none of this applies and ids are what they always were.

// shardID is the id a shard assigns as the n-th of its kind (jobs,
// review tasks): n itself when unsharded, else n under the shard's index.
func (a *applier) shardID(n uint64, what string) (uint64, error) {
	if !a.shard.Sharded() {
		return n, nil
	}
	if n > engine.MaxShardSeq {
		return 0, fmt.Errorf("%w: shard %d has assigned all of its %d %s ids", engine.ErrInvalidCommand, a.shard.Index, uint64(engine.MaxShardSeq), what)
	}
	return uint64(engine.JobIDOf(a.shard.Index, n)), nil
}

// crossShard returns the refusal of cmd, whose what lives on shard to.
func (a *applier) crossShard(cmd, what string, to int) error {
	return &engine.CrossShardError{Command: cmd, What: what, From: a.shard.Index, To: to}
}

// workflowOnShard refuses a run whose workflow id routes to another shard:
// nobody could find it by that id, since every lookup goes where the id
// routes.
func (a *applier) workflowOnShard(cmd, wf string) error {
	if !a.shard.Sharded() || wf == "" {
		return nil
	}
	if s := engine.ShardOfKey(wf, a.shard.Count); s != a.shard.Index {
		return a.crossShard(cmd, fmt.Sprintf("workflow id %q", wf), s)
	}
	return nil
}

// jobOnShard refuses a link to a job of another shard (a parent).
func (a *applier) jobOnShard(cmd, what string, id engine.JobID) error {
	if !a.shard.Sharded() || id == 0 {
		return nil
	}
	if s := engine.ShardOfJob(id); s != a.shard.Index {
		return a.crossShard(cmd, fmt.Sprintf("%s %d", what, id), s)
	}
	return nil
}

// scheduleOnShard refuses a schedule that routes to another shard.
func (a *applier) scheduleOnShard(cmd, id string) error {
	if !a.shard.Sharded() {
		return nil
	}
	// Its runs may live on any shard: those elsewhere start, and report
	// their ends, through the outbox (schedule_shards.go).
	if s := engine.ShardOfKey(id, a.shard.Count); s != a.shard.Index {
		return a.crossShard(cmd, fmt.Sprintf("schedule %q", id), s)
	}
	return nil
}

// resourcesHere refuses a resource command on a shard that does not hold
// the resource pool (a step there asks the pool's shard for its unit:
// resource_shards.go).
func (a *applier) resourcesHere(cmd, what string) error {
	if !a.shard.Sharded() || a.shard.Index == engine.ResourceHomeShard {
		return nil
	}
	return a.crossShard(cmd, what, engine.ResourceHomeShard)
}

// reviewOnShard refuses a review task whose job routes to another shard, or
// whose parent run lives on another, unless it crosses shards through the
// outbox: it returns the review job's shard when the task is a workflow
// step's of a run here whose review job routes elsewhere (its create is
// delivered there: review_shards.go), else -1. A task naming a run of
// another shard is taken only delivered from that run's shard.
func (a *applier) reviewOnShard(c *engine.CreateReview) (int, error) {
	if !a.shard.Sharded() {
		return -1, nil
	}
	s := engine.ShardOfKey(c.Job, a.shard.Count)
	switch {
	case a.deliveredReview(c) && s == a.shard.Index:
		return -1, nil
	case s != a.shard.Index && a.delivery == nil && c.ParentJob != 0 && engine.ShardOfJob(c.ParentJob) == a.shard.Index:
		return s, nil
	case s != a.shard.Index:
		return -1, a.crossShard("CreateTask", fmt.Sprintf("review job %q", c.Job), s)
	}
	return -1, a.jobOnShard("CreateTask", "parent job", c.ParentJob)
}

// VerifyShard is Verify for the store of shard l of a sharded cluster: it
// also checks that the store holds only what routes to that shard (the
// checks above, made of what is stored): every job and review task id
// carries the shard's index, every run's workflow id, every review job and
// every schedule id routes to it, a run's parent on another shard lives on
// a shard of the cluster, a resource pool lives only on the home shard, and
// the outbox's records are well-formed (outbox_verify.go). With an unsharded l it
// is Verify.
func VerifyShard(r *storage.Reader, max int, l engine.ShardLayout) []error {
	errs := Verify(r, max)
	if !l.Sharded() {
		return errs
	}
	v := &verifier{r: r, max: max, errs: errs}
	wrong := func(format string, a ...any) bool {
		return v.add(fmt.Errorf("shard %d of %d: "+format, append([]any{l.Index, l.Count}, a...)...))
	}
	scan := func(prefix []byte, each func(k, b []byte) bool) {
		if err := r.Scan(prefix, nil, true, func(k, b []byte) (bool, error) { return each(k, b), nil }); err != nil {
			v.add(err)
		}
	}
	scan(storage.JobPrefix, func(k, b []byte) bool {
		j := new(engine.Job)
		if _, err := storage.DecodeAt(k, b, storage.KindJob, jobVersion, j); err != nil {
			return true // Verify reported it
		}
		ok := true
		if s := engine.ShardOfJob(j.ID); s != l.Index {
			ok = wrong("job %d carries the index of shard %d", j.ID, s)
		}
		if s := engine.ShardOfKey(j.WorkflowID, l.Count); s != l.Index && ok {
			ok = wrong("job %d has workflow id %q, which routes to shard %d", j.ID, j.WorkflowID, s)
		}
		// A parent on another shard is one the child was delivered from
		// (outbox.go); it must be a shard of the cluster.
		if s := engine.ShardOfJob(j.ParentID); j.ParentID != 0 && s >= l.Count && ok {
			ok = wrong("job %d has parent %d, of shard %d, which the cluster does not have", j.ID, j.ParentID, s)
		}
		return ok
	})
	scan(storage.ReviewRecordPrefix, func(k, b []byte) bool {
		t := new(engine.Review)
		if _, err := storage.DecodeAt(k, b, storage.KindReview, reviewVersion, t); err != nil {
			return true
		}
		ok := true
		if s := engine.ShardOfReview(t.ID); s != l.Index {
			ok = wrong("task %d carries the index of shard %d", t.ID, s)
		}
		if s := engine.ShardOfKey(t.Job, l.Count); s != l.Index && ok {
			ok = wrong("task %d belongs to review job %q, which routes to shard %d", t.ID, t.Job, s)
		}
		// A parent on another shard is one the task was delivered from
		// (review_shards.go); it must be a shard of the cluster.
		if s := engine.ShardOfJob(t.ParentJob); t.ParentJob != 0 && s >= l.Count && ok {
			ok = wrong("task %d has parent %d, of shard %d, which the cluster does not have", t.ID, t.ParentJob, s)
		}
		return ok
	})
	scan(storage.SchedulePrefix, func(k, b []byte) bool {
		s := new(engine.Schedule)
		if _, err := storage.DecodeAt(k, b, storage.KindSchedule, scheduleVersion, s); err != nil {
			return true
		}
		if got := engine.ShardOfKey(s.ID, l.Count); got != l.Index {
			return wrong("schedule %q routes to shard %d", s.ID, got)
		}
		return true
	})
	v.outbox(l, wrong)
	v.sendingMarks(l, wrong)
	v.remoteReviews(l, wrong)
	if l.Index != engine.ResourceHomeShard {
		pool, err := ReadResources(r)
		if err != nil {
			v.add(err)
		} else if len(pool) > 0 {
			wrong("holds %d resources; the pool lives on shard %d", len(pool), engine.ResourceHomeShard)
		}
	}
	for i, err := range v.errs {
		v.errs[i] = MarkStorageError(err)
	}
	return v.errs
}
