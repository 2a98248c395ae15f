package engine

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/heddlewf/heddle/storage"
)

func fuzzSampleTaskCommands() []Command {
	return []Command{
		&CreateTask{Header: Header{NowMS: 1, RequestID: "r1"}, Job: "j", Phase: "p", Queue: "q", ReviewQueue: "rq", Type: "w", Deps: []string{"a"},
			Draft: true, AutoReview: true, Config: TaskConfig{Objective: "o", Acceptance: []string{"x"}, Input: []byte("i")}},
		&TaskCommand{Header: Header{NowMS: 1, RequestID: "r2"}, TaskTarget: TaskTarget{ID: 1}, Op: TaskOpReject, By: "ann", Reason: "again", Expect: TaskApprovalRequired},
		&TaskCommand{Header: Header{NowMS: 1}, TaskTarget: TaskTarget{Job: "j", Phase: "p"}, Op: TaskOpConfig, Config: &TaskConfig{Details: "d"}},
		&ClaimTasks{Header: Header{NowMS: 1}, Role: TaskRoleReview, Queue: "q", Owner: "r", Max: 2, LeaseMS: 1000, Types: []string{"w"}},
		&TaskReport{Header: Header{NowMS: 1}, TaskLeaseRef: TaskLeaseRef{Task: 1, Attempt: 2}, Op: TaskReportVerdict,
			Review: &Review{Verdict: VerdictIntervene, Recommendations: []string{"r"}, Summary: "s"}},
		&TaskReport{Header: Header{NowMS: 1}, TaskLeaseRef: TaskLeaseRef{Task: 1, Attempt: 1}, Op: TaskReportOutput, Output: []byte("o"), Cost: 2.5},
		&TaskHeartbeat{Header: Header{NowMS: 1}, Leases: []TaskLeaseRef{{Task: 1, Attempt: 1}}, LeaseMS: 1000},
		&ReclaimTasks{Header: Header{NowMS: 1}, Max: 3},
		&ConfigureJob{Header: Header{NowMS: 1, RequestID: "r3"}, Target: Target{WorkflowID: "wf"}, Input: []byte(`["x"]`)},
	}
}

// The task commands decode from the log form like every command; a decoded
// one re-encodes to the same bytes, and applying it to a store with tasks
// either works or is refused, never corrupting what is stored.
func FuzzDecodeTaskCommand(f *testing.F) {
	for _, c := range fuzzSampleTaskCommands() {
		b, err := EncodeCommand(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	h := newHarness(f)
	h.taskTo("fz-a", TaskRunning)
	h.taskTo("fz-b", TaskReviewing)
	h.taskTo("fz-c", TaskDraft)
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeCommand(data)
		if err != nil {
			fuzzDecodeErr(t, "DecodeCommand", err)
			return
		}
		b, err := EncodeCommand(c)
		if err != nil {
			t.Fatalf("re-encoding: %v", err)
		}
		c2, err := DecodeCommand(b)
		if err != nil {
			t.Fatalf("decoding the re-encoding: %v", err)
		}
		fuzzSameValue(t, "the command", c, c2)
		if b2, err := EncodeCommand(c2); err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("encoding is not stable (%v)", err)
		}
		c.Head().NowMS = h.now
		_, _ = h.apply(c) // accepted or refused; Verify says whether the store stayed sound
		var errs []error
		viewOK(t, h.db, func(r *storage.Reader) error { errs = Verify(r, 5); return nil })
		for _, err := range errs {
			t.Fatalf("after %T: %v", c, err)
		}
	})
}

// Stored task records and events decode or fail as corrupt, and a decoded
// one re-encodes stably.
func FuzzDecodeTaskRecords(f *testing.F) {
	f.Add(EncodeTask(&Task{ID: 1, Job: "j", Phase: "p", State: TaskReviewing, Deps: []TaskID{2}, Review: Review{Verdict: VerdictApprove}}))
	f.Add(EncodeTaskEvent(&TaskEvent{Seq: 1, Type: TaskEventReviewed, From: TaskReviewing, To: TaskApprovalRequired,
		Review: &Review{Verdict: VerdictApprove, Summary: "ok"}, Config: &TaskConfig{Objective: "o"}}))
	for _, b := range fuzzGarbage(storage.KindTask) {
		f.Add(b)
	}
	for _, b := range fuzzGarbage(storage.KindTaskEvent) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if tk, err := DecodeTask(data); err != nil {
			fuzzDecodeErr(t, "DecodeTask", err)
		} else if back, err := DecodeTask(EncodeTask(tk)); err != nil {
			t.Fatalf("task round trip: %v", err)
		} else {
			fuzzSameValue(t, "the task", tk, back)
		}
		if e, err := DecodeTaskEvent(data); err != nil {
			fuzzDecodeErr(t, "DecodeTaskEvent", err)
		} else if back, err := DecodeTaskEvent(EncodeTaskEvent(e)); err != nil {
			t.Fatalf("task event round trip: %v", err)
		} else {
			fuzzSameValue(t, "the task event", e, back)
		}
	})
}

// Every field of every task command survives the log form (a msgpack key
// shared with the embedded Header would silently drop one).
func TestTaskCommandsRoundTrip(t *testing.T) {
	for _, c := range fuzzSampleTaskCommands() {
		b, err := EncodeCommand(c)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeCommand(b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(c, back) {
			t.Errorf("%s: %+v decoded as %+v", c.Kind(), c, back)
		}
	}
}
