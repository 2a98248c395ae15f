package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// wfChain makes workflow id "chain" continue as new twice on a queue no
// worker serves (three runs, the last one Completed), and returns their
// ids, oldest first.
func wfChain(t *testing.T, e engine.Service) []engine.JobID {
	t.Helper()
	ctx := context.Background()
	res, err := e.Create(ctx, engine.CreateJob{WorkflowID: "chain", Type: "Counter", Queue: "chains"})
	if err != nil {
		t.Fatal(err)
	}
	ids := []engine.JobID{res.Job}
	for i := range 3 {
		got, err := e.Claim(ctx, engine.Claim{Queue: "chains", Owner: "w", Max: 1, LeaseMS: 3_600_000})
		if err != nil || len(got) != 1 {
			t.Fatalf("claim: %v, %v", got, err)
		}
		ref := got[0].Lease()
		if i == 2 {
			if _, err := e.Complete(ctx, engine.Complete{LeaseRef: ref, Result: []byte("3")}); err != nil {
				t.Fatal(err)
			}
			break
		}
		next, err := e.ContinueAsNew(ctx, engine.ContinueAsNew{LeaseRef: ref})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, next.Job)
	}
	return ids
}

// TestWorkflowListRunsOfAnID: -w ID lists every run of a workflow id,
// newest first, each continued run showing ContinuedAsNew and the run
// after it; describe links a run to the runs before and after it; Temporal's
// way (--query 'WorkflowId="chain"') lists the same.
func TestWorkflowListRunsOfAnID(t *testing.T) {
	w := newWFEnv(t, "")
	ids := wfChain(t, w.e)
	golden(t, "output/list_runs_of_id.json", normalizeTimes(w.ok("list", "-w", "chain", "-o", "json")))
	out := w.ok("list", "-w", "chain")
	wantContains(t, "list -w chain", out, "NEXT RUN", "ContinuedAsNew", "Completed",
		fmt.Sprintf("Continued as new → %d", ids[1]), fmt.Sprintf("Continued as new → %d", ids[2]))
	if strings.Index(out, fmt.Sprintf(" %d ", ids[2])) > strings.Index(out, fmt.Sprintf(" %d ", ids[0])) {
		t.Errorf("list -w chain is not newest first:\n%s", out)
	}
	if got := w.ok("list", "--query", `WorkflowId="chain"`); got != out {
		t.Errorf("--query 'WorkflowId=\"chain\"' lists\n%s\nand -w chain\n%s", got, out)
	}
	out = w.ok("describe", "-r", fmt.Sprint(ids[1]))
	wantContains(t, "describe of the middle run", out,
		fmt.Sprintf("Next run     Continued as new → run %d", ids[2]), fmt.Sprintf("Previous run run %d", ids[0]))
	var d wfJobDoc
	w.json(&d, "describe", "-r", fmt.Sprint(ids[1]))
	if d.ExecutionStatus != "ContinuedAsNew" || d.NextRunID != uint64(ids[2]) || d.PrevRunID != uint64(ids[0]) || d.NextRunReason != engine.ReasonContinuedAsNew {
		t.Errorf("describe -o json of the middle run: %+v", d)
	}
	var c wfCountOutput
	w.json(&c, "count", "-w", "chain")
	if c.Count != 3 || c.ByStatus["Completed"] != 3 {
		t.Errorf("count -w chain: %+v", c)
	}
	w.json(&c, "count", "--query", `WorkflowId = "chain" AND ExecutionStatus = "ContinuedAsNew"`)
	if c.Count != 2 {
		t.Errorf("count of the continued runs: %+v", c)
	}
}

// TestWorkflowListStatusRunningIsOpen: --status Running lists every open
// run, as Temporal's ExecutionStatus="Running" does (heddle's own Running,
// a run whose lease a worker holds, is HeddleStatus=Running); "open" is a
// status too; and Temporal's filter syntax is accepted.
func TestWorkflowListStatusRunningIsOpen(t *testing.T) {
	w := newWFEnv(t, "")
	ctx := context.Background()
	w.ok("start", "--type", "Greet", "--queue", wfTestQueue, "--id", "greet-1", "--input", `"ada"`, "--wait")
	for i := range 3 {
		w.ok("start", "--type", "Gate", "--queue", wfIdleQueue, "--id", fmt.Sprintf("idle-%d", i))
	}
	if _, err := w.e.Suspend(ctx, engine.Suspend{Target: engine.Target{WorkflowID: "idle-0"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.e.Create(ctx, engine.CreateJob{WorkflowID: "held", Type: "Gate", Queue: "held"}); err != nil {
		t.Fatal(err)
	}
	if got, err := w.e.Claim(ctx, engine.Claim{Queue: "held", Owner: "w", Max: 1, LeaseMS: 3_600_000}); err != nil || len(got) != 1 {
		t.Fatalf("claim: %v, %v", got, err)
	}
	ids := func(args ...string) string {
		var l wfListOutput
		w.json(&l, "list", args...)
		var s []string
		for _, d := range l.Workflows {
			s = append(s, d.WorkflowID)
		}
		return strings.Join(s, ",")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--status", "Running"}, "held,idle-2,idle-1,idle-0"},
		{[]string{"--status", "running"}, "held,idle-2,idle-1,idle-0"},
		{[]string{"--status", "open"}, "held,idle-2,idle-1,idle-0"},
		{[]string{"--status", "Closed"}, "greet-1"},
		{[]string{"--status", "Suspended"}, "idle-0"},
		{[]string{"--query", "HeddleStatus=Running"}, "held"},
		{[]string{"--query", `ExecutionStatus = "Running"`}, "held,idle-2,idle-1,idle-0"},
		{[]string{"--query", `WorkflowType="Gate"`}, "held,idle-2,idle-1,idle-0"},
		{[]string{"--query", `WorkflowType = "Gate" AND (TaskQueue = "held" OR WorkflowId = "idle-1")`}, "held,idle-1"},
		{[]string{"--query", `ExecutionStatus IN ("Completed", "Suspended") ORDER BY StartTime ASC`}, "greet-1,idle-0"},
		{[]string{"--status", "Running", "--order", "start_asc"}, "idle-0,idle-1,idle-2,held"},
		{[]string{"--order", "close_desc"}, "greet-1,held,idle-2,idle-1,idle-0"},
	} {
		if got := ids(tc.args...); got != tc.want {
			t.Errorf("list %v: %s, want %s", tc.args, got, tc.want)
		}
	}
	var c wfCountOutput
	w.json(&c, "count", "--status", "Running")
	if c.Count != 4 || c.ByStatus["Queued"] != 2 || c.ByStatus["Suspended"] != 1 || c.ByStatus["Running"] != 1 {
		t.Errorf("count --status Running: %+v", c)
	}
	out := w.ok("count", "--status", "Running")
	wantContains(t, "count --status Running", out, "Queued", "Suspended", "Total")

	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"--status", "Sleeping"}, 2, `--status "Sleeping" is not a status; want one of Running, Completed, ContinuedAsNew`},
		{[]string{"--query", `WorkflowTyp = "X"`}, 2, `--query "WorkflowTyp = \"X\"", column 1, at "WorkflowTyp": unknown field "WorkflowTyp"`},
		{[]string{"--query", `WorkflowType = "X" AND (`}, 2, `column 25, at the end: expected a comparison`},
		{[]string{"--order", "newest"}, 2, `--order "newest" is not an order`},
		{[]string{"--page-token", "garbage"}, 1, "the page token is not one List gave"},
		{[]string{"--cursor", "3", "--page-token", "x"}, 2, "give one"},
	} {
		code, _, errs := w.run("list", tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.stderr) {
			t.Errorf("list %v: exit %d, stderr %q; want %d with %q", tc.args, code, errs, tc.code, tc.stderr)
		}
	}
	if code, _, errs := w.run("count", "--query", "status=Done"); code != 2 || !strings.Contains(errs, `"Done" is not a status`) {
		t.Errorf("count --query status=Done: exit %d, %q", code, errs)
	}
}
