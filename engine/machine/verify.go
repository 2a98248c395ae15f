package machine

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// Verify checks a whole store against the state machine: every job's history
// is legal and derives its stored status (CheckHistory), its record agrees
// with its history, every index entry the records imply exists, no index
// holds an entry no record implies, workflow ids name their latest run,
// every committed effect points at its event, every step's events follow the
// step state machine and its step record equals their projection, no
// resource has more units leased than its capacity and each leased unit
// belongs to a live step lease, no step waits for a unit while one it
// could use is free, runs start in the order of their ids (List's start
// order rests on it), and the links between the runs of a chain (PrevRunID,
// NextRunID) agree at both ends. It reads everything; it is
// for tests, chaos checkers and operators, never for a hot path. It returns
// all problems found, up to max (0 means no bound).
func Verify(r *storage.Reader, max int) []error {
	v := &verifier{r: r, max: max, want: map[string]bool{}, latest: map[string]engine.JobID{}, claims: map[holderKey]uint32{}}
	v.jobs()
	v.resetLinks()
	for _, p := range [][]byte{{storage.PrefixStatus}, {storage.PrefixType}, {storage.PrefixQueue}, {storage.PrefixRuns}, storage.ClosedPrefix,
		{storage.PrefixReady}, {storage.PrefixChild}, storage.PausedPrefix, storage.DelayedPrefix, storage.LeasePrefix, storage.TimerPrefix, storage.DeadlinePrefix,
		storage.StepDuePrefix} {
		v.index(p)
	}
	v.remoteUnits()
	v.resources()
	v.waiters()
	for k := range v.want {
		if !v.add(fmt.Errorf("index entry %q is missing (%s)", k, storage.DescribeKey([]byte(k)))) {
			break
		}
	}
	v.reviews()
	v.workflows()
	v.schedules()
	v.batches()
	for i, err := range v.errs {
		v.errs[i] = MarkStorageError(err)
	}
	return v.errs
}

type verifier struct {
	r      *storage.Reader
	max    int
	errs   []error
	want   map[string]bool         // index keys the records imply
	latest map[string]engine.JobID // workflow id -> its newest run
	// claims are the resource units step records say they hold, by
	// resource and step, with the try holding each.
	claims map[holderKey]uint32
	// waiting are the steps waiting for a unit, by waiter seq.
	waiting map[uint64]*engine.StepRecord
	pool    []*engine.Resource
	// reset are the jobs whose records hold a reset link, for resetLinks.
	reset []*engine.Job
}

func (v *verifier) add(err error) bool {
	if v.max > 0 && len(v.errs) >= v.max {
		return false
	}
	v.errs = append(v.errs, err)
	return v.max == 0 || len(v.errs) < v.max
}

func (v *verifier) jobs() {
	var jobs []*engine.Job
	err := v.r.Scan(storage.JobPrefix, nil, true, func(k, b []byte) (bool, error) {
		j := new(engine.Job)
		if _, err := storage.DecodeAt(k, b, storage.KindJob, jobVersion, j); err != nil {
			return v.add(err), nil
		}
		jobs = append(jobs, j)
		return true, nil
	})
	if err != nil {
		v.add(err)
	}
	for _, j := range jobs {
		if !v.job(j) {
			return
		}
	}
	v.runOrder(jobs)
}

// runOrder checks what List's orders rest on, over jobs in id order: a
// run starts no earlier than the run before it, and the runs of a chain
// name each other.
func (v *verifier) runOrder(jobs []*engine.Job) {
	byID := make(map[engine.JobID]*engine.Job, len(jobs))
	for i, j := range jobs {
		byID[j.ID] = j
		if i > 0 && j.CreatedMS < jobs[i-1].CreatedMS {
			if !v.add(fmt.Errorf("job %d started at %d, before job %d at %d: start order is not id order", j.ID, j.CreatedMS, jobs[i-1].ID, jobs[i-1].CreatedMS)) {
				return
			}
		}
	}
	for _, j := range jobs {
		fail := func(format string, a ...any) bool {
			return v.add(fmt.Errorf("job %d: "+format, append([]any{j.ID}, a...)...))
		}
		if j.NextRunID != 0 {
			next := byID[j.NextRunID]
			switch {
			case !j.Status.Terminal() || j.NextRunReason == "":
				if !fail("%s record names next run %d with reason %q", j.Status, j.NextRunID, j.NextRunReason) {
					return
				}
			case next == nil || next.ID <= j.ID || next.WorkflowID != j.WorkflowID || next.PrevRunID != j.ID:
				if !fail("next run %d does not continue it (%+v)", j.NextRunID, next) {
					return
				}
			}
		} else if j.NextRunReason != "" && !fail("no next run, but a reason %q for one", j.NextRunReason) {
			return
		}
		if j.PrevRunID != 0 {
			if prev := byID[j.PrevRunID]; prev == nil || prev.NextRunID != j.ID {
				if !fail("previous run %d does not name it as its next", j.PrevRunID) {
					return
				}
			}
		}
	}
}

func (v *verifier) job(j *engine.Job) bool {
	fail := func(format string, a ...any) bool {
		return v.add(fmt.Errorf("job %d: "+format, append([]any{j.ID}, a...)...))
	}
	// Record the entries the record implies first, so a job that fails a
	// check below is not also blamed for "unimplied" index entries.
	for _, k := range exactIndexKeys(j) {
		v.want[k] = true
	}
	for _, k := range sweptIndexKeys(j) {
		v.want[k] = true
	}
	hist, _, err := ReadHistory(v.r, j.ID, 0, 0)
	if err != nil {
		return v.add(fmt.Errorf("job %d: %w", j.ID, err))
	}
	if err := engine.CheckHistory(hist, j.Status); err != nil {
		return fail("%v", err)
	}
	if j.LastSeq != uint64(len(hist)) {
		return fail("record says last seq %d, history has %d events", j.LastSeq, len(hist))
	}
	if err := recordMatchesHistory(j, hist); err != nil {
		return fail("%v", err)
	}
	if j.ID > v.latest[j.WorkflowID] {
		v.latest[j.WorkflowID] = j.ID
	}
	if j.ResetNewRunID != 0 || j.ResetBaseRunID != 0 || j.ResetEventID != 0 {
		v.reset = append(v.reset, j)
	}
	return v.effects(j, hist) && v.steps(j, hist)
}

// recordMatchesHistory checks the record fields the last status event decides.
func recordMatchesHistory(j *engine.Job, hist []engine.Event) error {
	var last, leased *engine.Event
	var attempt uint64
	var unpausedMS int64 // the last unpause after the last status event
	for i := range hist {
		if engine.IsStatusEvent(hist[i].Type) {
			last = &hist[i]
			unpausedMS = 0
		}
		if hist[i].Type == engine.EventWorkflowUnpaused {
			unpausedMS = hist[i].AtMS
		}
		if hist[i].Type == engine.EventJobLeased && hist[i].Attempt > attempt {
			attempt, leased = hist[i].Attempt, &hist[i]
		}
	}
	// The lease token: an attempt whose claim issued one holds its digest
	// while it runs or waits, and no other record holds one.
	holds := j.Status == engine.StatusRunning || j.Status == engine.StatusWaiting || j.Status == engine.StatusParked
	if want := holds && leased != nil && leased.TokenIssued; want != (len(j.LeaseDigest) > 0) {
		return fmt.Errorf("%s record at attempt %d holds a lease token digest: %v, its claim issued a token: %v",
			j.Status, j.Attempt, len(j.LeaseDigest) > 0, leased != nil && leased.TokenIssued)
	}
	if j.Attempt != attempt {
		return fmt.Errorf("record attempt %d, history's last claim is attempt %d", j.Attempt, attempt)
	}
	switch j.Status {
	case engine.StatusRunning:
		if j.LeaseExpiryMS < last.LeaseExpiryMS || j.LeaseOwner != last.Name || last.Attempt != j.Attempt {
			return fmt.Errorf("running record (attempt %d, owner %q, lease %d) disagrees with its claim %+v",
				j.Attempt, j.LeaseOwner, j.LeaseExpiryMS, *last)
		}
	case engine.StatusWaiting, engine.StatusParked:
		if j.Wait == nil || last.Wait == nil {
			return errors.New("waiting record or event lacks its wait")
		}
	case engine.StatusRetrying:
		if j.ReleaseAtMS != last.AtMS+last.DelayMS {
			return fmt.Errorf("retry release at %d, event says %d", j.ReleaseAtMS, last.AtMS+last.DelayMS)
		}
	case engine.StatusQueued:
		// A deferred job writes no event: released, it is ready from its
		// release, after its last status event. An unpaused one is ready
		// from its unpause.
		if j.ReadyAtMS != last.AtMS && j.ReadyAtMS != unpausedMS && (j.Deferrals == 0 || j.ReadyAtMS < last.AtMS) {
			return fmt.Errorf("ready at %d, last status event at %d (%d deferrals)", j.ReadyAtMS, last.AtMS, j.Deferrals)
		}
	}
	pp := engine.DerivePause(hist)
	switch {
	case !reflect.DeepEqual(pp.Pause, j.Pause) || pp.HeldByParent != j.HeldByParent:
		return fmt.Errorf("record's pause %+v (held by its run: %v) disagrees with its history's %+v (held: %v)", j.Pause, j.HeldByParent, pp.Pause, pp.HeldByParent)
	case pp.AttemptBase != j.AttemptBase || !reflect.DeepEqual(pp.Options, j.ActivityOptions):
		return fmt.Errorf("record's activity attempt base %d and options %+v disagree with its history's %d and %+v", j.AttemptBase, j.ActivityOptions, pp.AttemptBase, pp.Options)
	case j.Paused() && j.DeferredUntilMS != 0:
		return fmt.Errorf("paused record is deferred until %d", j.DeferredUntilMS)
	}
	if j.DeferredUntilMS != 0 && (j.Status != engine.StatusQueued || j.Deferrals == 0 || j.DeferredReason == "") {
		return fmt.Errorf("%s record deferred until %d with %d deferrals and reason %q", j.Status, j.DeferredUntilMS, j.Deferrals, j.DeferredReason)
	}
	if next, _ := nextDeadline(j); (next == 0) != (j.TimeoutAtMS == 0) || j.TimeoutAtMS < next {
		return fmt.Errorf("%s record's deadline entry at %d, its earliest deadline is %d", j.Status, j.TimeoutAtMS, next)
	}
	if j.StartDeadlineMS != 0 && attempt != 0 {
		return fmt.Errorf("claimed record still has a schedule-to-start deadline")
	}
	if j.Status != engine.StatusRunning && (j.LeaseOwner != "" || j.LeaseExpiryMS != 0) {
		return fmt.Errorf("%s record holds a lease", j.Status)
	}
	if j.Status.Terminal() && len(j.Timers) > 0 {
		return fmt.Errorf("%s record holds %d timers", j.Status, len(j.Timers))
	}
	return nil
}

func (v *verifier) effects(j *engine.Job, hist []engine.Event) bool {
	ok := true
	err := v.r.Scan(storage.EffectPrefix(uint64(j.ID)), nil, true, func(k, b []byte) (bool, error) {
		e := new(engine.Effect)
		if _, err := storage.DecodeAt(k, b, storage.KindEffect, effectVersion, e); err != nil {
			ok = v.add(err)
			return ok, nil
		}
		step := string(k[len(storage.EffectPrefix(uint64(j.ID))):])
		if e.CommittedSeq == 0 {
			return true, nil
		}
		if e.CommittedSeq > uint64(len(hist)) || hist[e.CommittedSeq-1].Step != step || !hist[e.CommittedSeq-1].Commit {
			ok = v.add(fmt.Errorf("job %d: effect of step %q says committed at seq %d, which is not its event", j.ID, step, e.CommittedSeq))
		}
		return ok, nil
	})
	if err != nil {
		return v.add(err)
	}
	// No step commits twice, and every commit has its effect record.
	commits := map[string]uint64{}
	for _, ev := range hist {
		if !ev.Commit {
			continue
		}
		if prev, dup := commits[ev.Step]; dup {
			ok = v.add(fmt.Errorf("job %d: step %q committed twice, at seq %d and %d", j.ID, ev.Step, prev, ev.Seq)) && ok
		}
		commits[ev.Step] = ev.Seq
		if has, err := v.r.Get(storage.EffectKey(uint64(j.ID), ev.Step)); err != nil || has == nil {
			ok = v.add(fmt.Errorf("job %d: step %q committed at seq %d has no effect record", j.ID, ev.Step, ev.Seq)) && ok
		}
	}
	return ok
}

// index checks one index: every entry must be implied by a record, except
// that the swept indexes (leases, timers, deadlines) may hold stale entries
// awaiting their sweep; and no entry of a time-ordered index may sort below
// the index's low-water mark, where scans no longer look.
func (v *verifier) index(prefix []byte) {
	lows := map[string]uint64{} // low-water mark by mark key
	low := func(key []byte) uint64 {
		if m, ok := lows[string(key)]; ok {
			return m
		}
		m, err := storage.ReadU64(v.r, key)
		if err != nil {
			v.add(err)
		}
		lows[string(key)] = m
		return m
	}
	swept := prefix[0] == storage.PrefixLease || prefix[0] == storage.PrefixTimer || prefix[0] == storage.PrefixDeadline ||
		prefix[0] == storage.PrefixStepDue
	err := v.r.Scan(prefix, nil, false, func(k, _ []byte) (bool, error) {
		var at int64
		var mark []byte
		switch prefix[0] {
		case storage.PrefixReady:
			e, err := storage.ParseReadyKey(k)
			if err != nil {
				return v.add(err), nil
			}
			at, mark = e.ReadyAtMS, storage.LowReadyKey(e.Queue)
		case storage.PrefixLease, storage.PrefixTimer, storage.PrefixDelayed, storage.PrefixDeadline, storage.PrefixStepDue:
			tk, err := storage.ParseTimeKey(k)
			if err != nil {
				return v.add(err), nil
			}
			at = tk.AtMS
			mark = map[byte][]byte{storage.PrefixLease: storage.KeyLowLease, storage.PrefixTimer: storage.KeyLowTimer,
				storage.PrefixDelayed: storage.KeyLowDelayed, storage.PrefixDeadline: storage.KeyLowDeadline,
				storage.PrefixStepDue: storage.KeyLowStepDue}[prefix[0]]
		}
		if mark != nil && uint64(at) < low(mark) {
			if !v.add(fmt.Errorf("index entry %q sorts below the low-water mark %d of its index", k, low(mark))) {
				return false, nil
			}
		}
		if !v.want[string(k)] {
			if swept {
				return true, nil // stale, removed when its time comes
			}
			return v.add(fmt.Errorf("index entry %q is implied by no job record (%s)", k, storage.DescribeKey(k))), nil
		}
		delete(v.want, string(k))
		return true, nil
	})
	if err != nil {
		v.add(err)
	}
}

func (v *verifier) workflows() {
	for wf, id := range v.latest {
		b, err := v.r.Get(storage.WorkflowKey(wf))
		if err != nil {
			v.add(fmt.Errorf("workflow id %q: %w", wf, err))
			continue
		}
		got, err := storage.ParseU64(b)
		if err != nil || engine.JobID(got) != id {
			v.add(fmt.Errorf("workflow id %q names run %d, its newest run is %d (%v)", wf, got, id, err))
		}
	}
}
