package machine

import (
	"bytes"
	"fmt"
	"reflect"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// tasks checks every review task: its history is legal (CheckReviewHistory),
// its record equals the projection of its history, its phase and job
// entries exist, it sits in a claim index exactly when it is claimable
// (PENDING with every dependency SUCCESS, or REVIEWING with no reviewer),
// it sits in the index of tasks awaiting a person exactly when its state
// awaits one (ReviewState.AwaitsPerson), a held lease has its lease entry, and no task index holds an entry that
// no record implies.
func (v *verifier) reviews() {
	want := map[string]bool{}
	leases := map[string]bool{}
	byID := map[engine.ReviewID]*engine.Review{}
	var all []*engine.Review
	err := v.r.Scan(storage.ReviewRecordPrefix, nil, true, func(k, b []byte) (bool, error) {
		t := new(engine.Review)
		if _, err := storage.DecodeAt(k, b, storage.KindReview, reviewVersion, t); err != nil {
			return v.add(err), nil
		}
		byID[t.ID] = t
		all = append(all, t)
		return true, nil
	})
	if err != nil {
		v.add(err)
		return
	}
	for _, t := range all {
		if !v.review(t, byID, want, leases) {
			return
		}
	}
	for _, p := range [][]byte{storage.ReviewJobsPrefix, storage.ReviewPhasesPrefix, storage.ReviewDepsPrefix,
		storage.ReviewWorkPrefix, storage.ReviewReviewPrefix, storage.ReviewAwaitPrefix} {
		err := v.r.Scan(p, nil, false, func(k, _ []byte) (bool, error) {
			if !want[string(k)] {
				return v.add(fmt.Errorf("task index entry %q is implied by no task record", k)), nil
			}
			delete(want, string(k))
			return true, nil
		})
		if err != nil {
			v.add(err)
		}
	}
	for k := range want {
		if !v.add(fmt.Errorf("task index entry %q is missing", k)) {
			return
		}
	}
	for k := range leases {
		if _, err := v.r.Get([]byte(k)); err != nil {
			if !v.add(fmt.Errorf("task lease entry %q is missing (%v)", k, err)) {
				return
			}
		}
	}
}

func (v *verifier) review(t *engine.Review, byID map[engine.ReviewID]*engine.Review, want, leases map[string]bool) bool {
	hist, err := ReadReviewHistory(v.r, t.ID)
	if err != nil {
		return v.add(fmt.Errorf("task %d: %w", t.ID, err))
	}
	if err := engine.CheckReviewHistory(hist); err != nil {
		return v.add(fmt.Errorf("task %d: %w", t.ID, err))
	}
	if p := engine.ProjectReview(t, hist); !reflect.DeepEqual(normReview(p), normReview(t)) {
		return v.add(fmt.Errorf("task %d: record %+v is not the projection of its history %+v", t.ID, *t, *p))
	}
	want[string(storage.ReviewJobKey(t.Job, uint64(t.ID)))] = true
	want[string(storage.ReviewPhaseKey(t.Job, t.Phase))] = true
	b, err := v.r.Get(storage.ReviewPhaseKey(t.Job, t.Phase))
	if err != nil || !bytes.Equal(b, storage.U64(uint64(t.ID))) {
		if !v.add(fmt.Errorf("task %d: phase %s/%s does not name it (%v)", t.ID, t.Job, t.Phase, err)) {
			return false
		}
	}
	met := true
	for _, d := range t.Deps {
		want[string(storage.ReviewDepKey(uint64(d), uint64(t.ID)))] = true
		dt := byID[d]
		if dt == nil {
			return v.add(fmt.Errorf("task %d: dependency %d does not exist", t.ID, d))
		}
		if dt.ID >= t.ID {
			return v.add(fmt.Errorf("task %d: dependency %d was not created before it", t.ID, d))
		}
		met = met && dt.State == engine.ReviewSuccess
	}
	claimable := (t.State == engine.ReviewPending && met) || (t.State == engine.ReviewReviewing && t.LeaseOwner == "")
	if claimable != (t.ReadyAtMS != 0) {
		return v.add(fmt.Errorf("task %d: %s with dependencies met %v has ready time %d", t.ID, t.State, met, t.ReadyAtMS))
	}
	for _, k := range reviewIndexKeys(t) {
		want[k] = true
	}
	if t.HoldsLease() {
		leases[string(storage.ReviewLeaseKey(t.LeaseExpiryMS, uint64(t.ID)))] = true
	}
	// A held lease whose claim issued a token keeps its digest; nothing
	// else holds one.
	issued := false
	for i := range hist {
		if e := &hist[i]; e.Type == engine.ReviewEventStarted || e.Type == engine.ReviewEventReviewerLeased {
			issued = e.TokenIssued
		}
	}
	if want := t.HoldsLease() && issued; want != (len(t.LeaseDigest) > 0) {
		return v.add(fmt.Errorf("task %d: %s record holds a lease token digest: %v, its claim issued a token: %v",
			t.ID, t.State, len(t.LeaseDigest) > 0, issued))
	}
	return true
}

// normReview makes nil and empty slices compare equal.
func normReview(t *engine.Review) engine.Review {
	c := *t
	if len(c.Deps) == 0 {
		c.Deps = nil
	}
	if len(c.Config.Acceptance) == 0 {
		c.Config.Acceptance = nil
	}
	if len(c.Config.Input) == 0 {
		c.Config.Input = nil
	}
	if len(c.Output) == 0 {
		c.Output = nil
	}
	if len(c.Assessment.Recommendations) == 0 {
		c.Assessment.Recommendations = nil
	}
	return c
}
