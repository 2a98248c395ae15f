package machine_test

import (
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// putAll writes key and value pairs into db in one batch.
func putAll(t *testing.T, db *storage.DB, kv ...[]byte) {
	t.Helper()
	b := db.NewBatch()
	tx := b.Begin()
	for i := 0; i+1 < len(kv); i += 2 {
		tx.Set(kv[i], kv[i+1])
	}
	if err := b.Add(tx); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
}

func memStore(t *testing.T) *storage.DB {
	t.Helper()
	db, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, db) })
	return db
}

// reviewJobOn returns a review job id that routes to shard k of count.
func reviewJobOn(k, count int) string { return keyOnShard("rj-", k, count) }

// TestVerifyShardRemoteReviews: VerifyShard finds a remote review link of a
// job the shard does not hold, one waiting for an entry that is not
// pending, one closed without its task, and one naming a shard its review
// job does not route to.
func TestVerifyShardRemoteReviews(t *testing.T) {
	l := engine.ShardLayout{Index: 0, Count: 2}
	parent := engine.JobIDOf(0, 1)
	job := machine.EncodeJob(&engine.Job{ID: parent, WorkflowID: keyOnShard("wf-", 0, 2), Status: engine.StatusRunning})
	rj := reviewJobOn(1, 2)
	ref := engine.DeliveryRef{Source: 0, Target: 1, Seq: 1}
	for _, tc := range []struct {
		name string
		link *engine.RemoteReview
		job  bool
		want string
	}{
		{"link without its job", &engine.RemoteReview{Parent: parent, Step: "s", Job: rj, Phase: "p", Delivery: ref, Review: engine.ReviewID(engine.JobIDOf(1, 1))},
			false, "the job does not exist"},
		{"pending without its entry", &engine.RemoteReview{Parent: parent, Step: "s", Job: rj, Phase: "p", Delivery: ref},
			true, "which is not pending"},
		{"closed without its task", &engine.RemoteReview{Parent: parent, Step: "s", Job: rj, Phase: "p", Delivery: ref, Error: "x", Closed: true},
			true, "closed without a task"},
		{"review job elsewhere", &engine.RemoteReview{Parent: parent, Step: "s", Job: reviewJobOn(0, 2), Phase: "p", Delivery: ref, Error: "x"},
			true, "routes to shard 0, not 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := memStore(t)
			kv := [][]byte{storage.RemoteReviewKey(uint64(parent), "s"), machine.EncodeRemoteReview(tc.link)}
			if tc.job {
				kv = append(kv, storage.JobKey(uint64(parent)), job)
			}
			putAll(t, db, kv...)
			viewOK(t, db, func(r *storage.Reader) error {
				var found bool
				errs := machine.VerifyShard(r, 0, l)
				for _, err := range errs {
					found = found || strings.Contains(err.Error(), tc.want)
				}
				if !found {
					t.Fatalf("VerifyShard = %v, want an error with %q", errs, tc.want)
				}
				return nil
			})
		})
	}
}

// TestVerifyAcrossShardsReviews: a task on shard 1 naming a run of shard 0
// whose step holds no link to it, a link naming a task shard 1 does not
// hold, and a task that ended whose end is neither on the link nor on its
// way are each found; the same stores with the link right are clean.
func TestVerifyAcrossShardsReviews(t *testing.T) {
	parent, id := engine.JobIDOf(0, 1), engine.ReviewID(engine.JobIDOf(1, 1))
	rj := reviewJobOn(1, 2)
	check := func(dbs ...*storage.DB) []error {
		return machine.VerifyAcrossShards(len(dbs), func(k int, fn func(r *storage.Reader) error) error { return dbs[k].View(fn) }, 0)
	}
	task := func(state engine.ReviewState) []byte {
		return machine.EncodeReview(&engine.Review{ID: id, Job: rj, Phase: "p", Queue: "q", Type: "w", State: state, ParentJob: parent, ParentStep: "s1"})
	}
	link := func(step string, review engine.ReviewID, closed bool) (k, v []byte) {
		return storage.RemoteReviewKey(uint64(parent), step), machine.EncodeRemoteReview(&engine.RemoteReview{Parent: parent, Step: step, Job: rj,
			Phase: "p", Delivery: engine.DeliveryRef{Source: 0, Target: 1, Seq: 1}, Review: review, Closed: closed})
	}
	s0, s1 := memStore(t), memStore(t)
	putAll(t, s1, storage.ReviewKey(uint64(id)), task(engine.ReviewPending))
	if errs := check(s0, s1); len(errs) != 1 || !strings.Contains(errs[0].Error(), "has no link to it") {
		t.Fatalf("a task without its run's link: %v", errs)
	}
	k, v := link("s1", id+1, false)
	putAll(t, s0, k, v)
	if errs := check(s0, s1); len(errs) != 2 || !strings.Contains(errs[0].Error()+errs[1].Error(), "does not hold") {
		t.Fatalf("a link naming a task that does not exist: %v", errs)
	}

	s0, s1 = memStore(t), memStore(t)
	k, v = link("s1", id, false)
	putAll(t, s0, k, v)
	putAll(t, s1, storage.ReviewKey(uint64(id)), task(engine.ReviewPending))
	if errs := check(s0, s1); len(errs) != 0 {
		t.Fatalf("sound stores: %v", errs)
	}
	putAll(t, s1, storage.ReviewKey(uint64(id)), task(engine.ReviewCanceled))
	if errs := check(s0, s1); len(errs) != 1 || !strings.Contains(errs[0].Error(), "nor on its way") {
		t.Fatalf("a task that ended, its end lost: %v", errs)
	}
	k, v = link("s1", id, true)
	putAll(t, s0, k, v)
	if errs := check(s0, s1); len(errs) != 0 {
		t.Fatalf("a task that ended, its end on the link: %v", errs)
	}
}
