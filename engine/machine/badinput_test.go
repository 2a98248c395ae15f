package machine_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// bogus is a command kind this version does not know.
type bogus struct{ engine.Header }

func (*bogus) Kind() engine.CommandKind   { return 99 }
func (*bogus) Check(*engine.Limits) error { return nil }

// Each kind of bad input gets a typed error naming what was wrong, and
// nothing is written.
func TestBadInputWritesNothing(t *testing.T) {
	h := newHarness(t)
	ref := drive(h, engine.StatusRunning, "wf")
	big := bytes.Repeat([]byte("x"), (1<<20)+1)
	tests := []struct {
		name     string
		cmd      engine.Command
		want     error
		mentions string
	}{
		{"unknown command", &bogus{}, engine.ErrUnknownCommand, "99"},
		{"nil command", nil, engine.ErrUnknownCommand, "nil"},
		{"oversized input", &engine.CreateJob{Type: "t", Queue: "q", Input: big}, engine.ErrPayloadTooLarge, "CreateJob.Input"},
		{"oversized event", &engine.AppendEvents{LeaseRef: ref, Events: []engine.NewEvent{{Type: "x", Payload: big}}}, engine.ErrPayloadTooLarge, "Events[0].Payload"},
		{"oversized name", &engine.Signal{Target: engine.Target{Job: ref.Job}, Name: strings.Repeat("n", 300)}, engine.ErrPayloadTooLarge, "Signal.Name"},
		{"missing type", &engine.CreateJob{Queue: "q"}, engine.ErrInvalidCommand, "CreateJob.Type"},
		{"missing queue", &engine.Claim{Owner: "w", Max: 1, LeaseMS: 1}, engine.ErrInvalidCommand, "Claim.Queue"},
		{"zero claim", &engine.Claim{Queue: "q", Owner: "w", Max: 0, LeaseMS: 1}, engine.ErrInvalidCommand, "Claim.Max"},
		{"huge lease", &engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 1 << 40}, engine.ErrInvalidCommand, "Claim.LeaseMS"},
		{"status event appended", &engine.AppendEvents{LeaseRef: ref, Events: []engine.NewEvent{{Type: engine.EventJobCompleted}}}, engine.ErrInvalidCommand, "status event"},
		{"empty wait", &engine.Wait{LeaseRef: ref}, engine.ErrInvalidCommand, "Wait.Spec"},
		{"seen seq beyond history", &engine.Wait{LeaseRef: ref, Spec: engine.WaitSpec{Signals: []string{"s"}}, SeenSeq: 99}, engine.ErrInvalidCommand, "SeenSeq"},
		{"no target", &engine.Cancel{}, engine.ErrInvalidCommand, "Cancel.Target"},
		{"unknown job", &engine.Cancel{Target: engine.Target{Job: 12345}}, engine.ErrUnknownJob, "12345"},
		{"unknown workflow", &engine.Signal{Target: engine.Target{WorkflowID: "nope"}, Name: "s"}, engine.ErrUnknownJob, "nope"},
		{"illegal transition", &engine.Activate{Target: engine.Target{Job: ref.Job}}, engine.ErrIllegalTransition, "job_activated on job 1 in status Running"},
		{"stale attempt", &engine.Complete{LeaseRef: engine.LeaseRef{Job: ref.Job, Attempt: 7}}, engine.ErrStaleAttempt, "attempt 7"},
		{"catch up without effect", &engine.CommitStep{LeaseRef: ref, Step: "s", Type: "done", CatchUp: true}, engine.ErrInvalidCommand, "no recorded effect"},
		{"parent unknown", &engine.CreateJob{Type: "t", Queue: "q", ParentID: 77, ParentStep: "s", ParentLease: &engine.LeaseRef{Job: 77, Attempt: 1}}, engine.ErrUnknownJob, "ParentLease"},
		{"no parent lease", &engine.CreateJob{Header: engine.Header{Nonce: []byte("as the Engine...")}, Type: "t", Queue: "q", ParentID: ref.Job, ParentStep: "s"}, engine.ErrInvalidCommand, "ParentLease is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := h.snapshot()
			var err error
			if tt.cmd == nil {
				_, err = h.m.Apply(h.db.NewBatch().Begin(), nil)
			} else {
				_, err = h.apply(tt.cmd)
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.mentions) {
				t.Fatalf("error %q does not mention %q", err, tt.mentions)
			}
			sameStore(t, before, h.snapshot())
		})
	}
}

// Corrupt bytes in the store are reported as corruption, with the key, and
// the command writes nothing.
func TestCorruptRecordIsReported(t *testing.T) {
	h := newHarness(t)
	ref := drive(h, engine.StatusRunning, "wf")
	b := h.db.NewBatch()
	tx := b.Begin()
	tx.Set(storage.JobKey(uint64(ref.Job)), []byte{byte(storage.KindJob), 1, 0xc1})
	if err := b.Add(tx); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	before := h.snapshot()
	_, err := h.apply(&engine.Complete{LeaseRef: ref})
	var ce *storage.CorruptError
	if !errors.Is(err, engine.ErrCorrupt) || !errors.As(err, &ce) || !bytes.Equal(ce.Key, storage.JobKey(uint64(ref.Job))) {
		t.Fatalf("error %v, want a CorruptError naming the job key", err)
	}
	sameStore(t, before, h.snapshot())
}

// Garbage and unknown kinds on the log's wire are refused by DecodeCommand.
func TestDecodeCommandRefusesBadBytes(t *testing.T) {
	good, err := machine.EncodeCommand(&engine.Signal{Target: engine.Target{Job: 1}, Name: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if c, err := machine.DecodeCommand(good); err != nil || c.(*engine.Signal).Name != "s" {
		t.Fatalf("round trip: %v %+v", err, c)
	}
	unknown, _ := storage.Encode(storage.KindCommand, machine.CommandVersion, &machine.Envelope{Kind: 200, Body: []byte{0x80}})
	for name, tc := range map[string]struct {
		b    []byte
		want error
	}{
		"empty":        {nil, engine.ErrCorrupt},
		"wrong type":   {append([]byte{byte(storage.KindEvent)}, good[1:]...), engine.ErrCorrupt},
		"truncated":    {good[:len(good)-2], engine.ErrCorrupt},
		"unknown kind": {unknown, engine.ErrUnknownCommand},
	} {
		if _, err := machine.DecodeCommand(tc.b); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
}

func TestLimitsAndConfigValidate(t *testing.T) {
	if err := (engine.Limits{}).Validate(); err != nil {
		t.Fatalf("zero Limits: %v", err)
	}
	if err := (engine.Limits{MaxPayloadBytes: -1}).Validate(); err == nil || !strings.Contains(err.Error(), "MaxPayloadBytes") {
		t.Fatalf("negative payload limit: %v", err)
	}
	if err := (embedded.Config{}).Validate(); err == nil || !strings.Contains(err.Error(), "Dir") {
		t.Fatalf("zero Config: %v, want an error naming Dir", err)
	}
	if err := (embedded.Config{InMemory: true}).Validate(); err != nil {
		t.Fatalf("in-memory Config: %v", err)
	}
	c := embedded.Config{InMemory: true, Limits: engine.Limits{MaxPayloadBytes: 8 << 20}}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "MaxPayloadBytes") {
		t.Fatalf("payload limit over the batch size: %v", err)
	}
}

// A command that fails after it has already changed things (a claim of two
// jobs whose second record is corrupt) leaves nothing behind: not even the
// first job's claim. This goes through the LocalLog, which must drop the
// failed command's buffered writes from its batch.
func TestFailureAfterWritesLeavesNothing(t *testing.T) {
	h := newHarness(t)
	first := h.create("a")
	second := h.create("b")
	b := h.db.NewBatch()
	tx := b.Begin()
	tx.Set(storage.JobKey(uint64(second)), []byte{byte(storage.KindJob), 1, 0xc1})
	if err := b.Add(tx); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	before := h.snapshot()
	h.mustFail(&engine.Claim{Queue: "q", Owner: "w", Max: 2, LeaseMS: 1000}, engine.ErrCorrupt)
	sameStore(t, before, h.snapshot())
	if j := h.job(first); j.Status != engine.StatusQueued || j.Attempt != 0 {
		t.Fatalf("the first job was claimed by a failed command: %+v", j)
	}
}

// Ids and names that were not valid UTF-8 used to be accepted
// and all printed as U+FFFD, so such a run could not be reached by the id
// shown. Every name a command carries must be UTF-8; the refusal names the
// field and the first bad byte.
func TestNamesMustBeUTF8(t *testing.T) {
	h := newHarness(t)
	id := h.create("wf")
	c := h.claimOne(60_000)
	bad := "run-\xff\xfe"
	before := h.snapshot()
	for _, tc := range []struct {
		cmd   engine.Command
		field string
	}{
		{&engine.CreateJob{WorkflowID: bad, Type: "t", Queue: "q"}, "CreateJob.WorkflowID"},
		{&engine.CreateJob{Type: bad, Queue: "q"}, "CreateJob.Type"},
		{&engine.CreateJob{Type: "t", Queue: bad}, "CreateJob.Queue"},
		{&engine.Signal{Target: engine.Target{Job: id}, Name: bad}, "Signal.Name"},
		{&engine.Cancel{Target: engine.Target{WorkflowID: bad}}, "Cancel.WorkflowID"},
		{&engine.Claim{Queue: bad, Owner: "w", Max: 1, LeaseMS: 1000}, "Claim.Queue"},
		{&engine.Claim{Queue: "q", Owner: bad, Max: 1, LeaseMS: 1000}, "Claim.Owner"},
		{&engine.AppendEvents{LeaseRef: c.Lease(), Events: []engine.NewEvent{{Type: "marker", Name: bad}}}, "AppendEvents.Events[0].Name"},
		{&engine.CommitStep{LeaseRef: c.Lease(), Step: bad, Type: "activity_completed"}, "CommitStep.Step"},
		{&engine.AddResource{ID: bad, Capacity: 1}, "AddResource.ID"},
		{&engine.CreateReview{Job: bad, Phase: "p", Queue: "q", Type: "w"}, "CreateTask.Job"},
		{&engine.CreateSchedule{ID: bad, Spec: engine.ScheduleSpec{Intervals: []engine.ScheduleInterval{{EveryMS: 60_000}}}, Action: engine.ScheduleAction{Type: "t", Queue: "q"}}, "CreateSchedule.ID"},
		{&engine.CreateJob{Type: "t", Queue: "q", Header: engine.Header{RequestID: bad}}, "CreateJob.RequestID"},
	} {
		_, err := h.apply(tc.cmd)
		if !errors.Is(err, engine.ErrInvalidCommand) || !strings.Contains(err.Error(), tc.field+" is not valid UTF-8 (byte 4") {
			t.Errorf("%s: %v, want %s refused as not UTF-8", tc.cmd.Kind(), err, tc.field)
		}
	}
	sameStore(t, before, h.snapshot())
	// Any valid UTF-8 is fine, however far from ASCII.
	h.must(&engine.CreateJob{WorkflowID: "Zürich/東京/🚀", Type: "t", Queue: "q"})
}
