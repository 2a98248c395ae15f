package machine

import (
	"bytes"
	"fmt"
	"reflect"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// tasks checks every review task: its history is legal (CheckTaskHistory),
// its record equals the projection of its history, its phase and job
// entries exist, it sits in a claim index exactly when it is claimable
// (PENDING with every dependency SUCCESS, or REVIEWING with no reviewer),
// it sits in the index of tasks awaiting a person exactly when its state
// awaits one (TaskState.AwaitsPerson), a held lease has its lease entry, and no task index holds an entry that
// no record implies.
func (v *verifier) tasks() {
	want := map[string]bool{}
	leases := map[string]bool{}
	byID := map[engine.TaskID]*engine.Task{}
	var all []*engine.Task
	err := v.r.Scan(storage.TaskRecordPrefix, nil, true, func(k, b []byte) (bool, error) {
		t := new(engine.Task)
		if _, err := storage.DecodeAt(k, b, storage.KindTask, taskVersion, t); err != nil {
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
		if !v.task(t, byID, want, leases) {
			return
		}
	}
	for _, p := range [][]byte{storage.TaskJobsPrefix, storage.TaskPhasesPrefix, storage.TaskDepsPrefix,
		storage.TaskWorkPrefix, storage.TaskReviewPrefix, storage.TaskAwaitPrefix} {
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

func (v *verifier) task(t *engine.Task, byID map[engine.TaskID]*engine.Task, want, leases map[string]bool) bool {
	hist, err := ReadTaskHistory(v.r, t.ID)
	if err != nil {
		return v.add(fmt.Errorf("task %d: %w", t.ID, err))
	}
	if err := engine.CheckTaskHistory(hist); err != nil {
		return v.add(fmt.Errorf("task %d: %w", t.ID, err))
	}
	if p := engine.ProjectTask(t, hist); !reflect.DeepEqual(normTask(p), normTask(t)) {
		return v.add(fmt.Errorf("task %d: record %+v is not the projection of its history %+v", t.ID, *t, *p))
	}
	want[string(storage.TaskJobKey(t.Job, uint64(t.ID)))] = true
	want[string(storage.TaskPhaseKey(t.Job, t.Phase))] = true
	b, err := v.r.Get(storage.TaskPhaseKey(t.Job, t.Phase))
	if err != nil || !bytes.Equal(b, storage.U64(uint64(t.ID))) {
		if !v.add(fmt.Errorf("task %d: phase %s/%s does not name it (%v)", t.ID, t.Job, t.Phase, err)) {
			return false
		}
	}
	met := true
	for _, d := range t.Deps {
		want[string(storage.TaskDepKey(uint64(d), uint64(t.ID)))] = true
		dt := byID[d]
		if dt == nil {
			return v.add(fmt.Errorf("task %d: dependency %d does not exist", t.ID, d))
		}
		if dt.ID >= t.ID {
			return v.add(fmt.Errorf("task %d: dependency %d was not created before it", t.ID, d))
		}
		met = met && dt.State == engine.TaskSuccess
	}
	claimable := (t.State == engine.TaskPending && met) || (t.State == engine.TaskReviewing && t.LeaseOwner == "")
	if claimable != (t.ReadyAtMS != 0) {
		return v.add(fmt.Errorf("task %d: %s with dependencies met %v has ready time %d", t.ID, t.State, met, t.ReadyAtMS))
	}
	for _, k := range taskIndexKeys(t) {
		want[k] = true
	}
	if t.HoldsLease() {
		leases[string(storage.TaskLeaseKey(t.LeaseExpiryMS, uint64(t.ID)))] = true
	}
	// A held lease whose claim issued a token keeps its digest; nothing
	// else holds one.
	issued := false
	for i := range hist {
		if e := &hist[i]; e.Type == engine.TaskEventStarted || e.Type == engine.TaskEventReviewerLeased {
			issued = e.TokenIssued
		}
	}
	if want := t.HoldsLease() && issued; want != (len(t.LeaseDigest) > 0) {
		return v.add(fmt.Errorf("task %d: %s record holds a lease token digest: %v, its claim issued a token: %v",
			t.ID, t.State, len(t.LeaseDigest) > 0, issued))
	}
	return true
}

// normTask makes nil and empty slices compare equal.
func normTask(t *engine.Task) engine.Task {
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
	if len(c.Review.Recommendations) == 0 {
		c.Review.Recommendations = nil
	}
	return c
}
