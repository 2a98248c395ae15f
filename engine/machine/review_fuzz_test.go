package machine_test

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

func fuzzSampleTaskCommands() []engine.Command {
	return []engine.Command{
		&engine.CreateTask{Header: engine.Header{NowMS: 1, RequestID: "r1"}, Job: "j", Phase: "p", Queue: "q", ReviewQueue: "rq", Type: "w", Deps: []string{"a"},
			Draft: true, AutoReview: true, Config: engine.TaskConfig{Objective: "o", Acceptance: []string{"x"}, Input: []byte("i")}},
		&engine.TaskCommand{Header: engine.Header{NowMS: 1, RequestID: "r2"}, TaskTarget: engine.TaskTarget{ID: 1}, Op: engine.TaskOpReject, By: "ann", Reason: "again", Expect: engine.TaskApprovalRequired},
		&engine.TaskCommand{Header: engine.Header{NowMS: 1}, TaskTarget: engine.TaskTarget{Job: "j", Phase: "p"}, Op: engine.TaskOpConfig, Config: &engine.TaskConfig{Details: "d"}},
		&engine.ClaimTasks{Header: engine.Header{NowMS: 1}, Role: engine.TaskRoleReview, Queue: "q", Owner: "r", Max: 2, LeaseMS: 1000, Types: []string{"w"}},
		&engine.TaskReport{Header: engine.Header{NowMS: 1}, TaskLeaseRef: engine.TaskLeaseRef{Task: 1, Attempt: 2}, Op: engine.TaskReportVerdict,
			Review: &engine.Review{Verdict: engine.VerdictIntervene, Recommendations: []string{"r"}, Summary: "s"}},
		&engine.TaskReport{Header: engine.Header{NowMS: 1}, TaskLeaseRef: engine.TaskLeaseRef{Task: 1, Attempt: 1}, Op: engine.TaskReportOutput, Output: []byte("o"), Cost: 2.5},
		&engine.TaskHeartbeat{Header: engine.Header{NowMS: 1}, Leases: []engine.TaskLeaseRef{{Task: 1, Attempt: 1}}, LeaseMS: 1000},
		&engine.ReclaimTasks{Header: engine.Header{NowMS: 1}, Max: 3},
		&engine.ConfigureJob{Header: engine.Header{NowMS: 1, RequestID: "r3"}, Target: engine.Target{WorkflowID: "wf"}, Input: []byte(`["x"]`)},
	}
}

// The task commands decode from the log form like every command; a decoded
// one re-encodes to the same bytes, and applying it to a store with tasks
// either works or is refused, never corrupting what is stored.
func FuzzDecodeTaskCommand(f *testing.F) {
	for _, c := range fuzzSampleTaskCommands() {
		b, err := machine.EncodeCommand(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	h := newHarness(f)
	h.taskTo("fz-a", engine.TaskRunning)
	h.taskTo("fz-b", engine.TaskReviewing)
	h.taskTo("fz-c", engine.TaskDraft)
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := machine.DecodeCommand(data)
		if err != nil {
			fuzzDecodeErr(t, "DecodeCommand", err)
			return
		}
		b, err := machine.EncodeCommand(c)
		if err != nil {
			t.Fatalf("re-encoding: %v", err)
		}
		c2, err := machine.DecodeCommand(b)
		if err != nil {
			t.Fatalf("decoding the re-encoding: %v", err)
		}
		fuzzSameValue(t, "the command", c, c2)
		if b2, err := machine.EncodeCommand(c2); err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("encoding is not stable (%v)", err)
		}
		c.Head().NowMS = h.now
		_, _ = h.apply(c) // accepted or refused; Verify says whether the store stayed sound
		var errs []error
		viewOK(t, h.db, func(r *storage.Reader) error { errs = machine.Verify(r, 5); return nil })
		for _, err := range errs {
			t.Fatalf("after %T: %v", c, err)
		}
	})
}

// Stored task records and events decode or fail as corrupt, and a decoded
// one re-encodes stably.
func FuzzDecodeTaskRecords(f *testing.F) {
	f.Add(machine.EncodeTask(&engine.Task{ID: 1, Job: "j", Phase: "p", State: engine.TaskReviewing, Deps: []engine.TaskID{2}, Review: engine.Review{Verdict: engine.VerdictApprove}}))
	f.Add(machine.EncodeTaskEvent(&engine.TaskEvent{Seq: 1, Type: engine.TaskEventReviewed, From: engine.TaskReviewing, To: engine.TaskApprovalRequired,
		Review: &engine.Review{Verdict: engine.VerdictApprove, Summary: "ok"}, Config: &engine.TaskConfig{Objective: "o"}}))
	for _, b := range fuzzGarbage(storage.KindTask) {
		f.Add(b)
	}
	for _, b := range fuzzGarbage(storage.KindTaskEvent) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if tk, err := machine.DecodeTask(data); err != nil {
			fuzzDecodeErr(t, "DecodeTask", err)
		} else if back, err := machine.DecodeTask(machine.EncodeTask(tk)); err != nil {
			t.Fatalf("task round trip: %v", err)
		} else {
			fuzzSameValue(t, "the task", tk, back)
		}
		if e, err := machine.DecodeTaskEvent(data); err != nil {
			fuzzDecodeErr(t, "DecodeTaskEvent", err)
		} else if back, err := machine.DecodeTaskEvent(machine.EncodeTaskEvent(e)); err != nil {
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
		b, err := machine.EncodeCommand(c)
		if err != nil {
			t.Fatal(err)
		}
		back, err := machine.DecodeCommand(b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(c, back) {
			t.Errorf("%s: %+v decoded as %+v", c.Kind(), c, back)
		}
	}
}
