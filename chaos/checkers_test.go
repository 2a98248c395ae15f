package chaos

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// ms converts milliseconds to the nanoseconds the logs record.
func ms(n int64) int64 { return n * 1e6 }

func TestLinearizableAcceptsAFencedHandOver(t *testing.T) {
	ops := []LinOp{
		{Job: 1, Kind: "claim", Att: 1, Call: ms(0), Return: ms(1), Out: OutOK},
		{Job: 1, Kind: "commit", Att: 1, Step: "1", Call: ms(2), Return: ms(3), Out: OutOK},
		{Job: 1, Kind: "reclaim", Att: 1, Call: ms(4), Return: ms(100), Out: OutOK},
		{Job: 1, Kind: "claim", Att: 2, Call: ms(5), Return: ms(6), Out: OutOK},
		{Job: 1, Kind: "commit", Att: 1, Step: "2", Call: ms(7), Return: ms(8), Out: OutStale},
		{Job: 1, Kind: "commit", Att: 2, Step: "1", Call: ms(9), Return: ms(10), Out: OutCommitted},
		{Job: 1, Kind: "commit", Att: 2, Step: "2", Call: ms(11), Return: ms(100), Out: OutUnknown},
		{Job: 1, Kind: "close", Att: 2, Call: ms(12), Return: ms(13), Out: OutOK},
	}
	ok, msg, err := CheckLinearizable(ops, "", 0)
	if err != nil || !ok {
		t.Fatalf("a legal history was refused: %s %v", msg, err)
	}
}

func TestLinearizableCatchesTwoLiveAttempts(t *testing.T) {
	// Attempt 2 was claimed and returned before attempt 1's commit was
	// even called, yet that commit succeeded: two attempts were live.
	ops := []LinOp{
		{Job: 1, Kind: "claim", Att: 1, Call: ms(0), Return: ms(1), Out: OutOK},
		{Job: 1, Kind: "reclaim", Att: 1, Call: ms(2), Return: ms(3), Out: OutOK},
		{Job: 1, Kind: "claim", Att: 2, Call: ms(4), Return: ms(5), Out: OutOK},
		{Job: 1, Kind: "commit", Att: 1, Step: "1", Call: ms(6), Return: ms(7), Out: OutOK},
	}
	html := filepath.Join(t.TempDir(), "lin.html")
	ok, _, err := CheckLinearizable(ops, html, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		t.Fatal("a commit by a fenced-out attempt passed the linearizability check")
	}
	if st, err := os.Stat(html); err != nil || st.Size() == 0 {
		t.Fatalf("no visualisation was written: %v", err)
	}
}

func TestLinearizableCatchesADoubleCommitAndAReusedAttempt(t *testing.T) {
	double := []LinOp{
		{Job: 1, Kind: "claim", Att: 1, Call: ms(0), Return: ms(1), Out: OutOK},
		{Job: 1, Kind: "commit", Att: 1, Step: "1", Call: ms(2), Return: ms(3), Out: OutOK},
		{Job: 1, Kind: "commit", Att: 1, Step: "1", Call: ms(4), Return: ms(5), Out: OutOK},
	}
	if ok, _, _ := CheckLinearizable(double, "", 0); ok {
		t.Fatal("a step committed twice passed")
	}
	reused := []LinOp{
		{Job: 1, Kind: "claim", Att: 1, Call: ms(0), Return: ms(1), Out: OutOK},
		{Job: 1, Kind: "close", Att: 1, Call: ms(2), Return: ms(3), Out: OutOK},
		{Job: 1, Kind: "claim", Att: 1, Call: ms(4), Return: ms(5), Out: OutOK},
	}
	if ok, _, _ := CheckLinearizable(reused, "", 0); ok {
		t.Fatal("an attempt number handed out twice passed")
	}
	staleWhileLive := []LinOp{
		{Job: 1, Kind: "claim", Att: 1, Call: ms(0), Return: ms(1), Out: OutOK},
		{Job: 1, Kind: "heartbeat", Att: 1, Call: ms(2), Return: ms(3), Out: OutStale},
	}
	if ok, _, _ := CheckLinearizable(staleWhileLive, "", 0); ok {
		t.Fatal("a refusal of the only live attempt passed")
	}
}

func TestReexecutionChecker(t *testing.T) {
	commits := map[string]int64{"wf/1/1": 100}
	faults := []Fault{{Kind: "kill-worker", Start: ms(50), End: ms(60)}}
	explained := []Execution{{Key: "wf/1/1", Worker: "a", Attempt: 1, T: ms(40)}, {Key: "wf/1/1", Worker: "b", Attempt: 1, T: ms(70)}}
	rep := CheckReexecutions(explained, commits, faults)
	if rep.Reexecuted != 1 || len(rep.Unexplained) != 0 || len(rep.AfterCommit) != 0 {
		t.Fatalf("a repeat after a worker kill: %+v", rep)
	}
	after := append(explained, Execution{Key: "wf/1/1", Worker: "c", Attempt: 1, T: ms(102)})
	if rep := CheckReexecutions(after, commits, faults); len(rep.AfterCommit) != 1 {
		t.Fatalf("an execution after the commit: %+v", rep)
	}
	// Long after the only fault, a step ran twice: nothing explains it.
	late := []Execution{{Key: "wf/2/1", Worker: "a", Attempt: 1, T: ms(30_000)}, {Key: "wf/2/1", Worker: "b", Attempt: 1, T: ms(31_000)}}
	if rep := CheckReexecutions(late, nil, faults); len(rep.Unexplained) != 1 {
		t.Fatalf("a repeat with no fault within the window: %+v", rep)
	}
	sameMS := []Execution{{Key: "wf/1/1", Worker: "a", Attempt: 1, T: ms(100) + 5}}
	if rep := CheckReexecutions(sameMS, commits, nil); len(rep.AfterCommit) != 0 {
		t.Fatalf("an execution in the commit's own millisecond counted as after it: %+v", rep)
	}
}

func TestStoreCheckers(t *testing.T) {
	jobs := map[engine.JobID]*JobHistory{
		1: {Job: &engine.Job{ID: 1, WorkflowID: "a", Status: engine.StatusCompleted},
			Events: []engine.Event{{Seq: 3, Step: "1", Commit: true}, {Seq: 5, Step: "1", Commit: true}}},
		2: {Job: &engine.Job{ID: 2, WorkflowID: "b", Status: engine.StatusRunning}},
	}
	if n, _ := DuplicateCommits(jobs); n != 1 {
		t.Fatalf("DuplicateCommits = %d, want 1", n)
	}
	lost := Lost([]Ack{{"a", 1, ""}, {"b", 2, ""}, {"c", 3, ""}}, jobs)
	if len(lost) != 2 {
		t.Fatalf("Lost = %v, want the open job and the missing one", lost)
	}
}

func TestResourceOverleases(t *testing.T) {
	capacity := map[string]int{"r": 1}
	start := func(key, worker string, at int64) Execution {
		return Execution{Key: key, Worker: worker, Attempt: 1, T: ms(at), Resource: "r"}
	}
	stop := func(key, worker string, at int64) Execution {
		return Execution{Key: key, Worker: worker, Attempt: 1, T: ms(at), Resource: "r", End: true}
	}
	for _, tc := range []struct {
		name   string
		execs  []Execution
		faults []Fault
		want   int
	}{
		{"one after another, handed over at one instant",
			[]Execution{start("a", "w1", 0), stop("a", "w1", 10), start("b", "w2", 10), stop("b", "w2", 20)}, nil, 0},
		{"two at once on one unit",
			[]Execution{start("a", "w1", 0), start("b", "w2", 5), stop("a", "w1", 10), stop("b", "w2", 20)}, nil, 1},
		{"a killed worker's try ends at the kill",
			[]Execution{start("a", "w1", 0), start("b", "w2", 30), stop("b", "w2", 40)},
			[]Fault{{Kind: "kill-worker", Target: "w1", Start: ms(20), End: ms(25)}}, 0},
		{"a try that never stopped holds its unit to the end",
			[]Execution{start("a", "w1", 0), start("b", "w2", 30), stop("b", "w2", 40)}, nil, 1},
		{"tries without a resource do not count",
			[]Execution{{Key: "x", Worker: "w1", T: ms(0)}, {Key: "y", Worker: "w2", T: ms(1)}}, nil, 0},
	} {
		n, problems := CheckResourceOverleases(tc.execs, tc.faults, capacity, ms(1000))
		if n != tc.want || len(problems) != n {
			t.Errorf("%s: %d over-leases %v, want %d", tc.name, n, problems, tc.want)
		}
	}
}

// A claim whose answer was lost is given back with a job_requeued of
// reason "released": by the node that applied it, which no client logs,
// or by the worker, which logs it as a release. ReadOps takes the
// history's release when no client logged it, and only then, so the next
// attempt's claim is legal and no release is counted twice.
func TestReadOpsTakesReleasesFromTheHistory(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, recs ...OpRecord) {
		t.Helper()
		var lines []byte
		for _, r := range recs {
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			lines = append(append(lines, b...), '\n')
		}
		if err := os.WriteFile(filepath.Join(dir, name), lines, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Client 0 claimed attempt 2 of job 2 and gave it back itself; the
	// claim of attempt 1 of job 1 and of attempt 1 of job 2 reached no
	// client, and the node gave job 1's back.
	write("ops-a.jsonl",
		OpRecord{ID: 1, Op: "claim", T: ms(50)}, OpRecord{ID: 1, Ret: true, T: ms(51), Out: OutOK, Claimed: []engine.LeaseRef{{Job: 2, Attempt: 2}}},
		OpRecord{ID: 2, Op: "release", Job: 2, Att: 2, T: ms(52)}, OpRecord{ID: 2, Ret: true, T: ms(53), Out: OutOK},
		OpRecord{ID: 3, Op: "claim", T: ms(60)}, OpRecord{ID: 3, Ret: true, T: ms(61), Out: OutOK, Claimed: []engine.LeaseRef{{Job: 1, Attempt: 2}}},
		OpRecord{ID: 4, Op: "close", Job: 1, Att: 2, T: ms(62)}, OpRecord{ID: 4, Ret: true, T: ms(63), Out: OutOK})
	jobs := map[engine.JobID]*JobHistory{
		1: {Events: []engine.Event{
			{Type: engine.EventJobLeased, Attempt: 1, AtMS: 10},
			{Type: engine.EventJobRequeued, Attempt: 1, Reason: engine.ReasonReleased, AtMS: 20},
			{Type: engine.EventJobLeased, Attempt: 2, AtMS: 60}}},
		2: {Events: []engine.Event{
			{Type: engine.EventJobLeased, Attempt: 1, AtMS: 10},
			{Type: engine.EventJobRequeued, Attempt: 1, Reason: engine.ReasonLeaseExpired, AtMS: 40},
			{Type: engine.EventJobLeased, Attempt: 2, AtMS: 50},
			{Type: engine.EventJobRequeued, Attempt: 2, Reason: engine.ReasonReleased, AtMS: 52}}},
	}
	ops, err := ReadOps(dir, jobs, ms(1000))
	if err != nil {
		t.Fatal(err)
	}
	releases := map[engine.JobID]int{}
	for _, o := range ops {
		if o.Kind == "release" {
			releases[o.Job]++
		}
	}
	if releases[1] != 1 || releases[2] != 1 {
		t.Fatalf("releases by job: %v, want one each", releases)
	}
	if ok, msg, err := CheckLinearizable(ops, "", 0); err != nil || !ok {
		t.Fatalf("a history with releases was refused: %s %v", msg, err)
	}
}

// CrossShardChildren counts a child created twice for one step as
// duplicated, and a child never created or never ended as lost.
func TestCrossShardChildren(t *testing.T) {
	job := func(id, parent engine.JobID, wf, step string, st engine.Status) *JobHistory {
		return &JobHistory{Job: &engine.Job{ID: id, ParentID: parent, ParentStep: step, WorkflowID: wf, Status: st}}
	}
	jobs := map[engine.JobID]*JobHistory{
		1:  job(1, 0, "a", "", engine.StatusCompleted),
		2:  job(2, 0, "b", "", engine.StatusCompleted),
		3:  job(3, 0, "c", "", engine.StatusCompleted),
		4:  job(4, 0, "d", "", engine.StatusCompleted),
		11: job(11, 1, "a-child", "c1", engine.StatusCompleted),
		12: job(12, 2, "b-child", "c1", engine.StatusCompleted),
		13: job(13, 2, "b-child", "c1", engine.StatusCompleted),
		14: job(14, 3, "c-child", "c1", engine.StatusRunning),
	}
	acks := []Ack{{"a", 1, "a-child"}, {"b", 2, "b-child"}, {"c", 3, "c-child"}, {"d", 4, "d-child"}, {"e", 5, ""}}
	children, dup, lost, problems := CrossShardChildren(acks, jobs)
	if children != 4 || dup != 1 || lost != 2 || len(problems) != 3 {
		t.Fatalf("children %d, duplicated %d, lost %d, problems %q; want 4, 1, 2 and three lines", children, dup, lost, problems)
	}
}

// CrossShardSignals counts a child's signal received twice as duplicated,
// and the signal of a completed child that never arrived as lost; a child
// that has not completed may not have signalled yet.
func TestCrossShardSignals(t *testing.T) {
	sig := engine.Event{Type: engine.EventSignalReceived, Name: ChildSignalName}
	other := engine.Event{Type: engine.EventSignalReceived, Name: SignalName}
	job := func(id, parent engine.JobID, wf string, st engine.Status, evs ...engine.Event) *JobHistory {
		return &JobHistory{Job: &engine.Job{ID: id, ParentID: parent, WorkflowID: wf, Status: st}, Events: evs}
	}
	jobs := map[engine.JobID]*JobHistory{
		1:  job(1, 0, "a", engine.StatusCompleted, sig, other),
		2:  job(2, 0, "b", engine.StatusRunning, sig, sig),
		3:  job(3, 0, "c", engine.StatusRunning, other),
		4:  job(4, 0, "d", engine.StatusRunning),
		11: job(11, 1, "a-child", engine.StatusCompleted),
		12: job(12, 2, "b-child", engine.StatusCompleted),
		13: job(13, 3, "c-child", engine.StatusCompleted),
		14: job(14, 4, "d-child", engine.StatusRunning),
	}
	acks := []Ack{{"a", 1, "a-child"}, {"b", 2, "b-child"}, {"c", 3, "c-child"}, {"d", 4, "d-child"}, {"e", 5, ""}}
	signals, dup, lost, problems := CrossShardSignals(acks, jobs)
	if signals != 2 || dup != 1 || lost != 1 || len(problems) != 2 {
		t.Fatalf("signals %d, duplicated %d, lost %d, problems %q; want 2, 1, 1 and two lines", signals, dup, lost, problems)
	}
}
