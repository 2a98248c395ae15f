package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// batchCLI runs "heddle batch VERB --addr ADDR ARGS...".
func (w *wfEnv) batchCLI(verb string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(append([]string{"batch", verb, "--addr", w.addr}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func (w *wfEnv) batchOK(verb string, args ...string) string {
	w.t.Helper()
	code, out, errs := w.batchCLI(verb, args...)
	if code != 0 {
		w.t.Fatalf("batch %s %v: exit %d\nstdout:\n%s\nstderr:\n%s", verb, args, code, out, errs)
	}
	return out
}

// waitBatchDone waits on commits until batch id ended and returns it.
func (w *wfEnv) waitBatchDone(id string) *engine.Batch {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		changed := w.e.Committed()
		b, err := w.e.DescribeBatch(ctx, id)
		if err != nil {
			w.t.Fatal(err)
		}
		if b.State != engine.BatchRunning {
			return b
		}
		select {
		case <-changed:
		case <-ctx.Done():
			w.t.Fatalf("batch %s still running: %+v", id, b)
		}
	}
}

// gates starts n Gate runs named prefix-i and waits until each waits.
func (w *wfEnv) gates(prefix string, n int) {
	w.t.Helper()
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		w.ok("start", "--type", "Gate", "--queue", wfTestQueue, "--id", id)
		w.waitFor(id, func(j *engine.Job) bool { return j.Status == engine.StatusWaiting })
	}
}

// heddle workflow signal|cancel|terminate|reset --query, and heddle batch
// list|describe|terminate: without --yes on a non-terminal input the
// command says how many runs match and starts nothing; with --yes it starts
// a batch that acts on each matching run once, which batch describe shows.
func TestWorkflowBatchByQuery(t *testing.T) {
	notTerminal(t)
	w := newWFEnv(t, "")
	w.gates("sig", 3)
	w.gates("other", 1)
	q := `WorkflowId STARTS_WITH "sig-"`

	code, _, errs := w.run("terminate", "--query", q)
	if code != 2 || !strings.Contains(errs, `3 runs match 'WorkflowId STARTS_WITH "sig-"': add --yes to terminate them`) {
		t.Fatalf("terminate --query without --yes: exit %d, stderr %q", code, errs)
	}
	if page, err := w.e.ListBatches(context.Background(), engine.BatchListQuery{}); err != nil || len(page.Batches) != 0 {
		t.Fatalf("a batch was started without --yes: %+v %v", page, err)
	}
	for _, bad := range []struct {
		verb string
		args []string
		want string
	}{
		{"terminate", []string{"sig-0", "--query", q, "--yes"}, "name no run (ID, -w or -r) with it"},
		{"signal", []string{"-w", "sig-0", "--query", q, "go"}, "name no run (-w or -r) with it"},
		{"signal", []string{"--query", q, "--yes"}, "give the signal's NAME as the one argument"},
		{"reset", []string{"--query", q, "-e", "3", "--reason", "x", "--yes"}, "--event-id names a point of one run"},
		{"cancel", []string{"--query", q, "--yes", "--rps", "-1"}, "--rps -1 must not be negative"},
		{"cancel", []string{"--query", "WorkflowType = ", "--yes"}, "query"},
	} {
		code, _, errs := w.run(bad.verb, bad.args...)
		if code == 0 || !strings.Contains(errs, bad.want) {
			t.Errorf("%s %v: exit %d, stderr %q; want %q", bad.verb, bad.args, code, errs, bad.want)
		}
	}

	var sb wfBatchOutput
	w.json(&sb, "signal", "--query", q, "go", "--input", `"batch"`, "--yes")
	if sb.Operation != "signal" || sb.Matched != 3 || sb.BatchID == "" {
		t.Fatalf("signal --query --json = %+v", sb)
	}
	if b := w.waitBatchDone(sb.BatchID); b.State != engine.BatchCompleted || b.Done != 3 {
		t.Fatalf("signal batch ended %+v", b)
	}
	for i := range 3 {
		if j := w.closed(fmt.Sprintf("sig-%d", i)); j.Status != engine.StatusCompleted {
			t.Fatalf("sig-%d after the signal batch: %s", i, j.Status)
		}
	}
	if j, err := w.e.Describe(context.Background(), engine.Target{WorkflowID: "other-0"}); err != nil || j.Status != engine.StatusWaiting {
		t.Fatalf("a run the query does not match was touched: %+v %v", j, err)
	}

	w.gates("can", 2)
	out := w.ok("cancel", "--query", `WorkflowId STARTS_WITH "can-"`, "--reason", "cleanup", "--yes")
	wantContains(t, "cancel --query", out, "Started batch ", "to cancel the 2 runs matching 'WorkflowId STARTS_WITH \"can-\"'",
		"Follow it with: heddle batch describe --job-id ")
	for i := range 2 {
		if j := w.closed(fmt.Sprintf("can-%d", i)); j.Status != engine.StatusCancelled {
			t.Fatalf("can-%d after the cancel batch: %s", i, j.Status)
		}
	}

	w.gates("pau", 2)
	var pb wfBatchOutput
	w.json(&pb, "pause", "--query", `WorkflowId STARTS_WITH "pau-"`, "--reason", "incident", "--yes")
	if b := w.waitBatchDone(pb.BatchID); b.Done != 2 || b.Operation != engine.BatchPause {
		t.Fatalf("pause batch ended %+v", b)
	}
	for i := range 2 {
		if j := w.waitFor(fmt.Sprintf("pau-%d", i), func(j *engine.Job) bool { return j.Pause != nil }); j.Pause.Reason != "incident" {
			t.Fatalf("pau-%d's pause: %+v", i, j.Pause)
		}
	}
	code, _, errs = w.run("unpause", "--query", "paused=true", "--request-id", "x", "--yes")
	if code != 2 || !strings.Contains(errs, "--request-id names one run's command") {
		t.Fatalf("unpause --query --request-id: %d %q", code, errs)
	}
	var ub wfBatchOutput
	w.json(&ub, "unpause", "--query", "paused=true", "--yes")
	if b := w.waitBatchDone(ub.BatchID); b.Done != 2 || b.Operation != engine.BatchUnpause {
		t.Fatalf("unpause batch ended %+v", b)
	}
	for i := range 2 {
		w.waitFor(fmt.Sprintf("pau-%d", i), func(j *engine.Job) bool { return j.Pause == nil })
	}

	w.gates("res", 2)
	var rb wfBatchOutput
	w.json(&rb, "reset", "--query", `WorkflowId STARTS_WITH "res-"`, "-t", "FirstWorkflowTask", "--reason", "redo", "--yes")
	if b := w.waitBatchDone(rb.BatchID); b.Done != 2 || b.ResetType != engine.ResetFirstWorkflowTask {
		t.Fatalf("reset batch ended %+v", b)
	}
	for i := range 2 {
		j := w.waitFor(fmt.Sprintf("res-%d", i), func(j *engine.Job) bool { return j.ResetBaseRunID != 0 })
		if j.Status.Terminal() {
			t.Fatalf("res-%d's new run is %s", i, j.Status)
		}
	}

	var tb wfBatchOutput
	w.json(&tb, "terminate", "--query", `WorkflowId STARTS_WITH "res-" AND ExecutionStatus = "Running"`, "--reason", "done", "--yes")
	b := w.waitBatchDone(tb.BatchID)
	if b.Done != 2 || b.Failed != 0 {
		t.Fatalf("terminate batch ended %+v", b)
	}

	// batch describe and list, for people and as JSON.
	out = w.batchOK("describe", "--job-id", tb.BatchID)
	wantContains(t, "batch describe", out, "Job ID", tb.BatchID, "terminate", "Completed", "2 of 2 done, 0 failed", "Reason     done")
	var d batchDoc
	code, out, errs = w.batchCLI("describe", tb.BatchID, "-o", "json")
	if code != 0 {
		t.Fatalf("batch describe -o json: %d %s", code, errs)
	}
	wfDecodeOne(t, out, &d)
	if d.JobID != tb.BatchID || d.State != "Completed" || d.Total != 2 || d.Complete != 2 || d.Operation != "terminate" {
		t.Fatalf("batch describe -o json = %+v", d)
	}
	out = w.batchOK("list")
	wantContains(t, "batch list", out, "JOB ID", sb.BatchID, rb.BatchID, tb.BatchID, "3/3", "signal", "reset")

	// batch terminate stops a running batch: one run a second over ten.
	w.gates("slow", 10)
	var slow wfBatchOutput
	w.json(&slow, "terminate", "--query", `WorkflowId STARTS_WITH "slow-"`, "--rps", "1", "--yes")
	code, _, errs = w.batchCLI("terminate", slow.BatchID)
	if code != 2 || !strings.Contains(errs, "--reason is required") {
		t.Fatalf("batch terminate without --reason: %d %q", code, errs)
	}
	out = w.batchOK("terminate", "--job-id", slow.BatchID, "--reason", "too slow")
	wantContains(t, "batch terminate", out, "Terminated batch "+slow.BatchID)
	sl := w.waitBatchDone(slow.BatchID)
	if sl.State != engine.BatchTerminated || sl.Done >= 10 || sl.StopReason != "too slow" {
		t.Fatalf("stopped batch %+v", sl)
	}
	code, _, errs = w.batchCLI("terminate", "--job-id", slow.BatchID, "--reason", "again")
	if code != 1 || !strings.Contains(errs, "which is Terminated") {
		t.Fatalf("terminating a stopped batch: %d %q", code, errs)
	}
	code, _, errs = w.batchCLI("describe", "nope")
	if code != 1 || !strings.Contains(errs, "unknown batch") {
		t.Fatalf("describing an unknown batch: %d %q", code, errs)
	}
}

// The confirmation reads the answer from the input it is given.
func TestWorkflowBatchConfirm(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{{"y\n", true}, {"YES\n", true}, {"\n", false}, {"n\n", false}, {"", false}} {
		var errb bytes.Buffer
		q := &wfQueryFlags{query: "type=x", stdin: strings.NewReader(tc.in)}
		ok, err := q.confirm(&wfCall{err: &errb}, 4, engine.BatchTerminate)
		if err != nil || ok != tc.want {
			t.Errorf("answer %q: %v %v, want %v", tc.in, ok, err, tc.want)
		}
		if !strings.Contains(errb.String(), "4 runs match 'type=x'. Start a batch to terminate them? [y/N]") {
			t.Errorf("answer %q: the question was %q", tc.in, errb.String())
		}
	}
}

// notTerminal makes the commands of the test see an input that is no
// terminal, wherever the test runs.
func notTerminal(t *testing.T) {
	t.Helper()
	prev := confirmInput
	confirmInput = func() io.Reader { return nil }
	t.Cleanup(func() { confirmInput = prev })
}

// heddle workflow terminate --query against a three-node cluster, through
// a follower: the leader's runner terminates each matching run once, every
// node holds the same batch, and heddle batch describe reads it anywhere.
func TestWorkflowBatchOnCluster(t *testing.T) {
	notTerminal(t)
	nodes, addrs := startTestCluster(t)
	follower := nodes[1].api.addr()
	for i := range 3 {
		out, errOut, code := runCmd(t, "workflow", "start", "--addr", follower, "--type", "Gate", "--queue", "nobody", "--id", fmt.Sprintf("cb-%d", i))
		if code != 0 {
			t.Fatalf("start: exit %d\n%s%s", code, out, errOut)
		}
	}
	out, errOut, code := runCmd(t, "workflow", "terminate", "--addr", follower, "--query", "type=Gate", "--reason", "cluster", "--yes", "--json")
	if code != 0 {
		t.Fatalf("terminate --query: exit %d\n%s%s", code, out, errOut)
	}
	var sb wfBatchOutput
	wfDecodeOne(t, out, &sb)
	if sb.Matched != 3 {
		t.Fatalf("terminate --query --json = %+v", sb)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, n := range nodes {
		for {
			b, err := n.node.Engine().DescribeBatch(engine.WithStaleRead(ctx), sb.BatchID)
			if err == nil && b.State == engine.BatchCompleted {
				if b.Done != 3 || b.Failed != 0 {
					t.Fatalf("%s: batch %+v", n.node.ID(), b)
				}
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s never completed the batch: %+v, %v", n.node.ID(), b, err)
			case <-time.After(10 * time.Millisecond):
			}
		}
		for i := range 3 {
			j, err := n.node.Engine().Describe(engine.WithStaleRead(ctx), engine.Target{WorkflowID: fmt.Sprintf("cb-%d", i)})
			if err != nil || j.Status != engine.StatusTerminated {
				t.Fatalf("%s: cb-%d is %+v, %v", n.node.ID(), i, j, err)
			}
		}
	}
	out, errOut, code = runCmd(t, "batch", "describe", "--addr", addrs, "--job-id", sb.BatchID)
	if code != 0 || !strings.Contains(out, "3 of 3 done, 0 failed") {
		t.Fatalf("batch describe: exit %d\n%s%s", code, out, errOut)
	}
}
