package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// waitFor waits until the run of workflow id satisfies ok, and returns it.
func (w *wfEnv) waitFor(id string, ok func(*engine.Job) bool) *engine.Job {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		changed := w.e.Committed() // before the read, so no commit is missed
		j, err := w.e.Describe(ctx, engine.Target{WorkflowID: id})
		if err != nil {
			w.t.Fatal(err)
		}
		if ok(j) {
			return j
		}
		select {
		case <-changed:
		case <-ctx.Done():
			w.t.Fatalf("%s never got there (it is %s)", id, j.Status)
		}
	}
}

// heddle workflow reset: a Gate run waiting for its signal is reset to its
// last turn, the old run ends Terminated and links to the new one, both
// show the links in describe and history, and the new run gets the signal
// and completes; the point's flags are checked, and a point that is no
// turn boundary is refused with the valid ones named.
func TestWorkflowReset(t *testing.T) {
	w := newWFEnv(t, "")
	var s wfStartOutput
	w.json(&s, "start", "--type", "Gate", "--queue", wfTestQueue, "--id", "gate-r")
	w.waitFor("gate-r", func(j *engine.Job) bool { return j.Status == engine.StatusWaiting })

	out := w.ok("reset", "gate-r", "-t", "LastWorkflowTask", "--reason", "bad deploy")
	wantContains(t, "reset", out, "Reset workflow gate-r: run ", fmt.Sprintf("of run %d", s.JobID),
		fmt.Sprintf("Terminated run %d, which the new run replaces.", s.JobID))
	cur := w.waitFor("gate-r", func(j *engine.Job) bool { return j.ResetBaseRunID == engine.JobID(s.JobID) })
	var old wfJobDoc
	w.json(&old, "describe", "-r", fmt.Sprint(s.JobID))
	if old.Status != "Terminated" || old.ResetNewRunID != uint64(cur.ID) || old.CloseReason != engine.ReasonReset {
		t.Errorf("describe of the reset run: %+v", old)
	}
	out = w.ok("describe", "-r", fmt.Sprint(s.JobID))
	wantContains(t, "describe of the reset run", out, fmt.Sprintf("Reset to     run %d", cur.ID))
	out = w.ok("describe", "gate-r")
	wantContains(t, "describe of the new run", out, fmt.Sprintf("Reset from   run %d at event %d", s.JobID, cur.ResetEventID))
	out = w.ok("history", "gate-r")
	wantContains(t, "history of the new run", out, "workflow_reset", "reason bad deploy", fmt.Sprintf("reset from run %d at event", s.JobID))
	out = w.ok("history", "-r", fmt.Sprint(s.JobID))
	wantContains(t, "history of the reset run", out, "job_terminated", fmt.Sprintf("continues as run %d", cur.ID))

	w.ok("signal", "gate-r", "go", "--input", `"now"`)
	if j := w.closed("gate-r"); j.ID != cur.ID || j.Status != engine.StatusCompleted {
		t.Fatalf("the new run ended %+v", j)
	}

	// -o json, by event id, of the closed run: it stays Completed.
	var r wfResetOutput
	w.json(&r, "reset", "-w", "gate-r", "-e", "1", "--reason", "again", "--reapply-exclude", "Signal,Update")
	if r.WorkflowID != "gate-r" || r.BaseJobID != uint64(cur.ID) || r.EventID != 1 || r.CopiedEvents != 1 || len(r.Terminated) != 0 || r.Reapplied != 0 {
		t.Errorf("reset --json = %+v", r)
	}

	for _, bad := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"gate-r", "--reason", "x"}, 2, "give the reset point: -t/--type (FirstWorkflowTask, LastWorkflowTask) or -e/--event-id"},
		{[]string{"gate-r", "-t", "FirstWorkflowTask", "-e", "1", "--reason", "x"}, 2, "not both"},
		{[]string{"gate-r", "-t", "LastContinuedAsNew", "--reason", "x"}, 2, "heddle has no such reset type"},
		{[]string{"gate-r", "-t", "Sometime", "--reason", "x"}, 2, `--type "Sometime": want FirstWorkflowTask or LastWorkflowTask`},
		{[]string{"gate-r", "-t", "FirstWorkflowTask"}, 2, "--reason is required"},
		{[]string{"gate-r", "-e", "1", "--reason", "x", "--reapply-type", "None", "--reapply-exclude", "Signal"}, 2, "cannot be used with"},
		{[]string{"gate-r", "-e", "1", "--reason", "x", "--reapply-exclude", "Nexus"}, 2, `--reapply-exclude "Nexus"`},
		{[]string{"gate-r", "-e", "2", "--reason", "x"}, 1, "is not a turn boundary"},
	} {
		code, _, errs := w.run("reset", bad.args...)
		if code != bad.code || !strings.Contains(errs, bad.want) {
			t.Errorf("reset %v: exit %d, stderr %q; want exit %d and %q", bad.args, code, errs, bad.code, bad.want)
		}
	}
}

// heddle workflow reset against a three-node cluster, through a follower:
// the reset is applied once and every node holds the linked runs.
func TestWorkflowResetOnCluster(t *testing.T) {
	nodes, addrs := startTestCluster(t)
	follower := nodes[1].api.addr()
	out, errOut, code := runCmd(t, "workflow", "start", "--addr", follower, "--type", "Gate", "--queue", "nobody", "--id", "c-r", "--json")
	if code != 0 {
		t.Fatalf("start: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runCmd(t, "workflow", "reset", "--addr", addrs, "c-r", "-t", "FirstWorkflowTask", "--reason", "cluster", "--json")
	if code != 0 {
		t.Fatalf("reset: exit %d\n%s%s", code, out, errOut)
	}
	var r wfResetOutput
	wfDecodeOne(t, out, &r)
	if r.EventID != 1 || len(r.Terminated) != 1 || r.Terminated[0] != r.BaseJobID {
		t.Fatalf("reset --json = %+v", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, n := range nodes {
		for {
			j, err := n.node.Engine().Describe(engine.WithStaleRead(ctx), engine.Target{WorkflowID: "c-r"})
			if err == nil && uint64(j.ID) == r.JobID {
				if j.ResetBaseRunID != engine.JobID(r.BaseJobID) || j.Status != engine.StatusQueued {
					t.Fatalf("%s: the new run %+v", n.node.ID(), j)
				}
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s never applied the reset: %+v, %v", n.node.ID(), j, err)
			case <-time.After(10 * time.Millisecond):
			}
		}
		b, err := n.node.Engine().Describe(engine.WithStaleRead(ctx), engine.Target{Job: engine.JobID(r.BaseJobID)})
		if err != nil || b.Status != engine.StatusTerminated || uint64(b.ResetNewRunID) != r.JobID {
			t.Fatalf("%s: the base run %+v, %v", n.node.ID(), b, err)
		}
	}
}
