package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// activity runs "heddle activity VERB --addr ADDR ARGS...".
func (w *wfEnv) activity(verb string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(append([]string{"activity", verb, "--addr", w.addr}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func (w *wfEnv) activityOK(verb string, args ...string) string {
	w.t.Helper()
	code, out, errs := w.activity(verb, args...)
	if code != 0 {
		w.t.Fatalf("activity %s %v: exit %d\nstdout:\n%s\nstderr:\n%s", verb, args, code, out, errs)
	}
	return out
}

// waitStatus waits, on the engine's commits, until the run of id is in
// status s.
func (w *wfEnv) waitStatus(id string, s engine.Status) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		changed := w.e.Committed()
		j, err := w.e.Describe(ctx, engine.Target{WorkflowID: id})
		if err == nil && j.Status == s {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			w.t.Fatalf("%s never became %s (last %+v, %v)", id, s, j, err)
		}
	}
}

// heddle workflow pause and unpause: the run is held, what arrives is
// recorded, describe and list show it, and the unpause lets it finish.
func TestWorkflowPauseAndUnpause(t *testing.T) {
	w := newWFEnv(t, "")
	w.ok("start", "--type", "Gate", "--queue", wfTestQueue, "--id", "gate-p")
	w.waitStatus("gate-p", engine.StatusWaiting)
	out := w.ok("pause", "gate-p", "--reason", "checking the invoice", "--request-id", "p-1")
	wantContains(t, "pause", out, "Paused workflow gate-p (job ", "It is Waiting.")
	var again wfPauseOutput
	w.json(&again, "pause", "gate-p", "--request-id", "p-2")
	if again.WorkflowID != "gate-p" || !again.Paused || again.Seq != 0 || again.Status != "Waiting" {
		t.Errorf("a second pause --json = %+v, want nothing written", again)
	}
	wantContains(t, "a second pause", w.ok("pause", "gate-p"), "was paused already: nothing changed")

	// The signal is recorded and ends the wait, but the run is held.
	w.ok("signal", "gate-p", "go", "--input", `"approved"`)
	w.waitStatus("gate-p", engine.StatusQueued)
	var d wfJobDoc
	w.json(&d, "describe", "gate-p")
	if d.Paused == nil || d.Paused.Reason != "checking the invoice" || d.Paused.At == "" || d.Status != "Queued" {
		t.Errorf("describe --json of the paused run: %+v (paused %+v)", d, d.Paused)
	}
	wantContains(t, "describe", w.ok("describe", "gate-p"), "Paused       since ", ": checking the invoice (heddle workflow unpause)")
	wantContains(t, "list", w.ok("list", "--query", "paused=true"), "gate-p", "Queued (paused)")
	if out := w.ok("list", "--query", "paused=true id=nothing*"); !strings.Contains(out, "No workflows.") {
		t.Errorf("list of no paused runs:\n%s", out)
	}

	var un wfPauseOutput
	w.json(&un, "unpause", "-w", "gate-p", "--reason", "invoice fine")
	if un.Paused || un.Seq == 0 {
		t.Errorf("unpause --json = %+v", un)
	}
	if j := w.closed("gate-p"); j.Status != engine.StatusCompleted {
		t.Errorf("gate-p ended %s after its unpause", j.Status)
	}
	wantContains(t, "unpause of a run that ended", func() string { _, _, e := w.run("unpause", "gate-p"); return e }(), "closed")
}

// heddle activity pause, unpause, reset and update-options on an activity
// that failed a try under its run's lease, with Temporal's flags; and the
// mistakes an operator makes.
func TestActivityCommands(t *testing.T) {
	w := newWFEnv(t, "")
	ctx := context.Background()
	cr, err := w.e.Create(ctx, engine.CreateJob{WorkflowID: "charge-1", Type: "Gate", Queue: wfIdleQueue})
	if err != nil {
		t.Fatal(err)
	}
	js, err := w.e.Claim(ctx, engine.Claim{Queue: wfIdleQueue, Owner: "test", Max: 1, LeaseMS: 60_000})
	if err != nil || len(js) != 1 {
		t.Fatalf("claim: %v, %v", js, err)
	}
	if _, err := w.e.Append(ctx, engine.AppendEvents{LeaseRef: js[0].Lease(),
		Events: []engine.NewEvent{{Type: engine.EventActivityAttemptFailed, Step: "1", Name: "Charge", StepAttempt: 1}}}); err != nil {
		t.Fatal(err)
	}

	out := w.activityOK("pause", "-w", "charge-1", "--activity-type", "Charge", "--reason", "issuer down")
	wantContains(t, "activity pause", out, fmt.Sprintf("Paused activity 1 of workflow charge-1 (job %d), through event ", cr.Job))
	steps := runCmdOK(t, "step", "list", "charge-1", "--addr", w.addr)
	wantContains(t, "step list", steps, "RETRYING (paused)")
	var sd stepListDoc
	wfDecodeOne(t, runCmdOK(t, "step", "list", "charge-1", "--addr", w.addr, "--json"), &sd)
	if len(sd.Steps) != 1 || sd.Steps[0].Paused == nil || sd.Steps[0].Paused.Reason != "issuer down" || !sd.Steps[0].Explicit {
		t.Errorf("step list --json: %+v", sd)
	}

	var doc activityOutput
	wfDecodeOne(t, w.activityOK("update-options", "charge-1", "-a", "1", "--start-to-close-timeout", "5m",
		"--retry-maximum-attempts", "4", "--retry-initial-interval", "2s", "--json"), &doc)
	if doc.WorkflowID != "charge-1" || len(doc.Activities) != 1 || doc.Activities[0] != "1" || doc.Seq == 0 {
		t.Errorf("update-options --json = %+v", doc)
	}
	wantContains(t, "reset --keep-paused", w.activityOK("reset", "-w", "charge-1", "--match-all", "--keep-paused"), "Reset activity 1")
	wfDecodeOne(t, runCmdOK(t, "step", "list", "charge-1", "--addr", w.addr, "--json"), &sd)
	s := sd.Steps[0]
	if s.Paused == nil || s.AttemptBase != 1 || s.Options == nil || s.Options.StartToCloseTimeoutMS != 300_000 ||
		s.Options.RetryPolicy == nil || s.Options.RetryPolicy.MaximumAttempts != 4 || s.Options.RetryPolicy.InitialIntervalMS != 2000 {
		t.Errorf("the step after update-options and reset --keep-paused: %+v (options %+v)", s, s.Options)
	}
	wantContains(t, "unpause", w.activityOK("unpause", "charge-1", "--match-all"), "Unpaused activity 1")
	wantContains(t, "unpause again", w.activityOK("unpause", "charge-1", "-a", "1"), "activity 1 already unpaused; nothing changed")
	wantContains(t, "restore", w.activityOK("update-options", "charge-1", "-a", "1", "--restore-original-options"), "Updated the options of activity 1")

	for _, tc := range []struct {
		verb string
		args []string
		code int
		want string
	}{
		{"pause", []string{"charge-1"}, 2, "name the activities with one of -a/--activity-id, --activity-type and --match-all"},
		{"pause", []string{"charge-1", "-a", "1", "--activity-type", "Charge"}, 2, "name the activities with one of"},
		{"pause", []string{"charge-1", "--match-all"}, 2, "unknown flag: --match-all"},
		{"pause", []string{"charge-1", "-a", "9"}, 1, `has no pending activity "9"`},
		{"pause", []string{"nobody", "-a", "1"}, 1, "nobody"},
		{"update-options", []string{"charge-1", "-a", "1"}, 2, "give an option to change"},
		{"update-options", []string{"charge-1", "-a", "1", "--restore-original-options", "--heartbeat-timeout", "1s"}, 2, "give no other option with it"},
		{"update-options", []string{"charge-1", "-a", "1", "--retry-backoff-coefficient", "0.5"}, 2, "is below 1"},
	} {
		code, _, errs := w.activity(tc.verb, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("activity %s %v: exit %d, stderr %q; want exit %d and %q", tc.verb, tc.args, code, errs, tc.code, tc.want)
		}
	}
}

// runCmdOK runs heddle with args, which must succeed, and returns stdout.
func runCmdOK(t *testing.T, args ...string) string {
	t.Helper()
	out, errs, code := runCmd(t, args...)
	if code != 0 {
		t.Fatalf("heddle %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errs)
	}
	return out
}

// The same commands against a three-node cluster: the pause is the
// cluster's, so it holds across a transfer of the leadership, and every
// node's answer shows it.
func TestPauseCommandsOnACluster(t *testing.T) {
	nodes, addrs := startTestCluster(t)
	runCmdOK(t, "workflow", "start", "--addr", addrs, "--type", "Gate", "--queue", "nobody-serves", "--id", "held-1")
	wantContains(t, "pause", runCmdOK(t, "workflow", "pause", "held-1", "--addr", addrs, "--reason", "audit"), "Paused workflow held-1")
	if _, errOut, code := runCmd(t, "cluster", "transfer-leader", "--addr", addrs); code != 0 {
		t.Fatalf("transfer-leader: exit %d: %s", code, errOut)
	}
	for _, n := range nodes {
		var d wfJobDoc
		wfDecodeOne(t, runCmdOK(t, "workflow", "describe", "held-1", "--addr", n.api.addr(), "--json"), &d)
		if d.Paused == nil || d.Paused.Reason != "audit" {
			t.Errorf("describe through %s after the transfer: %+v", n.node.ID(), d)
		}
	}
	wantContains(t, "list", runCmdOK(t, "workflow", "list", "--addr", addrs, "--query", "paused=true"), "held-1")
	wantContains(t, "unpause", runCmdOK(t, "workflow", "unpause", "held-1", "--addr", addrs), "Unpaused workflow held-1")
	var d wfJobDoc
	wfDecodeOne(t, runCmdOK(t, "workflow", "describe", "held-1", "--addr", addrs, "--json"), &d)
	if d.Paused != nil {
		t.Errorf("describe after the unpause: %+v", d)
	}
}
