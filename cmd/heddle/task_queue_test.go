package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
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
	if len(doc.Pollers) != 0 {
		t.Errorf("the test worker runs no activity, yet it is listed: %+v", doc.Pollers)
	}

	out := w.tqOK("describe", "-t", wfTestQueue)
	wantContains(t, "task-queue describe", out, "Task queue   wfq\n", "Backlog      0 ready\n", "Last poll    ",
		"Pollers:\nIDENTITY    LAST ACCESS  POLLING  BUILD  WORKFLOW TYPES     ACTIVITY TYPES  DISPATCH/S  NODES\n",
		"worker-wfq  just now     yes      -      Gate,Greet,Refuse  -  ")
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
		`Why queued   no poller of task queue "wfq" serves workflow type "Greeet" (they serve workflow types Gate, Greet, Refuse); did you mean "Greet"?`)

	for _, args := range [][]string{{"describe"}, {"describe", "-t", "q", "--task-queue-type", "nexus"}, {"list", "extra"}} {
		if code, _, errs := w.tqRun(args...); code != 2 || !strings.Contains(errs, "Usage:") {
			t.Errorf("task-queue %v: exit %d, stderr %q", args, code, errs)
		}
	}
}
