package main

// These tests drive the commands that match Temporal's CLI (workflow
// execute, result, update, stack), describe's pending activities, and the
// errors a newcomer meets, against a dev node and a three-node cluster.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/sdk/activity"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/temporal"
	"github.com/heddlewf/heddle/sdk/worker"
	"github.com/heddlewf/heddle/sdk/workflow"
)

// registerParityWorkflows registers the workflows of these tests.
func registerParityWorkflows(w worker.Worker) {
	w.RegisterWorkflowWithName(wfCounter, "Counter")
	w.RegisterWorkflowWithName(wfFlaky, "Flaky")
	w.RegisterActivityWithOptions(wfDecline, activity.RegisterOptions{Name: "Charge"})
}

// wfCounter adds what its update "add" sends (its validator refuses a
// negative number) until the signal "done", and returns the total.
func wfCounter(ctx workflow.Context) (int, error) {
	total := 0
	err := workflow.SetUpdateHandlerWithOptions(ctx, "add", func(ctx workflow.Context, n int) (int, error) {
		total += n
		return total, nil
	}, workflow.UpdateHandlerOptions{Validator: func(n int) error {
		if n < 0 {
			return errors.New("negative numbers are not added")
		}
		return nil
	}})
	if err != nil {
		return 0, err
	}
	workflow.GetSignalChannel(ctx, "done").Receive(ctx, nil) // stack: the counter waits here
	return total, nil
}

// wfFlaky runs the activity Charge, which always fails, retried an hour
// apart: the run waits for the second try.
func wfFlaky(ctx workflow.Context) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Hour, BackoffCoefficient: 1}})
	return workflow.ExecuteActivity(ctx, "Charge").Get(ctx, nil)
}

func wfDecline(context.Context) error { return errors.New("card declined") }

// The line of this file that carries marker.
func parityLine(t *testing.T, marker string) (string, int) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(src), "\n") {
		if strings.Contains(l, "// "+marker) && !strings.Contains(l, "parityLine") {
			return file, i + 1
		}
	}
	t.Fatalf("no line marked %q", marker)
	return "", 0
}

// heddle workflow execute starts and waits (Temporal's "workflow
// execute"); result waits for a run started earlier; both exit 1 for a
// workflow that did not complete. Before, "execute" was an unknown
// command reported as "unknown flag: --type".
func TestWorkflowExecuteAndResult(t *testing.T) {
	w := newWFEnv(t, "")
	out := w.ok("execute", "--type", "Greet", "-t", wfTestQueue, "-w", "ex-1", "--input", `"ada"`)
	wantContains(t, "execute", out, "Workflow ID  ex-1", "Status       Completed", `Result       "hello, ada"`)

	var doc wfStartOutput
	w.json(&doc, "execute", "--type", "Greet", "-t", wfTestQueue, "-w", "ex-2", "--input", `"bo"`)
	if doc.Outcome == nil || doc.Outcome.Status != "Completed" || string(doc.Outcome.Result) != `"hello, bo"` {
		t.Fatalf("execute --json = %+v", doc)
	}
	code, _, errs := w.run("execute", "--type", "Refuse", "-t", wfTestQueue, "-w", "ex-3", "--input", `"no"`)
	if code != 1 || !strings.Contains(errs, "workflow ex-3 ended Failed") {
		t.Errorf("execute of a failing workflow: exit %d, %q", code, errs)
	}

	// result of a run that waits: it answers when the run ends.
	w.ok("start", "--type", "Gate", "-t", wfTestQueue, "-w", "res-1")
	w.waitFor("res-1", func(j *engine.Job) bool { return j.Status == engine.StatusWaiting })
	type answer struct {
		code     int
		out, err string
	}
	done := make(chan answer, 1)
	// The signal goes only once result says it waits: sent earlier, it
	// could end the run before result asks, and result would answer at
	// once without waiting.
	errw := &markWriter{mark: "Waiting for workflow res-1", seen: make(chan struct{})}
	go func() {
		var out bytes.Buffer
		code := run([]string{"workflow", "result", "--addr", w.addr, "res-1"}, &out, errw)
		done <- answer{code, out.String(), errw.String()}
	}()
	select {
	case <-errw.seen:
	case a := <-done:
		t.Fatalf("result of a waiting run ended without saying it waits: exit %d\n%s%s", a.code, a.out, a.err)
	}
	w.ok("signal", "res-1", "go", "--input", `"open"`)
	a := <-done
	if a.code != 0 || !strings.Contains(a.out, `Result       "open"`) || !strings.Contains(a.err, "Waiting for workflow res-1") {
		t.Errorf("result of a waiting run: exit %d\n%s%s", a.code, a.out, a.err)
	}
	var last wfJobDoc
	w.json(&last, "result", "-w", "res-1")
	if last.Status != "Completed" || string(last.Result) != `"open"` {
		t.Errorf("result --json = %+v", last)
	}
	code, out, errs = w.run("result", "ex-3")
	if code != 1 || !strings.Contains(out, "Status       Failed") || !strings.Contains(errs, "ended Failed") {
		t.Errorf("result of a failed run: exit %d\n%s%s", code, out, errs)
	}
}

// heddle workflow update execute|start|result (Temporal's "workflow update
// ..."): the result printed, a rejection by the validator exit 1 with its
// reason, an update started and its result waited for by id, and a wrong
// id refused at once.
func TestWorkflowUpdate(t *testing.T) {
	w := newWFEnv(t, "")
	w.ok("start", "--type", "Counter", "-t", wfTestQueue, "-w", "cnt")
	out := w.ok("update", "execute", "cnt", "--name", "add", "--input", "5")
	wantContains(t, "update execute", out, "Update       add", "Stage        completed", "Result       5")
	var doc wfUpdateOutput
	w.json(&doc, "update", "execute", "-w", "cnt", "--name", "add", "--input", "2", "--update-id", "u-2")
	if doc.UpdateID != "u-2" || doc.Stage != "completed" || string(doc.Result) != "7" {
		t.Errorf("update execute --json = %+v", doc)
	}
	code, _, errs := w.run("update", "execute", "cnt", "--name", "add", "--input", "-1")
	if code != 1 || !strings.Contains(errs, "update add of workflow cnt was rejected: negative numbers are not added") {
		t.Errorf("a rejected update: exit %d, %q", code, errs)
	}
	w.json(&doc, "update", "start", "cnt", "--name", "add", "--input", "3", "--update-id", "u-3", "--wait-for-stage", "accepted")
	if doc.Stage != "accepted" || doc.UpdateID != "u-3" {
		t.Errorf("update start --json = %+v", doc)
	}
	out = w.ok("update", "result", "cnt", "--update-id", "u-3")
	wantContains(t, "update result", out, "Update       add", "Result       10")
	code, _, errs = w.run("update", "result", "cnt", "--update-id", "nope")
	if code != 1 || !strings.Contains(errs, `received no update with id "nope"`) {
		t.Errorf("update result of an unknown id: exit %d, %q", code, errs)
	}
	for _, bad := range []struct{ args, want string }{
		{"execute cnt", "--name is required"},
		{"result cnt", "--update-id is required"},
		{"start cnt --name add --wait-for-stage completed", `unknown stage "completed"`},
		{"delete cnt", `unknown command "delete"`},
	} {
		code, _, errs := w.run("update", strings.Fields(bad.args)...)
		if code != 2 || !strings.Contains(errs, bad.want) {
			t.Errorf("update %s: exit %d, %q; want exit 2 and %q", bad.args, code, errs, bad.want)
		}
	}
	w.ok("signal", "cnt", "done")
	if j := w.closed("cnt"); j.Status != engine.StatusCompleted {
		t.Fatalf("the counter ended %s", j.Status)
	}
	code, _, errs = w.run("update", "execute", "cnt", "--name", "add", "--input", "1")
	if code != 1 || !strings.Contains(errs, "is Completed: only an open run takes updates") {
		t.Errorf("an update of a closed run: exit %d, %q", code, errs)
	}
}

// heddle workflow stack prints where the workflow code waits, its own file
// and line; -o json carries the same text.
func TestWorkflowStack(t *testing.T) {
	w := newWFEnv(t, "")
	w.ok("start", "--type", "Counter", "-t", wfTestQueue, "-w", "stk")
	file, line := parityLine(t, "stack: the counter waits here")
	out := w.ok("stack", "stk")
	wantContains(t, "stack", out, "coroutine root [blocked on ", "heddle.wfCounter(...)", fmt.Sprintf("%s:%d", file, line))
	var doc wfStackOutput
	w.json(&doc, "stack", "-w", "stk")
	if !strings.Contains(doc.StackTrace, fmt.Sprintf("%s:%d", filepath.Base(file), line)) {
		t.Errorf("stack --json = %+v", doc)
	}
	w.ok("signal", "stk", "done")
	w.closed("stk")
	code, _, errs := w.run("stack", "stk")
	if code != 1 || !strings.Contains(errs, "a run that ended waits nowhere") {
		t.Errorf("stack of a closed run: exit %d, %q", code, errs)
	}
}

// describe lists the pending activities as Temporal's does: the try, the
// last failure and when the next try starts; its JSON carries them. The
// retry timer is named for people ("retry of activity Charge, try 2"),
// not by its id.
func TestWorkflowDescribePendingActivities(t *testing.T) {
	w := newWFEnv(t, "")
	w.ok("start", "--type", "Flaky", "-t", wfTestQueue, "-w", "flaky")
	j := w.waitFor("flaky", func(j *engine.Job) bool { return j.Status == engine.StatusWaiting })
	var doc wfJobDoc
	w.json(&doc, "describe", "flaky")
	if len(doc.PendingActivities) != 1 {
		t.Fatalf("describe --json: pending activities %+v", doc.PendingActivities)
	}
	a := doc.PendingActivities[0]
	if a.ActivityID != "1" || a.ActivityType != "Charge" || a.Attempt != 2 || !strings.Contains(a.LastFailure, "card declined") || a.NextAttemptAt == "" {
		t.Errorf("the pending activity: %+v", a)
	}
	if len(j.Timers) != 1 || wfParseRFC(a.NextAttemptAt) != j.Timers[0].FireMS {
		t.Errorf("next_attempt_at %s, the run's timers %+v", a.NextAttemptAt, j.Timers)
	}
	out := w.ok("describe", "flaky")
	t.Logf("describe of a run whose activity is retried:\n%s", out)
	wantContains(t, "describe", out, "Activity 1   Charge", "attempt 2", "next try in 59m", "last failure: ", "card declined",
		"retry of activity Charge, try 2")
	if strings.Contains(out, "retry:1:") {
		t.Errorf("describe shows the retry timer's id:\n%s", out)
	}
}

// The errors a newcomer meets say what was wrong and what to do.
func TestWorkflowNewcomerErrors(t *testing.T) {
	w := newWFEnv(t, "")
	w.ok("start", "--type", "Greet", "-t", wfTestQueue, "-w", "done-1", "--input", `"x"`, "--wait")
	for _, c := range []struct {
		args []string
		code int
		want []string
	}{
		// An unknown command is reported as one, with the commands listed,
		// even with flags after it (before: "unknown flag: --type").
		{[]string{"exec", "--type", "Greet", "-t", "q"}, 2, []string{`unknown command "exec"; did you mean execute?`, "Available Commands:", "  execute "}},
		{[]string{"delete", "done-1"}, 2, []string{`unknown command "delete"`, "Available Commands:"}},
		// A flag of another tool, or a typo, gets the flag it means.
		{[]string{"start", "--workflow-type", "Greet", "-t", "q"}, 2, []string{"unknown flag: --workflow-type; did you mean --type?"}},
		{[]string{"list", "--stauts", "Running"}, 2, []string{"did you mean --status?"}},
		{[]string{"describe", "--run", "3"}, 2, []string{"did you mean --run-id?"}},
		{[]string{"describe"}, 2, []string{"missing argument ID (or -w/--workflow-id, -r/--run-id)"}},
		{[]string{"start", "--type", "Greet", "-t", "q", "--input", "ada"}, 2, []string{`a string must be quoted: '"text"'`}},
		{[]string{"describe", "nosuch"}, 1, []string{`unknown job: workflow id "nosuch"`, `"heddle workflow list" lists the runs`}},
		{[]string{"query", "done-1", "nope"}, 1, []string{`unknown query type: "nope"`, "workflow.SetQueryHandler", "heddle workflow stack"}},
		{[]string{"terminate", "done-1"}, 1, []string{"workflow done-1 (job 1) already ended Completed: only an open run can be terminated"}},
		{[]string{"cancel", "done-1"}, 1, []string{"already ended Completed: only an open run can be cancelled"}},
		{[]string{"start", "--type", "Greet", "-t", "q", "-w", "done-1", "--reuse-policy", "reject-duplicate"}, 1, []string{"workflow already exists", "--reuse-policy allow-after-terminal"}},
		{[]string{"list", "--addr", "7280"}, 2, []string{`--addr "7280" is a port alone: write host:port, such as 127.0.0.1:7280`}},
		{[]string{"list", "--addr", "http://" + w.addr + "/ui/"}, 2, []string{"is the web console's address: give the node's, http://" + w.addr}},
	} {
		var out, errb strings.Builder
		args := append([]string{"workflow"}, c.args...)
		if !strings.HasPrefix(strings.Join(c.args, " "), "list --addr") {
			args = append(args, "--addr", w.addr)
		}
		code := run(args, &out, &errb)
		if code != c.code {
			t.Errorf("%v: exit %d, want %d\n%s", c.args, code, c.code, errb.String())
		}
		for _, want := range c.want {
			if !strings.Contains(errb.String(), want) {
				t.Errorf("%v: stderr lacks %q:\n%s", c.args, want, errb.String())
			}
		}
	}
}

// With no node listening, a command fails at once (it waited 10 s before)
// and names the addresses it tried and what to do; with --retry-timeout
// given it waits that long, saying so on stderr first.
func TestWorkflowNoNodeFailsAtOnce(t *testing.T) {
	t.Setenv("HEDDLE_ADDR", "")
	var addrs []string
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, ln.Addr().String())
		_ = ln.Close()
	}
	start := time.Now()
	out, errs, code := runCmd(t, "workflow", "list", "--addr", strings.Join(addrs, ","))
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("it took %v to fail", took)
	}
	if code != 1 || out != "" {
		t.Errorf("exit %d, stdout %q", code, out)
	}
	wantContains(t, "stderr", errs, "no heddle node listens at "+addrs[0]+", "+addrs[1]+" (connection refused)",
		`Start one with "heddle dev"`, "--addr host:port")
	_, errs, code = runCmd(t, "workflow", "list", "--addr", addrs[0], "--retry-timeout", "200ms")
	wantContains(t, "stderr with --retry-timeout", errs, "no answer from http://"+addrs[0]+" yet (connect: connection refused); trying for up to 200ms",
		"no heddle node answered at "+addrs[0]+" within 200ms")
	if code != 1 {
		t.Errorf("with --retry-timeout: exit %d", code)
	}
}

// workflow execute, result, update, stack and describe's pending
// activities on a three-node cluster, through a follower, with the worker
// and the query broker on the other nodes.
func TestWorkflowParityOnCluster(t *testing.T) {
	nodes, addrs := startTestCluster(t)
	svc, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: strings.Split(addrs, ",")})
	if err != nil {
		t.Fatal(err)
	}
	startWFWorker(t, client.New(svc), strings.Split(addrs, ","), "")
	follower := nodes[2].api.addr()
	wf := func(args ...string) (string, string) {
		t.Helper()
		out, errs, code := runCmd(t, append(append([]string{"workflow"}, args...), "--addr", follower)...)
		if code != 0 {
			t.Fatalf("workflow %v: exit %d\n%s%s", args, code, out, errs)
		}
		return out, errs
	}
	out, _ := wf("execute", "--type", "Greet", "-t", wfTestQueue, "-w", "c-ex", "--input", `"cy"`)
	wantContains(t, "execute", out, `Result       "hello, cy"`)
	out, _ = wf("result", "c-ex")
	wantContains(t, "result", out, "Status       Completed")
	wf("start", "--type", "Counter", "-t", wfTestQueue, "-w", "c-cnt")
	out, _ = wf("update", "execute", "c-cnt", "--name", "add", "--input", "4")
	wantContains(t, "update execute", out, "Result       4")
	file, line := parityLine(t, "stack: the counter waits here")
	out, _ = wf("stack", "c-cnt")
	wantContains(t, "stack", out, fmt.Sprintf("%s:%d", file, line))
	wf("start", "--type", "Flaky", "-t", wfTestQueue, "-w", "c-flaky")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		j, err := svc.Describe(ctx, engine.Target{WorkflowID: "c-flaky"})
		if err != nil {
			t.Fatal(err)
		}
		if j.Status == engine.StatusWaiting {
			break
		}
		if _, err := svc.WatchHistory(ctx, j.ID, j.LastSeq, 1); err != nil {
			t.Fatal(err)
		}
	}
	out, _ = wf("describe", "c-flaky")
	wantContains(t, "describe", out, "Activity 1   Charge", "attempt 2", "card declined")
	wf("signal", "c-cnt", "done")
	out, _ = wf("result", "c-cnt")
	wantContains(t, "result of the counter", out, "Result       4")
}

// markWriter is a goroutine-safe buffer that closes seen once what was
// written holds mark.
type markWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	mark string
	seen chan struct{}
	once sync.Once
}

func (m *markWriter) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.buf.Write(p)
	if strings.Contains(m.buf.String(), m.mark) {
		m.once.Do(func() { close(m.seen) })
	}
	return n, err
}

func (m *markWriter) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.buf.String()
}
