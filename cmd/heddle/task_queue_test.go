package main

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
)

// tqRun runs "heddle task-queue ARGS... --addr ADDR".
func (w *wfEnv) tqRun(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(append(append([]string{"task-queue"}, args...), "--addr", w.addr), &out, &errb)
	return code, out.String(), errb.String()
}

func (w *wfEnv) tqOK(args ...string) string {
	w.t.Helper()
	code, out, errs := w.tqRun(args...)
	if code != 0 {
		w.t.Fatalf("task-queue %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errs)
	}
	return out
}

// What depends on the moment in task-queue's JSON: the rates and ages.
var tqMoment = regexp.MustCompile(`"(tasks_add_rate|tasks_dispatch_rate|dispatch_rate|approximate_backlog_age_ms)": [0-9.e+-]+`)

func normalizeTQ(s string) string {
	return tqMoment.ReplaceAllString(normalizeTimes(s), `"$1": <n>`)
}

// The JSON documents of task-queue describe and list, pinned; the text
// forms name the worker, the backlog and the run that waits on a queue
// nobody polls, and workflow describe says why the run waits.
func TestTaskQueueCommands(t *testing.T) {
	w := wfGoldenEnv(t)
	golden(t, "output/task_queue_describe.json", normalizeTQ(w.tqOK("describe", "--task-queue", wfTestQueue, "-o", "json")))
	golden(t, "output/task_queue_list.json", normalizeTQ(w.tqOK("list", "--json")))
	var doc tqDoc
	wfDecodeOne(t, w.tqOK("describe", "-t", wfTestQueue, "--task-queue-type", "activity", "--json"), &doc)
	// The test worker runs one activity (Charge, of the parity tests).
	if len(doc.Pollers) != 1 || !slices.Equal(doc.Pollers[0].ActivityTypes, []string{"Charge"}) {
		t.Errorf("the activity pollers of the test worker: %+v", doc.Pollers)
	}

	out := w.tqOK("describe", "-t", wfTestQueue)
	wantContains(t, "task-queue describe", out, "Task queue   wfq\n", "Backlog      0 ready\n", "Last poll    ",
		"Pollers:\nIDENTITY    LAST ACCESS  POLLING  BUILD  WORKFLOW TYPES                   ACTIVITY TYPES  DISPATCH/S  NODES\n",
		"worker-wfq  just now     yes      -      Counter,Flaky,Gate,Greet,Refuse  Charge  ")
	out = w.tqOK("describe", "-t", wfIdleQueue)
	wantContains(t, "task-queue describe of a queue nobody polls", out, "Backlog      1 ready, the oldest waiting ",
		"Last poll    never (since this node started)\n", "No worker has polled task queue idle in the last 5m0s.\n")
	out = w.tqOK("list")
	if !regexp.MustCompile(`(?m)^idle +0 +1 +\S+ +0 +`).MatchString(out) || !regexp.MustCompile(`(?m)^wfq +1 +0 +- +0 `).MatchString(out) {
		t.Errorf("task-queue list:\n%s", out)
	}

	out = w.ok("describe", "idle-1")
	wantContains(t, "workflow describe of a run on a queue nobody polls", out,
		`Why queued   no worker has polled task queue "idle" in the last 5m; queues with pollers: wfq`)
	w.ok("start", "--type", "Greeet", "-t", wfTestQueue, "-w", "typo-1")
	out = w.ok("describe", "typo-1")
	wantContains(t, "workflow describe of a misspelled type", out,
		`Why queued   no poller of task queue "wfq" serves workflow type "Greeet" (they serve workflow types Counter, Flaky, Gate, Greet, Refuse, activity types Charge); did you mean "Greet"?`)

	for _, args := range [][]string{{"describe"}, {"describe", "-t", "q", "--task-queue-type", "nexus"}, {"list", "extra"}} {
		if code, _, errs := w.tqRun(args...); code != 2 || !strings.Contains(errs, "Usage:") {
			t.Errorf("task-queue %v: exit %d, stderr %q", args, code, errs)
		}
	}
}

// On a three-node cluster a worker polls a follower; asked of the leader,
// task-queue describe lists it with the member it polled, and asked of
// the other follower, workflow describe says why a run of a misspelled
// type waits.
func TestTaskQueueCommandsOnACluster(t *testing.T) {
	nodes, _ := startTestCluster(t)
	var leader, followers []string
	for _, n := range nodes {
		if n.node.IsLeader() {
			leader = append(leader, n.api.addr())
		} else {
			followers = append(followers, n.node.ID()+"="+n.api.addr())
		}
	}
	if len(leader) != 1 || len(followers) != 2 {
		t.Fatalf("leader %v, followers %v", leader, followers)
	}
	f1ID, f1, _ := strings.Cut(followers[0], "=")
	_, f2, _ := strings.Cut(followers[1], "=")
	hc, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{f1}})
	if err != nil {
		t.Fatal(err)
	}
	w := worker.New(client.New(hc), "greet", worker.Options{Identity: "greeter-1", BuildID: "v7"})
	w.RegisterWorkflowWithName(wfGreet, "Greet")
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, errOut, code := runCmd(t, "workflow", "start", "--addr", leader[0], "--type", "Gret", "-t", "greet", "-w", "typo"); code != 0 {
		t.Fatalf("start: exit %d: %s", code, errOut)
	}
	// The worker's first long poll reaches f1 as it starts; the describe
	// may come before it.
	var out string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var code int
		out, _, code = runCmd(t, "workflow", "describe", "typo", "--addr", f2)
		if code == 0 && strings.Contains(out, "no poller of task queue") || time.Now().After(deadline) {
			break
		}
	}
	wantContains(t, "workflow describe on a follower", out,
		`Why queued   no poller of task queue "greet" serves workflow type "Gret" (they serve workflow types Greet); did you mean "Greet"?`)
	out, errOut, code := runCmd(t, "task-queue", "describe", "-t", "greet", "--addr", leader[0])
	if code != 0 {
		t.Fatalf("task-queue describe: exit %d: %s", code, errOut)
	}
	if !regexp.MustCompile(`(?m)^greeter-1 +(just now|\S+ ago) +(yes|no) +v7 +Greet +- +\S+ +\S*` + f1ID + `\S*$`).MatchString(out) {
		t.Errorf("task-queue describe on the leader lacks the poller at %s:\n%s", f1ID, out)
	}
}
