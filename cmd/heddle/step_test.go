package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// stepAsk needs a person until answered, on a unit of a "gpu" resource.
func stepAsk(ctx context.Context) (string, error) {
	info := activity.GetInfo(ctx)
	if info.Answer == nil {
		return "", activity.NewNeedsUserError(`{"prompt":"go ahead?"}`)
	}
	return fmt.Sprintf("%s said %s on %s", info.WorkflowID, info.Answer, info.Resource), nil
}

func stepAskFlow(ctx workflow.Context) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{RequiredCapabilities: []string{"gpu"}})
	var s string
	err := workflow.ExecuteActivity(ctx, stepAsk).Get(ctx, &s)
	return s, err
}

// cli runs "heddle GROUP VERB --addr ADDR ARGS...".
func (w *wfEnv) cli(group, verb string, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(append([]string{group, verb, "--addr", w.addr}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func (w *wfEnv) cliOK(group, verb string, args ...string) string {
	w.t.Helper()
	code, out, errs := w.cli(group, verb, args...)
	if code != 0 {
		w.t.Fatalf("%s %s %v: exit %d\nstdout:\n%s\nstderr:\n%s", group, verb, args, code, out, errs)
	}
	return out
}

// The resource pool and a run's steps through the CLI: add, list, drain
// and a refused remove; a step that asks a person shown by step list and
// describe, answered by step answer.
func TestStepAndResourceCommands(t *testing.T) {
	w := newWFEnv(t, "")
	wk := worker.New(client.New(w.e), "steps", worker.Options{Identity: "step-worker"})
	wk.RegisterWorkflowWithName(stepAskFlow, "Ask")
	wk.RegisterActivityWithName(stepAsk, "stepAsk")
	if err := wk.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = wk.Shutdown(context.Background()) })

	var added struct {
		Resource resourceDoc `json:"resource"`
		Granted  int         `json:"granted"`
	}
	wfDecodeOne(t, w.cliOK("resource", "add", "gpu-1", "-c", "gpu,cuda", "-l", "zone=eu", "--capacity", "2", "-o", "json"), &added)
	if r := added.Resource; r.ID != "gpu-1" || r.Capacity != 2 || r.Free != 2 || r.Labels["zone"] != "eu" || strings.Join(r.Capabilities, ",") != "cuda,gpu" {
		t.Fatalf("added %+v", r)
	}
	if code, _, errs := w.cli("resource", "add", "gpu-1"); code != 1 || !strings.Contains(errs, "resource exists") {
		t.Fatalf("adding twice: exit %d, %q", code, errs)
	}
	if code, _, errs := w.cli("resource", "add", "x", "--capacity", "0"); code != 2 || !strings.Contains(errs, "--capacity 0 must be at least 1") {
		t.Fatalf("capacity 0: exit %d, %q", code, errs)
	}
	if code, _, errs := w.cli("resource", "add", "x", "-l", "novalue"); code != 2 || !strings.Contains(errs, `"novalue" is not key=value`) {
		t.Fatalf("a bad label: exit %d, %q", code, errs)
	}

	w.ok("start", "--type", "Ask", "-t", "steps", "-w", "ask-1")
	var list stepListDoc
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		list = stepListDoc{}
		wfDecodeOne(t, w.cliOK("step", "list", "ask-1", "-o", "json"), &list)
		if len(list.Steps) == 1 && list.Steps[0].State == "NEEDS_USER" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the step never asked: %+v", list)
		}
	}
	s := list.Steps[0]
	if s.Activity != "stepAsk" || s.Resource != "gpu-1" || wfCompactString(s.Question) != `{"prompt":"go ahead?"}` || s.Attempt != 1 || !s.Explicit {
		t.Fatalf("step %+v", s)
	}
	table := w.cliOK("step", "list", "ask-1")
	wantContains(t, "step list", table, "STEP  ACTIVITY  STATE", "NEEDS_USER", "gpu-1", `Step 1 asks: {"prompt":"go ahead?"}`)
	wantContains(t, "describe", w.ok("describe", "ask-1"), "Step 1", "stepAsk NEEDS_USER, attempt 1 on gpu-1, asks")
	wantContains(t, "resource list", w.cliOK("resource", "list"), "gpu-1", "cuda,gpu", "zone=eu", "1/1#1")

	w.cliOK("resource", "drain", "gpu-1")
	if code, _, errs := w.cli("resource", "remove", "gpu-1"); code != 1 || !strings.Contains(errs, "holds 1 step leases") {
		t.Fatalf("removing a busy resource: exit %d, %q", code, errs)
	}
	if code, _, errs := w.cli("step", "answer", "ask-1", "9", "x"); code != 1 || !strings.Contains(errs, "not in a state for this") {
		t.Fatalf("answering a step that asks nothing: exit %d, %q", code, errs)
	}
	var ans stepAnswerDoc
	wfDecodeOne(t, w.cliOK("step", "answer", "ask-1", "1", "--answer", "yes", "-o", "json"), &ans)
	if ans.State != "RUNNING" || ans.Attempt != 2 {
		t.Fatalf("answer %+v", ans)
	}
	j := w.closed("ask-1")
	if j.Status != engine.StatusCompleted {
		t.Fatalf("ask-1 %s", j.Status)
	}
	wantContains(t, "describe", w.ok("describe", "ask-1"), `"ask-1 said yes on gpu-1"`)
	wantContains(t, "step list", w.cliOK("step", "list", "ask-1", "-o", "jsonl"), `"state":"SUCCEEDED"`, `"attempt":2`)
	var rl struct {
		Resources []resourceDoc `json:"resources"`
	}
	wfDecodeOne(t, w.cliOK("resource", "list", "--json"), &rl)
	if len(rl.Resources) != 1 || !rl.Resources[0].Drained || len(rl.Resources[0].Holders) != 0 {
		t.Fatalf("resources %+v", rl.Resources)
	}
	w.cliOK("resource", "remove", "gpu-1")
	wantContains(t, "resource list", w.cliOK("resource", "list"), "No resources.")
}
