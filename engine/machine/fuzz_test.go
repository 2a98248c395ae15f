package machine_test

import (
	"bytes"
	"errors"
	"reflect"
	"runtime"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
	"github.com/vmihailenco/msgpack/v5"
)

// Fuzz targets for everything heddle decodes: commands (from the Raft log),
// results (request records), events, job records and effects. Each target
// checks that decoding never panics, that every failure is ErrCorrupt (or
// ErrUnknownCommand for an unknown kind), and that whatever decodes
// re-encodes to bytes that decode to the same value. FuzzDecodeCommand also
// applies what it decodes to a populated store.
//
//	go test ./engine -run '^$' -fuzz '^FuzzDecodeCommand$' -fuzztime 15s

// fuzzDecodeErr fails unless err is one of the errors decoding may return.
func fuzzDecodeErr(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, engine.ErrCorrupt) && !errors.Is(err, engine.ErrUnknownCommand) {
		t.Fatalf("%s: error %v (%T) is neither ErrCorrupt nor ErrUnknownCommand", what, err, err)
	}
}

// fuzzSameValue fails unless a and b are equal once empty slices count as
// nil (msgpack's omitempty drops them, so an explicit empty array decodes
// to an empty slice once and to nil after a round trip).
func fuzzSameValue(t *testing.T, what string, a, b any) {
	t.Helper()
	if !reflect.DeepEqual(propNormalize(a), propNormalize(b)) && !sameEncoding(a, b) {
		t.Fatalf("%s changed in a round trip:\n%#v\n%#v", what, a, b)
	}
}

// sameEncoding reports whether a and b encode to the same msgpack bytes
// (map keys sorted). A stored float that is NaN decodes to NaN again, but
// reflect.DeepEqual says NaN differs from itself.
func sameEncoding(a, b any) bool {
	enc := func(v any) []byte {
		var buf bytes.Buffer
		e := msgpack.NewEncoder(&buf)
		e.SetSortMapKeys(true)
		if err := e.Encode(v); err != nil {
			return nil
		}
		return buf.Bytes()
	}
	ea := enc(a)
	return ea != nil && bytes.Equal(ea, enc(b))
}

// fuzzGarbage are seeds every target gets: empty, short, wrong kinds and
// versions, truncated and oversized msgpack.
func fuzzGarbage(kind storage.Kind) [][]byte {
	k := byte(kind)
	return [][]byte{
		{},
		{k},
		{k, 1},
		{k, 0, 0x80},
		{k, 2, 0x80},
		{k + 1, 1, 0x80},
		{k, 1, 0xc0},
		{k, 1, 0x80},
		{k, 1, 0x80, 0x00},                   // trailing byte
		{k, 1, 0xdf, 0xff, 0xff, 0xff, 0xff}, // a map claiming 4G entries
		{k, 1, 0xdd, 0xff, 0xff, 0xff, 0xff}, // an array claiming 4G entries
		{k, 1, 0x92, 0x01},                   // a truncated envelope
		{k, 1, 0x92, 0x63, 0x80},             // envelope of kind 99
		{k, 1, 0x92, 0x01, 0xc0},             // kind 1, nil body
		{k, 1, 0x92, 0x01, 0x81, 0xa2, 't', 'y', 0x01},       // a string field given an int
		{k, 1, 0x92, 0x04, 0x81, 0xa2, 'e', 'v', 0x91, 0xc0}, // events: [nil]
		{k, 1, 0x92, 0x01, 0xc4, 0x01, 0x80},                 // body is bin, not a map
		{k, 1, 0x81, 0xa1, 'q', 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		{k, 1, 0x92, 0x01, 0xc6, 0xff, 0xff, 0xff, 0xff},                                   // a body claiming 4 GiB
		{k, 1, 0x92, 0x01, 0x81, 0xa2, 't', 'y', 0xdb, 0xff, 0xff, 0xff, 0xff},             // a string claiming 4 GiB
		append(append([]byte{k, 1, 0x92, 0x01}, bytes.Repeat([]byte{0x91}, 200)...), 0xc0), // nested 200 deep
		append(append([]byte{k, 1}, bytes.Repeat([]byte{0x81, 0xa1, 'w'}, 60)...), 0xc0),   // maps nested 60 deep
	}
}

// fuzzSampleCommands covers every command kind, aimed at the jobs
// newFuzzStore creates, so that many of them apply.
func fuzzSampleCommands() []engine.Command {
	return []engine.Command{
		&engine.CreateJob{Header: engine.Header{RequestID: "rq-new", NowMS: 2_000_000}, WorkflowID: "wf-x", Type: "order", Queue: "q", Input: []byte("in")},
		&engine.CreateJob{Header: engine.Header{NowMS: 2_000_000}, WorkflowID: "wf-open", Type: "order", Queue: "q", ReusePolicy: engine.IDReuseReturnExisting},
		&engine.CreateJob{Header: engine.Header{NowMS: 2_000_000}, Type: "child", Queue: "q", Draft: true, ParentID: 3, ParentStep: "c"},
		&engine.Claim{Header: engine.Header{NowMS: 2_000_000}, Queue: "q", Owner: "w", Max: 3, LeaseMS: 30_000},
		&engine.Claim{Header: engine.Header{NowMS: 2_000_000, Nonce: []byte("0123456789abcdef")}, Queue: "q", Owner: "w", Max: 1, LeaseMS: 30_000},
		&engine.CreateJob{Header: engine.Header{NowMS: 2_000_000, Nonce: []byte("nonce")}, Type: "child", Queue: "q", ParentID: 3, ParentStep: "c2",
			ParentLease: &engine.LeaseRef{Job: 3, Attempt: 1, Token: "0123456789abcdef0123456789abcdef"}},
		&engine.Complete{Header: engine.Header{NowMS: 2_000_000}, LeaseRef: engine.LeaseRef{Job: 3, Attempt: 1, Token: "0123456789abcdef0123456789abcdef"}},
		&engine.CompleteAsync{Header: engine.Header{NowMS: 2_000_000}, LeaseRef: engine.LeaseRef{Job: 3, Attempt: 1}, ByID: true, Result: []byte("ok")},
		&engine.Claim{Header: engine.Header{RequestID: "rq-types", NowMS: 2_000_000}, Queue: "q", Owner: "w", Max: 3, LeaseMS: 30_000, Types: []string{"child"}},
		&engine.CreateJob{Header: engine.Header{NowMS: 2_000_000}, Type: "order", Queue: "q", ExecutionTimeoutMS: 5_000, RunTimeoutMS: 1_000, ScheduleToStartTimeoutMS: 500},
		&engine.Heartbeat{Header: engine.Header{NowMS: 2_000_000}, Leases: []engine.LeaseRef{{Job: 3, Attempt: 1}, {Job: 1, Attempt: 1}, {Job: 99, Attempt: 1}}, LeaseMS: 60_000},
		&engine.AppendEvents{Header: engine.Header{NowMS: 2_000_000}, LeaseRef: engine.LeaseRef{Job: 3, Attempt: 1}, Events: []engine.NewEvent{{Type: "activity_started", Step: "a"}, {Type: engine.EventSignalReceived, Name: "go"}}},
		&engine.CommitStep{Header: engine.Header{NowMS: 2_000_000}, LeaseRef: engine.LeaseRef{Job: 3, Attempt: 1}, Step: "a", Type: "activity_completed", Payload: []byte("ok")},
		&engine.CommitStep{Header: engine.Header{NowMS: 2_000_000}, LeaseRef: engine.LeaseRef{Job: 3, Attempt: 1}, Step: "c", Type: "child_completed", CatchUp: true},
		&engine.Wait{Header: engine.Header{NowMS: 2_000_000}, LeaseRef: engine.LeaseRef{Job: 3, Attempt: 1}, Spec: engine.WaitSpec{TimerID: "t", TimerAtMS: 2_100_000, Signals: []string{"go"}, Steps: []string{"c"}, Park: true}, SeenSeq: 2},
		&engine.Signal{Header: engine.Header{NowMS: 2_000_000}, Target: engine.Target{WorkflowID: "wf-wait"}, Name: "go", Payload: []byte("p")},
		&engine.FireTimers{Header: engine.Header{NowMS: 9_000_000}, Max: 10},
		&engine.Reclaim{Header: engine.Header{NowMS: 9_000_000}, Max: 10},
		&engine.ReleaseDelayed{Header: engine.Header{NowMS: 9_000_000}, Max: 10},
		&engine.ExpireDeadlines{Header: engine.Header{NowMS: 9_000_000}, Max: 10},
		&engine.Terminate{Header: engine.Header{NowMS: 2_000_000}, Target: engine.Target{Job: 4}, Reason: "ops"},
		&engine.Terminate{Header: engine.Header{RequestID: "rq-term", NowMS: 2_000_000}, Target: engine.Target{WorkflowID: "wf-run"}},
		&engine.Cancel{Header: engine.Header{NowMS: 2_000_000}, Target: engine.Target{Job: 6}, Reason: "user"},
		&engine.Activate{Header: engine.Header{NowMS: 2_000_000}, Target: engine.Target{Job: 2}},
		&engine.Suspend{Header: engine.Header{NowMS: 2_000_000}, Target: engine.Target{Job: 3}, Reason: "ops"},
		&engine.Resume{Header: engine.Header{NowMS: 2_000_000}, Target: engine.Target{Job: 7}},
		&engine.Complete{Header: engine.Header{NowMS: 2_000_000}, LeaseRef: engine.LeaseRef{Job: 3, Attempt: 1}, Result: []byte("done")},
		&engine.Fail{Header: engine.Header{NowMS: 2_000_000}, LeaseRef: engine.LeaseRef{Job: 3, Attempt: 1}, Error: []byte("boom")},
		&engine.Requeue{Header: engine.Header{RequestID: "rq-1", NowMS: 2_000_000}, LeaseRef: engine.LeaseRef{Job: 8}, DelayMS: 5000},
		&engine.Requeue{Header: engine.Header{NowMS: 2_000_000}, LeaseRef: engine.LeaseRef{Job: 3, Attempt: 1}, Reason: "backoff"},
		&engine.LeaseStep{Header: engine.Header{NowMS: 2_000_000}, LeaseRef: engine.LeaseRef{Job: 3, Attempt: 1}, Step: "s4", Name: "Fetch", LeaseMS: 10_000,
			Capabilities: []string{"browser"}, Selector: map[string]string{"region": "eu"}, DependsOn: []string{"s1"}},
		&engine.LeaseStep{Header: engine.Header{RequestID: "rq-lease", NowMS: 2_000_000}, LeaseRef: engine.LeaseRef{Job: 3, Attempt: 1}, Step: "s5", Name: "Fetch", LeaseMS: 10_000,
			Capabilities: []string{"gpu"}},
		&engine.StepHeartbeat{Header: engine.Header{NowMS: 2_000_000}, LeaseRef: engine.LeaseRef{Job: 3, Attempt: 1}, Step: "s1", StepAttempt: 1, LeaseMS: 30_000},
		&engine.StepHeartbeat{Header: engine.Header{NowMS: 2_000_000}, LeaseRef: engine.LeaseRef{Job: 3, Attempt: 1}, Step: "x", StepAttempt: 2, LeaseMS: 30_000},
		&engine.EndStepAttempt{Header: engine.Header{NowMS: 2_000_000}, LeaseRef: engine.LeaseRef{Job: 3, Attempt: 1}, Step: "s1", Name: "Fetch", StepAttempt: 1,
			Outcome: engine.OutcomeSwitchResource, Decision: engine.DecisionSwitchResource},
		&engine.EndStepAttempt{Header: engine.Header{NowMS: 2_000_000}, LeaseRef: engine.LeaseRef{Job: 3, Attempt: 1}, Step: "s1", Name: "Fetch", StepAttempt: 1,
			Outcome: engine.OutcomeNeedsUser, Payload: []byte(`"captcha?"`), AnswerTimeoutMS: 60_000},
		&engine.EndStepAttempt{Header: engine.Header{NowMS: 2_000_000}, LeaseRef: engine.LeaseRef{Job: 3, Attempt: 1}, Step: "y", Name: "Fetch", StepAttempt: 1,
			Outcome: engine.OutcomeRetry, Payload: []byte(`{"attempt":1}`)},
		&engine.AnswerStep{Header: engine.Header{NowMS: 2_000_000}, Target: engine.Target{WorkflowID: "wf-run"}, Step: "s3", Answer: []byte(`"42"`)},
		&engine.ExpireSteps{Header: engine.Header{NowMS: 9_000_000}, Max: 10},
		&engine.ResetJob{Header: engine.Header{NowMS: 2_000_000}, Target: engine.Target{WorkflowID: "wf-wait"}, Type: engine.ResetLastWorkflowTask, Reason: "ops"},
		&engine.ResetJob{Header: engine.Header{RequestID: "rq-reset", NowMS: 2_000_000}, Target: engine.Target{Job: 3}, Seq: 1, ExcludeSignals: true, ExcludeUpdates: true},
		&engine.AddResource{Header: engine.Header{NowMS: 2_000_000}, ID: "b3", Capabilities: []string{"browser"}, Labels: map[string]string{"region": "eu"}, Capacity: 2},
		&engine.DrainResource{Header: engine.Header{NowMS: 2_000_000}, ID: "b1"},
		&engine.DrainResource{Header: engine.Header{NowMS: 2_000_000}, ID: "b9", Undrain: true},
		&engine.RemoveResource{Header: engine.Header{NowMS: 2_000_000}, ID: "b1"},
		&engine.CommitStep{Header: engine.Header{NowMS: 2_000_000}, LeaseRef: engine.LeaseRef{Job: 3, Attempt: 1}, Step: "s1", Type: "activity_completed",
			StepAttempt: 1, Decision: engine.DecisionAccept},
		&engine.CommitStep{Header: engine.Header{NowMS: 2_000_000}, LeaseRef: engine.LeaseRef{Job: 3, Attempt: 1}, Step: "s2", Type: "activity_failed",
			Failed: true, Reason: engine.ReasonNotStarted},
	}
}

// fuzzStore is a small store holding a job in most statuses, for applying
// fuzzed commands. Each command is applied, checked and undone, so every
// input meets the same store.
type fuzzStore struct {
	h    *harness
	base map[string]string
}

func newFuzzStore(f *testing.F) *fuzzStore {
	h := newHarness(f)
	h.now = 1_000_000
	// One queue per job, so each claim takes the job it means to.
	start := func(wf, queue string) (engine.JobID, engine.LeaseRef) {
		id := h.must(&engine.CreateJob{WorkflowID: wf, Type: "order", Queue: queue}).(*engine.CreateResult).Job
		if queue == "q" {
			return id, engine.LeaseRef{}
		}
		c := h.must(&engine.Claim{Queue: queue, Owner: "w", Max: 1, LeaseMS: 30_000}).(*engine.ClaimResult)
		if len(c.Jobs) != 1 || c.Jobs[0].Job != id {
			f.Fatalf("fuzz store: claim of %s = %+v", queue, c.Jobs)
		}
		return id, engine.LeaseRef{Job: id, Attempt: c.Jobs[0].Attempt}
	}
	start("wf-open", "q")                                                                                    // 1 Queued
	h.must(&engine.CreateJob{WorkflowID: "wf-draft", Type: "order", Queue: "d", Draft: true})                // 2 Draft
	_, runRef := start("wf-run", "r")                                                                        // 3 Running, attempt 1
	h.must(&engine.CreateJob{Type: "child", Queue: "k", ParentID: 3, ParentStep: "c", ParentLease: &runRef}) // 4 Queued, child of 3
	_, ref := start("wf-wait", "w")                                                                          // 5 Waiting
	h.must(&engine.Wait{LeaseRef: ref, Spec: engine.WaitSpec{TimerID: "t", TimerAtMS: 1_500_000, Signals: []string{"go"}}, SeenSeq: 2})
	start("wf-cancel", "q") // 6 Queued
	start("wf-susp", "q")   // 7 Suspended
	h.must(&engine.Suspend{Target: engine.Target{Job: 7}})
	_, ref = start("wf-fail", "f") // 8 Failed
	h.must(&engine.Fail{LeaseRef: ref, Error: []byte("x")})
	_, ref = start("wf-retry", "t") // 9 Retrying
	h.must(&engine.Requeue{LeaseRef: ref, DelayMS: 5000})
	_, ref = start("wf-done", "c") // 10 Completed
	h.must(&engine.Complete{LeaseRef: ref, Result: []byte("ok")})
	h.must(&engine.Signal{Header: engine.Header{RequestID: "rq-sig"}, Target: engine.Target{Job: 3}, Name: "hello"})
	// A resource pool and steps of job 3 in each resting state: s1 holds
	// b1's one unit, s2 waits for it, s3 needs a person.
	h.must(&engine.AddResource{ID: "b1", Capabilities: []string{"browser"}, Labels: map[string]string{"region": "eu"}, Capacity: 1})
	h.must(&engine.AddResource{ID: "g1", Capabilities: []string{"gpu"}, Capacity: 1})
	run := engine.LeaseRef{Job: 3, Attempt: 1}
	h.must(&engine.LeaseStep{LeaseRef: run, Step: "s1", Name: "Fetch", LeaseMS: 10_000, Capabilities: []string{"browser"}})
	h.must(&engine.LeaseStep{LeaseRef: run, Step: "s2", Name: "Fetch", LeaseMS: 10_000, Capabilities: []string{"browser"}})
	h.must(&engine.LeaseStep{LeaseRef: run, Step: "s3", Name: "Ask", LeaseMS: 10_000, Capabilities: []string{"gpu"}})
	h.must(&engine.EndStepAttempt{LeaseRef: run, Step: "s3", Name: "Ask", StepAttempt: 1, Outcome: engine.OutcomeNeedsUser, Payload: []byte(`"ok?"`)})
	h.verify()
	for id, want := range map[engine.JobID]engine.Status{1: engine.StatusQueued, 2: engine.StatusDraft, 3: engine.StatusRunning, 4: engine.StatusQueued, 5: engine.StatusWaiting,
		6: engine.StatusQueued, 7: engine.StatusSuspended, 8: engine.StatusFailed, 9: engine.StatusRetrying, 10: engine.StatusCompleted} {
		if got := h.job(id).Status; got != want {
			f.Fatalf("fuzz store: job %d is %s, want %s", id, got, want)
		}
	}
	return &fuzzStore{h: h, base: propSnapshot(h.db)}
}

// apply applies cmd to the store, checks the outcome and restores the store.
func (fs *fuzzStore) apply(t *testing.T, cmd engine.Command) {
	db := fs.h.db
	b := db.NewBatch()
	tx := b.Begin()
	res, err := func() (res engine.Result, err error) {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("Apply(%s) panicked: %v", propFmtCmd(cmd), r)
			}
		}()
		return fs.h.m.Apply(tx, cmd)
	}()
	if err != nil {
		b.Discard()
		if !propMatchesSentinel(err) {
			t.Fatalf("Apply(%s) = %v, which matches no sentinel error", propFmtCmd(cmd), err)
		}
		return
	}
	if want := reflect.TypeOf(engine.NewResult(cmd.Kind())); reflect.TypeOf(res) != want {
		t.Fatalf("Apply(%s) returned a %T, want %v", propFmtCmd(cmd), res, want)
	}
	rb, err := machine.EncodeResult(cmd.Kind(), res)
	if err != nil {
		t.Fatalf("encoding the result %s: %v", propFmtRes(res), err)
	}
	if k, r2, err := machine.DecodeResult(rb); err != nil || k != cmd.Kind() {
		t.Fatalf("decoding the result of %s: kind %s, %v", cmd.Kind(), k, err)
	} else {
		fuzzSameValue(t, "the result", res, r2)
	}
	if err := b.Add(tx); err != nil {
		// LocalLog refuses a command whose writes exceed one transaction.
		b.Discard()
		if !errors.Is(err, storage.ErrTooLarge) {
			t.Fatalf("batch add: %v", err)
		}
		return
	}
	if err := b.Commit(); err != nil {
		t.Fatalf("commit: %v", err)
	}
	defer fs.restore(t)
	var errs []error
	viewOK(t, db, func(r *storage.Reader) error {
		errs = machine.Verify(r, 5)
		return nil
	})
	if len(errs) > 0 {
		t.Fatalf("after %s -> %s, Verify: %v", propFmtCmd(cmd), propFmtRes(res), errs)
	}
	// A request id answers a retry with the first result and writes nothing
	// (a claim that took no job leaves its id unused: its retry runs afresh).
	if cmd.Head().RequestID != "" && !machine.ClaimedNothing(res) {
		b := db.NewBatch()
		defer b.Discard()
		tx := b.Begin()
		again, err := fs.h.m.Apply(tx, cmd)
		if err != nil || !reflect.DeepEqual(propNormalize(again), propNormalize(res)) || tx.Len() != 0 {
			t.Fatalf("retry of %s = %s, %v (%d writes); first result %s", propFmtCmd(cmd), propFmtRes(again), err, tx.Len(), propFmtRes(res))
		}
	}
}

// restore puts the store back to its base contents.
func (fs *fuzzStore) restore(t *testing.T) {
	now := propSnapshot(fs.h.db)
	b := fs.h.db.NewBatch()
	tx := b.Begin()
	for k := range now {
		if _, ok := fs.base[k]; !ok {
			tx.Delete([]byte(k))
		}
	}
	for k, v := range fs.base {
		if w, ok := now[k]; !ok || w != v {
			tx.Set([]byte(k), []byte(v))
		}
	}
	if err := b.Add(tx); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if err := b.Commit(); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if d := propStoreDiff(fs.base, propSnapshot(fs.h.db)); d != "" {
		t.Fatalf("restore left differences: %s", d)
	}
}

func FuzzDecodeCommand(f *testing.F) {
	for _, c := range fuzzSampleCommands() {
		b, err := machine.EncodeCommand(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, b := range fuzzGarbage(storage.KindCommand) {
		f.Add(b)
	}
	fs := newFuzzStore(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := machine.DecodeCommand(data)
		if err != nil {
			fuzzDecodeErr(t, "DecodeCommand", err)
			return
		}
		if c == nil {
			t.Fatal("DecodeCommand returned a nil command and no error")
		}
		if _, known := engine.NewCommand(c.Kind()); !known {
			t.Fatalf("DecodeCommand returned a command of unknown kind %d", c.Kind())
		}
		b, err := machine.EncodeCommand(c)
		if err != nil {
			t.Fatalf("re-encoding %s: %v", propFmtCmd(c), err)
		}
		c2, err := machine.DecodeCommand(b)
		if err != nil {
			t.Fatalf("decoding the re-encoding of %s: %v", propFmtCmd(c), err)
		}
		if c2.Kind() != c.Kind() {
			t.Fatalf("round trip changed the kind from %s to %s", c.Kind(), c2.Kind())
		}
		fuzzSameValue(t, "the command", c, c2)
		if b2, err := machine.EncodeCommand(c2); err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("encoding is not stable: % x, then % x (%v)", b, b2, err)
		}
		// As decoded (any NowMS), and as the log would stamp it.
		fs.apply(t, c)
		c.Head().NowMS = fs.h.now + 1000
		fs.apply(t, c)
	})
}

func fuzzSampleResults() map[engine.CommandKind]engine.Result {
	return map[engine.CommandKind]engine.Result{
		engine.KindCreateJob:       &engine.CreateResult{Job: 1, WorkflowID: "wf", Existing: true},
		engine.KindClaim:           &engine.ClaimResult{Jobs: []engine.ClaimedJob{{Job: 1, WorkflowID: "wf", Type: "t", Attempt: 2, LeaseExpiryMS: 5, LastSeq: 3}}, Deferred: []engine.JobID{4}},
		engine.KindHeartbeat:       &engine.HeartbeatResult{LeaseExpiryMS: 9, Refused: []engine.Refusal{{LeaseRef: engine.LeaseRef{Job: 1, Attempt: 1}, Code: engine.StaleAttemptCode}}},
		engine.KindAppendEvents:    &engine.AppendResult{FirstSeq: 2, LastSeq: 4, AtMS: 1_700_000_000_000},
		engine.KindWait:            &engine.WaitResult{Woken: true, Status: engine.StatusRunning, Seq: 7},
		engine.KindSignal:          &engine.SignalResult{Job: 3, Seq: 4, Woke: true},
		engine.KindReclaim:         &engine.SweepResult{Jobs: []engine.JobID{1, 2}, Ready: []engine.JobID{2}, More: true},
		engine.KindCancel:          &engine.StatusResult{Job: 1, Status: engine.StatusCancelled, Seq: 5},
		engine.KindFireTimers:      &engine.SweepResult{},
		engine.KindReleaseDelayed:  &engine.SweepResult{Ready: []engine.JobID{}},
		engine.KindTerminate:       &engine.StatusResult{Job: 2, Status: engine.StatusTerminated, Seq: 3},
		engine.KindExpireDeadlines: &engine.SweepResult{Jobs: []engine.JobID{4}},
		engine.KindLeaseStep: &engine.StepResult{Job: 3, Step: "s1", State: engine.StepLeased, StepAttempt: 2, Granted: true, Resource: "b1",
			Labels: map[string]string{"region": "eu"}, StepLeaseExpiryMS: 9, FirstSeq: 4, LastSeq: 5, AtMS: 3},
		engine.KindStepHeartbeat:  &engine.StepResult{Job: 3, Step: "s1", State: engine.StepRunning, LeaseExpiryMS: 7, CancelRequested: true},
		engine.KindAddResource:    &engine.ResourceResult{Resource: &engine.Resource{ID: "b1", Capabilities: []string{"x"}, Capacity: 2, Holders: []engine.ResourceHolder{{Job: 1, Step: "s", StepAttempt: 1}}}, Granted: 1},
		engine.KindRemoveResource: &engine.ResourceResult{},
		engine.KindExpireSteps:    &engine.SweepResult{Jobs: []engine.JobID{3}},
		engine.KindResetJob:       &engine.ResetResult{Job: 9, WorkflowID: "wf", BaseJob: 3, Seq: 4, CopiedEvents: 3, Terminated: []engine.JobID{3}, Reapplied: 1},
	}
}

func FuzzDecodeResult(f *testing.F) {
	results := fuzzSampleResults()
	results[engine.KindRequeue+100] = &engine.SweepResult{} // a kind this version does not know
	for k, r := range results {
		b, err := machine.EncodeResult(k, r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, b := range fuzzGarbage(storage.KindResult) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		k, r, err := machine.DecodeResult(data)
		if err != nil {
			fuzzDecodeErr(t, "DecodeResult", err)
			return
		}
		want := engine.NewResult(k)
		if want == nil || reflect.TypeOf(r) != reflect.TypeOf(want) {
			t.Fatalf("DecodeResult returned a %T for kind %d", r, k)
		}
		b, err := machine.EncodeResult(k, r)
		if err != nil {
			t.Fatalf("re-encoding %s: %v", propFmtRes(r), err)
		}
		k2, r2, err := machine.DecodeResult(b)
		if err != nil || k2 != k {
			t.Fatalf("decoding the re-encoding: kind %s (was %s), %v", k2, k, err)
		}
		fuzzSameValue(t, "the result", r, r2)
		if b2, err := machine.EncodeResult(k2, r2); err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("encoding is not stable: % x, then % x (%v)", b, b2, err)
		}
	})
}

func FuzzDecodeEvent(f *testing.F) {
	for _, e := range []*engine.Event{
		{Seq: 1, Type: engine.EventJobCreated, AtMS: 1000, Name: "order", Payload: []byte("in")},
		{Seq: 2, Type: engine.EventJobLeased, AtMS: 1001, Attempt: 1, Name: "w", LeaseExpiryMS: 31_001},
		{Seq: 3, Type: engine.EventJobWaiting, AtMS: 1002, Attempt: 1, Wait: &engine.WaitSpec{TimerID: "t", TimerAtMS: 5000, Signals: []string{"s"}, Steps: []string{"a"}, Park: true}},
		{Seq: 4, Type: engine.EventJobRequeued, AtMS: 1003, Reason: engine.ReasonRetry, DelayMS: 500},
		{Seq: 5, Type: "activity_completed", Step: "a", Payload: []byte("ok"), Commit: true},
		{Seq: 6, Type: engine.EventJobTimedOut, Reason: engine.ReasonRunTimeout, Payload: engine.EncodeTimeoutFailure(engine.TimeoutWorkflowRun, "m")},
		{Seq: 7, Type: engine.EventEffectRecorded, Step: "c"},
		{Seq: 8, Type: engine.EventStepLeased, Step: "s", Name: "Fetch", StepAttempt: 2, Resource: "b1", LeaseExpiryMS: 9000},
		{Seq: 9, Type: engine.EventActivityCompleted, Step: "s", StepAttempt: 2, Decision: engine.DecisionAccept, Commit: true},
		{Seq: 10, Type: engine.EventStepLeaseTimeout, Step: "s", Reason: engine.ReasonStepTimeoutFatal},
	} {
		f.Add(machine.EncodeEvent(e))
	}
	for _, b := range fuzzGarbage(storage.KindEvent) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := machine.DecodeEvent(data)
		if err != nil {
			fuzzDecodeErr(t, "DecodeEvent", err)
			return
		}
		b := machine.EncodeEvent(e)
		e2, err := machine.DecodeEvent(b)
		if err != nil {
			t.Fatalf("decoding the re-encoding of %+v: %v", *e, err)
		}
		fuzzSameValue(t, "the event", e, e2)
		if b2 := machine.EncodeEvent(e2); !bytes.Equal(b, b2) {
			t.Fatalf("encoding is not stable: % x, then % x", b, b2)
		}
		// The projection and the checker take any event without panicking.
		e.Seq = 1
		hist := []engine.Event{*e}
		engine.DeriveStatus(hist)
		if err := engine.CheckHistory(hist, engine.StatusNone); err != nil && !errors.Is(err, engine.ErrInvariant) {
			t.Fatalf("CheckHistory(%+v) = %v, not ErrInvariant", *e, err)
		}
		// So do the step projection and its checker, after any state.
		for _, from := range []engine.EventType{"", engine.EventStepLeased, engine.EventStepNeedsUser, engine.EventActivityCompleted} {
			steps := []engine.Event{{Seq: 1, Type: from, Step: e.Step}, {Seq: 2, Type: e.Type, Step: e.Step, StepAttempt: e.StepAttempt, Reason: e.Reason}}
			engine.DeriveStepState(steps)
			if err := engine.CheckStepHistory(e.Step, steps); err != nil && !errors.Is(err, engine.ErrInvariant) {
				t.Fatalf("CheckStepHistory(%+v) = %v, not ErrInvariant", steps, err)
			}
		}
	})
}

func FuzzDecodeJob(f *testing.F) {
	for _, j := range []*engine.Job{
		{ID: 1, WorkflowID: "wf", Type: "order", Queue: "q", Status: engine.StatusQueued, LastSeq: 1, ReadyAtMS: 1000, CreatedMS: 1000, UpdatedMS: 1000},
		{ID: 2, WorkflowID: "wf-2", Type: "order", Queue: "q", Status: engine.StatusRunning, Attempt: 3, LeaseOwner: "w", LeaseExpiryMS: 9000,
			LastSeq: 7, Timers: []engine.Timer{{ID: "t", FireMS: 5000}}, Retries: 2, StartDigest: 0xdeadbeef, ParentID: 1, ParentStep: "c", CreatedMS: 1, UpdatedMS: 2},
		{ID: 3, Status: engine.StatusParked, Wait: &engine.WaitSpec{TimerID: "t", TimerAtMS: 5000, Park: true}, ClosedMS: 4},
		{ID: 4, Status: engine.StatusQueued, DeadlineMS: 9000, RunDeadlineMS: 8000, StartDeadlineMS: 7000, TimeoutAtMS: 7000,
			Deferrals: 2, DeferredReason: "no worker", DeferredUntilMS: 6000},
	} {
		f.Add(machine.EncodeJob(j))
	}
	for _, b := range fuzzGarbage(storage.KindJob) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		j, err := machine.DecodeJob(data)
		if err != nil {
			fuzzDecodeErr(t, "DecodeJob", err)
			return
		}
		b := machine.EncodeJob(j)
		j2, err := machine.DecodeJob(b)
		if err != nil {
			t.Fatalf("decoding the re-encoding of %+v: %v", *j, err)
		}
		fuzzSameValue(t, "the job", j, j2)
		if b2 := machine.EncodeJob(j2); !bytes.Equal(b, b2) {
			t.Fatalf("encoding is not stable: % x, then % x", b, b2)
		}
		fuzzSameValue(t, "a clone of the job", j, j.Clone())
	})
}

func FuzzDecodeEffect(f *testing.F) {
	for _, e := range []*engine.Effect{
		{Step: "a", Payload: []byte("ok"), Attempt: 2, CommittedSeq: 5, AtMS: 1000},
		{Step: "c", Failed: true, AtMS: 1},
	} {
		f.Add(machine.EncodeEffect(e))
	}
	for _, b := range fuzzGarbage(storage.KindEffect) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := machine.DecodeEffect(data)
		if err != nil {
			fuzzDecodeErr(t, "DecodeEffect", err)
			return
		}
		b := machine.EncodeEffect(e)
		e2, err := machine.DecodeEffect(b)
		if err != nil {
			t.Fatalf("decoding the re-encoding of %+v: %v", *e, err)
		}
		fuzzSameValue(t, "the effect", e, e2)
		if b2 := machine.EncodeEffect(e2); !bytes.Equal(b, b2) {
			t.Fatalf("encoding is not stable: % x, then % x", b, b2)
		}
	})
}

// TestFuzzCorruptRecordsKeepMemoryBounded: decoding a corrupt record costs
// memory in proportion to the record, not to the lengths it claims, however
// often it is read. (FuzzDecodeCommand found records whose repeated decoding
// grew a pooled msgpack decoder's buffer by a quarter each time, to
// gigabytes.) Each record below is a few bytes claiming a 4 GiB string; 60
// decodes of one may allocate at most 200 MiB in all. The loop stops as soon
// as the bound is passed, so a failure stays cheap.
func TestFuzzCorruptRecordsKeepMemoryBounded(t *testing.T) {
	claim := []byte{0xdb, 0xff, 0xff, 0xff, 0xff}               // str32 of 4 GiB, and nothing after
	mapKey := append([]byte{0x81}, claim...)                    // a map whose first key is that string
	inBin := append([]byte{0xc4, byte(len(mapKey))}, mapKey...) // a bin8 holding the map
	cases := []struct {
		name   string
		record []byte
		decode func([]byte) error
	}{
		{"event", append([]byte{byte(storage.KindEvent), 1}, mapKey...),
			func(b []byte) error { _, err := machine.DecodeEvent(b); return err }},
		{"job", append([]byte{byte(storage.KindJob), 1}, mapKey...),
			func(b []byte) error { _, err := machine.DecodeJob(b); return err }},
		{"effect", append([]byte{byte(storage.KindEffect), 1}, mapKey...),
			func(b []byte) error { _, err := machine.DecodeEffect(b); return err }},
		{"command envelope", append([]byte{byte(storage.KindCommand), 1, 0x92, 0x01}, claim...),
			func(b []byte) error { _, err := machine.DecodeCommand(b); return err }},
		{"command body", append([]byte{byte(storage.KindCommand), 1, 0x92, 0x01}, inBin...),
			func(b []byte) error { _, err := machine.DecodeCommand(b); return err }},
		{"result body", append([]byte{byte(storage.KindResult), 1, 0x92, 0x01}, inBin...),
			func(b []byte) error { _, _, err := machine.DecodeResult(b); return err }},
	}
	const rounds, limit = 60, 200 << 20
	for _, c := range cases {
		runtime.GC()
		runtime.GC() // empties sync.Pools: every case starts from fresh decoders
		var start, now runtime.MemStats
		runtime.ReadMemStats(&start)
		for i := 1; i <= rounds; i++ {
			if err := c.decode(c.record); err == nil {
				t.Fatalf("%s: a record claiming 4 GiB decoded", c.name)
			} else {
				fuzzDecodeErr(t, c.name, err)
			}
			runtime.ReadMemStats(&now)
			if used := now.TotalAlloc - start.TotalAlloc; used > limit {
				t.Errorf("%s: %d decodes of a %d-byte corrupt record allocated %d MiB (limit %d MiB for %d decodes); "+
					"a decoder reused after a failed read keeps and grows its buffer",
					c.name, i, len(c.record), used>>20, limit>>20, rounds)
				break
			}
		}
	}
}

func FuzzDecodeStepRecord(f *testing.F) {
	for _, s := range []*engine.StepRecord{
		{Job: 3, Step: "1", Activity: "Fetch", State: engine.StepRunning, Attempt: 2, JobAttempt: 1, Owner: "w", Resource: "b1",
			Avoid: []string{"b0"}, Capabilities: []string{"browser"}, Selector: map[string]string{"region": "eu"},
			DependsOn: []string{"0"}, LeaseMS: 5000, LeaseExpiryMS: 9000, TimeoutFatal: true, LastHeartbeatMS: 8000, UpdatedMS: 8000},
		{Job: 4, Step: "2", State: engine.StepNeedsUser, Question: []byte(`"captcha"`), AnswerDueMS: 99, Released: true, Resource: "b2"},
		{Job: 5, Step: "3", State: engine.StepPending, WaiterSeq: 7},
	} {
		f.Add(machine.EncodeStepRecord(s))
	}
	for _, b := range fuzzGarbage(storage.KindStep) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := machine.DecodeStepRecord(data)
		if err != nil {
			fuzzDecodeErr(t, "DecodeStepRecord", err)
			return
		}
		b := machine.EncodeStepRecord(s)
		s2, err := machine.DecodeStepRecord(b)
		if err != nil {
			t.Fatalf("decoding the re-encoding of %+v: %v", *s, err)
		}
		fuzzSameValue(t, "the step record", s, s2)
		if b2 := machine.EncodeStepRecord(s2); !bytes.Equal(b, b2) {
			t.Fatalf("encoding is not stable: % x, then % x", b, b2)
		}
		fuzzSameValue(t, "a clone of the step record", s, s.Clone())
	})
}

func FuzzDecodeResource(f *testing.F) {
	for _, r := range []*engine.Resource{
		{ID: "b1", Capabilities: []string{"browser", "js"}, Labels: map[string]string{"region": "eu"}, Capacity: 2,
			Holders: []engine.ResourceHolder{{Job: 1, Step: "1", StepAttempt: 3, SinceMS: 5}}, CreatedMS: 1, UpdatedMS: 2},
		{ID: "g", Capacity: 1, Drained: true},
	} {
		f.Add(machine.EncodeResource(r))
	}
	for _, b := range fuzzGarbage(storage.KindResource) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := machine.DecodeResource(data)
		if err != nil {
			fuzzDecodeErr(t, "DecodeResource", err)
			return
		}
		b := machine.EncodeResource(r)
		r2, err := machine.DecodeResource(b)
		if err != nil {
			t.Fatalf("decoding the re-encoding of %+v: %v", *r, err)
		}
		fuzzSameValue(t, "the resource", r, r2)
		if b2 := machine.EncodeResource(r2); !bytes.Equal(b, b2) {
			t.Fatalf("encoding is not stable: % x, then % x", b, b2)
		}
		r.Free()
		r.Offers([]string{"browser"}, map[string]string{"region": "eu"})
	})
}
