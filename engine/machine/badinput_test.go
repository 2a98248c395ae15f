package engine

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/storage"
)

// bogus is a command kind this version does not know.
type bogus struct{ Header }

func (*bogus) Kind() CommandKind   { return 99 }
func (*bogus) Check(*Limits) error { return nil }

// Each kind of bad input gets a typed error naming what was wrong, and
// nothing is written.
func TestBadInputWritesNothing(t *testing.T) {
	h := newHarness(t)
	ref := drive(h, StatusRunning, "wf")
	big := bytes.Repeat([]byte("x"), (1<<20)+1)
	tests := []struct {
		name     string
		cmd      Command
		want     error
		mentions string
	}{
		{"unknown command", &bogus{}, ErrUnknownCommand, "99"},
		{"nil command", nil, ErrUnknownCommand, "nil"},
		{"oversized input", &CreateJob{Type: "t", Queue: "q", Input: big}, ErrPayloadTooLarge, "CreateJob.Input"},
		{"oversized event", &AppendEvents{LeaseRef: ref, Events: []NewEvent{{Type: "x", Payload: big}}}, ErrPayloadTooLarge, "Events[0].Payload"},
		{"oversized name", &Signal{Target: Target{Job: ref.Job}, Name: strings.Repeat("n", 300)}, ErrPayloadTooLarge, "Signal.Name"},
		{"missing type", &CreateJob{Queue: "q"}, ErrInvalidCommand, "CreateJob.Type"},
		{"missing queue", &Claim{Owner: "w", Max: 1, LeaseMS: 1}, ErrInvalidCommand, "Claim.Queue"},
		{"zero claim", &Claim{Queue: "q", Owner: "w", Max: 0, LeaseMS: 1}, ErrInvalidCommand, "Claim.Max"},
		{"huge lease", &Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 1 << 40}, ErrInvalidCommand, "Claim.LeaseMS"},
		{"status event appended", &AppendEvents{LeaseRef: ref, Events: []NewEvent{{Type: EventJobCompleted}}}, ErrInvalidCommand, "status event"},
		{"empty wait", &Wait{LeaseRef: ref}, ErrInvalidCommand, "Wait.Spec"},
		{"seen seq beyond history", &Wait{LeaseRef: ref, Spec: WaitSpec{Signals: []string{"s"}}, SeenSeq: 99}, ErrInvalidCommand, "SeenSeq"},
		{"no target", &Cancel{}, ErrInvalidCommand, "Cancel.Target"},
		{"unknown job", &Cancel{Target: Target{Job: 12345}}, ErrUnknownJob, "12345"},
		{"unknown workflow", &Signal{Target: Target{WorkflowID: "nope"}, Name: "s"}, ErrUnknownJob, "nope"},
		{"illegal transition", &Activate{Target: Target{Job: ref.Job}}, ErrIllegalTransition, "job_activated on job 1 in status Running"},
		{"stale attempt", &Complete{LeaseRef: LeaseRef{Job: ref.Job, Attempt: 7}}, ErrStaleAttempt, "attempt 7"},
		{"catch up without effect", &CommitStep{LeaseRef: ref, Step: "s", Type: "done", CatchUp: true}, ErrInvalidCommand, "no recorded effect"},
		{"parent unknown", &CreateJob{Type: "t", Queue: "q", ParentID: 77, ParentStep: "s", ParentLease: &LeaseRef{Job: 77, Attempt: 1}}, ErrUnknownJob, "ParentLease"},
		{"no parent lease", &CreateJob{Header: Header{Nonce: []byte("as the Engine...")}, Type: "t", Queue: "q", ParentID: ref.Job, ParentStep: "s"}, ErrInvalidCommand, "ParentLease is required"},
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
	ref := drive(h, StatusRunning, "wf")
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
	_, err := h.apply(&Complete{LeaseRef: ref})
	var ce *storage.CorruptError
	if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) || !bytes.Equal(ce.Key, storage.JobKey(uint64(ref.Job))) {
		t.Fatalf("error %v, want a CorruptError naming the job key", err)
	}
	sameStore(t, before, h.snapshot())
}

// Garbage and unknown kinds on the log's wire are refused by DecodeCommand.
func TestDecodeCommandRefusesBadBytes(t *testing.T) {
	good, err := EncodeCommand(&Signal{Target: Target{Job: 1}, Name: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if c, err := DecodeCommand(good); err != nil || c.(*Signal).Name != "s" {
		t.Fatalf("round trip: %v %+v", err, c)
	}
	unknown, _ := storage.Encode(storage.KindCommand, commandVersion, &envelope{Kind: 200, Body: []byte{0x80}})
	for name, tc := range map[string]struct {
		b    []byte
		want error
	}{
		"empty":        {nil, ErrCorrupt},
		"wrong type":   {append([]byte{byte(storage.KindEvent)}, good[1:]...), ErrCorrupt},
		"truncated":    {good[:len(good)-2], ErrCorrupt},
		"unknown kind": {unknown, ErrUnknownCommand},
	} {
		if _, err := DecodeCommand(tc.b); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
}

func TestLimitsAndConfigValidate(t *testing.T) {
	if err := (Limits{}).Validate(); err != nil {
		t.Fatalf("zero Limits: %v", err)
	}
	if err := (Limits{MaxPayloadBytes: -1}).Validate(); err == nil || !strings.Contains(err.Error(), "MaxPayloadBytes") {
		t.Fatalf("negative payload limit: %v", err)
	}
	if err := (Config{}).Validate(); err == nil || !strings.Contains(err.Error(), "Dir") {
		t.Fatalf("zero Config: %v, want an error naming Dir", err)
	}
	if err := (Config{InMemory: true}).Validate(); err != nil {
		t.Fatalf("in-memory Config: %v", err)
	}
	c := Config{InMemory: true, Limits: Limits{MaxPayloadBytes: 8 << 20}}
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
	h.mustFail(&Claim{Queue: "q", Owner: "w", Max: 2, LeaseMS: 1000}, ErrCorrupt)
	sameStore(t, before, h.snapshot())
	if j := h.job(first); j.Status != StatusQueued || j.Attempt != 0 {
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
		cmd   Command
		field string
	}{
		{&CreateJob{WorkflowID: bad, Type: "t", Queue: "q"}, "CreateJob.WorkflowID"},
		{&CreateJob{Type: bad, Queue: "q"}, "CreateJob.Type"},
		{&CreateJob{Type: "t", Queue: bad}, "CreateJob.Queue"},
		{&Signal{Target: Target{Job: id}, Name: bad}, "Signal.Name"},
		{&Cancel{Target: Target{WorkflowID: bad}}, "Cancel.WorkflowID"},
		{&Claim{Queue: bad, Owner: "w", Max: 1, LeaseMS: 1000}, "Claim.Queue"},
		{&Claim{Queue: "q", Owner: bad, Max: 1, LeaseMS: 1000}, "Claim.Owner"},
		{&AppendEvents{LeaseRef: c.Lease(), Events: []NewEvent{{Type: "marker", Name: bad}}}, "AppendEvents.Events[0].Name"},
		{&CommitStep{LeaseRef: c.Lease(), Step: bad, Type: "activity_completed"}, "CommitStep.Step"},
		{&AddResource{ID: bad, Capacity: 1}, "AddResource.ID"},
		{&CreateTask{Job: bad, Phase: "p", Queue: "q", Type: "w"}, "CreateTask.Job"},
		{&CreateSchedule{ID: bad, Spec: ScheduleSpec{Intervals: []ScheduleInterval{{EveryMS: 60_000}}}, Action: ScheduleAction{Type: "t", Queue: "q"}}, "CreateSchedule.ID"},
		{&CreateJob{Type: "t", Queue: "q", Header: Header{RequestID: bad}}, "CreateJob.RequestID"},
	} {
		_, err := h.apply(tc.cmd)
		if !errors.Is(err, ErrInvalidCommand) || !strings.Contains(err.Error(), tc.field+" is not valid UTF-8 (byte 4") {
			t.Errorf("%s: %v, want %s refused as not UTF-8", tc.cmd.Kind(), err, tc.field)
		}
	}
	sameStore(t, before, h.snapshot())
	// Any valid UTF-8 is fine, however far from ASCII.
	h.must(&CreateJob{WorkflowID: "Zürich/東京/🚀", Type: "t", Queue: "q"})
}
