package main

// These tests pin the -o json and -o jsonl documents of describe, list,
// history and count to golden files, against the server "heddle dev" runs,
// and drive the verbs and spellings added beside the first ones: count,
// query, show, -w/-r/-t, and --json as another name for -o json.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// rfc3339 matches the times the JSON documents carry; they are the moment
// the test ran, so the golden files hold a placeholder instead.
var rfc3339 = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)

func normalizeTimes(s string) string { return rfc3339.ReplaceAllString(s, "<time>") }

// wfGoldenEnv is a server with three runs, one in each kind of end state:
// greet-1 completed, refuse-1 failed, idle-1 queued (its queue has no
// worker). The job ids are 1, 2 and 3: the store is new.
func wfGoldenEnv(t *testing.T) *wfEnv {
	w := newWFEnv(t, "")
	w.ok("start", "--type", "Greet", "-t", wfTestQueue, "-w", "greet-1", "--input", `"ada"`, "--wait")
	if code, _, errs := w.run("start", "--type", "Refuse", "-t", wfTestQueue, "-w", "refuse-1", "--input", `"no stock"`, "--wait"); code != 1 {
		t.Fatalf("start --wait of Refuse: exit %d, want 1; stderr %q", code, errs)
	}
	w.ok("start", "--type", "Gate", "-t", wfIdleQueue, "-w", "idle-1")
	return w
}

func TestWorkflowOutputGolden(t *testing.T) {
	w := wfGoldenEnv(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"describe_completed.json", []string{"describe", "greet-1", "-o", "json"}},
		{"describe_completed.jsonl", []string{"describe", "greet-1", "-o", "jsonl"}},
		{"describe_failed.json", []string{"describe", "-w", "refuse-1", "-o", "json"}},
		{"describe_queued.json", []string{"describe", "-r", "3", "--json"}},
		{"list.json", []string{"list", "-o", "json"}},
		{"list.jsonl", []string{"list", "-o", "jsonl"}},
		{"history.json", []string{"history", "greet-1", "-o", "json"}},
		{"history.jsonl", []string{"history", "greet-1", "-o", "jsonl"}},
		{"count.json", []string{"count", "-o", "json"}},
		{"count.jsonl", []string{"count", "-o", "jsonl"}},
		{"count.txt", []string{"count"}},
	} {
		out := w.ok(tc.args[0], tc.args[1:]...)
		golden(t, "output/"+tc.name, normalizeTimes(out))
		if strings.Contains(out, w.addr) || strings.Contains(out, os.TempDir()) {
			t.Errorf("%v prints something of this machine:\n%s", tc.args, out)
		}
		switch {
		case strings.HasSuffix(tc.name, ".json"):
			var v any
			wfDecodeOne(t, out, &v)
		case strings.HasSuffix(tc.name, ".jsonl"):
			for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				var v map[string]any
				if err := json.Unmarshal([]byte(line), &v); err != nil {
					t.Errorf("%v: line %d is not a JSON object: %v\n%s", tc.args, i+1, err, line)
				}
			}
		}
	}
}

// jsonl prints the same objects json holds in its array, one a line.
func TestWorkflowJSONLMatchesJSON(t *testing.T) {
	w := wfGoldenEnv(t)
	lines := func(out string) []string { return strings.Split(strings.TrimSuffix(out, "\n"), "\n") }
	compact := func(v any) string { b, _ := json.Marshal(v); return string(b) }

	var l wfListOutput
	w.json(&l, "list")
	got := lines(w.ok("list", "-o", "jsonl"))
	if len(got) != len(l.Workflows) {
		t.Fatalf("list -o jsonl: %d lines for %d runs", len(got), len(l.Workflows))
	}
	for i, d := range l.Workflows {
		if got[i] != compact(d) {
			t.Errorf("list line %d:\n%s\nwant\n%s", i+1, got[i], compact(d))
		}
	}
	var h wfHistoryOutput
	w.json(&h, "history", "greet-1")
	got = lines(w.ok("history", "greet-1", "-o", "jsonl"))
	if len(got) != len(h.Events) {
		t.Fatalf("history -o jsonl: %d lines for %d events", len(got), len(h.Events))
	}
	for i, ev := range h.Events {
		if got[i] != compact(ev) {
			t.Errorf("history line %d:\n%s\nwant\n%s", i+1, got[i], compact(ev))
		}
	}
	// The token of the next page goes to stderr, not into the rows.
	code, out, errs := w.run("list", "--limit", "1", "-o", "jsonl")
	if code != 0 || len(lines(out)) != 1 || !strings.Contains(errs, "Next page: --page-token ") {
		t.Errorf("list --limit 1 -o jsonl: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, errs = w.run("history", "greet-1", "--limit", "2", "-o", "jsonl")
	if code != 0 || len(lines(out)) != 2 || !strings.Contains(errs, "next with --after 2") {
		t.Errorf("history --limit 2 -o jsonl: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	// --json is -o json, and -o takes its formats in any case.
	if a, b := w.ok("describe", "greet-1", "--json"), w.ok("describe", "greet-1", "-o", "JSON"); a != b {
		t.Errorf("--json and -o JSON differ:\n%s\n%s", a, b)
	}
	// The last of -o and --json wins.
	if out := w.ok("describe", "greet-1", "--json", "-o", "table"); !strings.HasPrefix(out, "Workflow ID  greet-1\n") {
		t.Errorf("--json -o table printed:\n%s", out)
	}
}

func TestWorkflowCount(t *testing.T) {
	w := wfGoldenEnv(t)
	for _, tc := range []struct {
		args []string
		want wfCountOutput
	}{
		{nil, wfCountOutput{Count: 3, ByStatus: map[string]uint64{"Completed": 1, "Failed": 1, "Queued": 1}}},
		{[]string{"--status", "completed"}, wfCountOutput{Count: 1, ByStatus: map[string]uint64{"Completed": 1}}},
		{[]string{"--type", "Gate"}, wfCountOutput{Count: 1, ByStatus: map[string]uint64{"Queued": 1}}},
		{[]string{"-t", wfTestQueue}, wfCountOutput{Count: 2, ByStatus: map[string]uint64{"Completed": 1, "Failed": 1}}},
		{[]string{"--queue", wfIdleQueue}, wfCountOutput{Count: 1, ByStatus: map[string]uint64{"Queued": 1}}},
		{[]string{"--type", "Nothing"}, wfCountOutput{Count: 0, ByStatus: map[string]uint64{}}},
		{[]string{"--query", "status=Completed,Failed"}, wfCountOutput{Count: 2, ByStatus: map[string]uint64{"Completed": 1, "Failed": 1}}},
		{[]string{"-q", "status!=Completed type!=Gate"}, wfCountOutput{Count: 1, ByStatus: map[string]uint64{"Failed": 1}}},
		{[]string{"-q", "created>-1h closed<=now", "-t", wfTestQueue}, wfCountOutput{Count: 2, ByStatus: map[string]uint64{"Completed": 1, "Failed": 1}}},
		{[]string{"-q", "created<-1h"}, wfCountOutput{Count: 0, ByStatus: map[string]uint64{}}},
		{[]string{"-q", "closed>-1h"}, wfCountOutput{Count: 2, ByStatus: map[string]uint64{"Completed": 1, "Failed": 1}}},
		{[]string{"-q", "type=G*", "--status", "Queued"}, wfCountOutput{Count: 1, ByStatus: map[string]uint64{"Queued": 1}}},
		{[]string{"-q", "type=G*", "--status", "Failed"}, wfCountOutput{Count: 0, ByStatus: map[string]uint64{}}},
	} {
		var got wfCountOutput
		w.json(&got, "count", tc.args...)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("count %v = %+v, want %+v", tc.args, got, tc.want)
		}
	}
	code, _, errs := w.run("count", "--status", "Done")
	if code != 2 || !strings.Contains(errs, `--status "Done" is not a status`) {
		t.Errorf("count --status Done: exit %d, stderr %q", code, errs)
	}
}

// Count pages through the list API: more runs than one page holds.
func TestWorkflowCountPages(t *testing.T) {
	w := newWFEnvInMemory(t)
	const runs = engine.MaxPage + 7
	for i := range runs {
		if _, err := w.e.Create(context.Background(), engine.CreateJob{WorkflowID: "idle-" + strconv.Itoa(i), Type: "Gate", Queue: wfIdleQueue}); err != nil {
			t.Fatal(err)
		}
	}
	var got wfCountOutput
	w.json(&got, "count")
	if got.Count != runs || got.ByStatus["Queued"] != runs {
		t.Errorf("count of %d queued runs = %+v", runs, got)
	}
}

func TestWorkflowQuery(t *testing.T) {
	w := newWFEnv(t, "")
	var s wfStartOutput
	w.json(&s, "start", "--type", "Gate", "-t", wfTestQueue, "-w", "gate-1")

	var q wfQueryOutput
	w.json(&q, "query", "gate-1", "state", "--input", `"!"`)
	if q.WorkflowID != "gate-1" || q.JobID != s.JobID || q.Query != "state" || string(q.Result) != `"waiting for go!"` {
		t.Errorf("query --json = %+v, result %s", q, q.Result)
	}
	out := w.ok("query", "-w", "gate-1", "--name", "state", "--input", `"?"`)
	wantContains(t, "query", out, "Workflow ID  gate-1\n", "Query        state\n", `Result       "waiting for go?"`)
	out = w.ok("query", "-r", strconv.FormatUint(s.JobID, 10), "state", "--input", `""`, "-o", "jsonl")
	if !strings.HasSuffix(out, `"result":"waiting for go"}`+"\n") || strings.Count(out, "\n") != 1 {
		t.Errorf("query -o jsonl printed %q", out)
	}
	// The query changed nothing: the run still waits, and a signal ends it.
	w.ok("signal", "-w", "gate-1", "--name", "go", "--input", `"opened"`)
	if j := w.closed("gate-1"); j.Status.String() != "Completed" {
		t.Errorf("gate-1 ended %s", j.Status)
	}

	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"query", "gate-1", "nope"}, 1, "unknown query"},
		{[]string{"query", "gate-1"}, 2, "missing argument NAME"},
		{[]string{"query", "gate-1", ""}, 2, "NAME must not be empty"},
		{[]string{"query", "no-such-workflow", "state"}, 1, "unknown job"},
		{[]string{"query", "gate-1", "state", "--timeout", "0s"}, 2, "--timeout 0s must be positive"},
		{[]string{"query", "gate-1", "state", "--input", "x"}, 2, "a string must be quoted"},
	} {
		code, out, errs := w.run(tc.args[0], tc.args[1:]...)
		if code != tc.code || out != "" || !strings.Contains(errs, tc.stderr) {
			t.Errorf("workflow %q: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.args, code, out, errs, tc.code, tc.stderr)
		}
	}

	// No worker serves the idle queue: the query times out with a message
	// that says why.
	w.ok("start", "--type", "Gate", "-t", wfIdleQueue, "-w", "idle-1")
	code, _, errs := w.run("query", "idle-1", "state", "--timeout", "300ms")
	if code != 1 || !strings.Contains(errs, `no worker of queue "idle" answered query "state"`) {
		t.Errorf("query with no worker: exit %d, stderr %q", code, errs)
	}
}

// -w and -r name a run without the ID argument's guess, on every verb
// that takes one; show is history.
func TestWorkflowTargetFlags(t *testing.T) {
	w := newWFEnv(t, "")
	var s wfStartOutput
	w.json(&s, "start", "--type", "Gate", "--queue", wfIdleQueue, "--id", "4711")
	w.ok("start", "--type", "Gate", "-t", wfIdleQueue, "-w", "other")
	job := strconv.FormatUint(s.JobID, 10)

	// "4711" as an ID is a job id first; with -w it is the workflow id.
	if code, _, errs := w.run("describe", "-r", "4711"); code != 1 || !strings.Contains(errs, "unknown job") {
		t.Errorf("describe -r 4711: exit %d, stderr %q", code, errs)
	}
	for _, args := range [][]string{{"-w", "4711"}, {"-r", job}, {"-w", "4711", "-r", job}, {"--workflow-id=4711"}, {"--run-id", job}} {
		var d wfJobDoc
		w.json(&d, "describe", args...)
		if d.WorkflowID != "4711" || d.JobID != s.JobID {
			t.Errorf("describe %v = %+v", args, d)
		}
	}
	var h1, h2 wfHistoryOutput
	w.json(&h1, "history", "-w", "4711")
	w.json(&h2, "show", "-r", job)
	if h1.JobID != s.JobID || fmt.Sprint(h1) != fmt.Sprint(h2) {
		t.Errorf("history -w and show -r differ:\n%+v\n%+v", h1, h2)
	}
	var sig wfSignalOutput
	w.json(&sig, "signal", "-r", job, "tick")
	if sig.WorkflowID != "4711" || sig.JobID != s.JobID {
		t.Errorf("signal -r = %+v", sig)
	}
	var stop wfStopOutput
	w.json(&stop, "terminate", "-w", "4711", "-r", job, "--reason", "done")
	if stop.WorkflowID != "4711" || stop.Status != "Terminated" {
		t.Errorf("terminate -w -r = %+v", stop)
	}

	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"describe", "-w", "other", "-r", job}, 1, `is a run of workflow "4711", not of "other"`},
		{[]string{"describe", "-r", "x"}, 2, `-r/--run-id "x" is not a job (run) id`},
		{[]string{"describe", "-r", "0"}, 2, `-r/--run-id "0" is not a job (run) id`},
		{[]string{"describe", "-w", ""}, 2, "-w/--workflow-id must not be empty"},
		{[]string{"describe", "-w", "4711", "4711"}, 2, `unexpected argument "4711" (-w/-r name the run)`},
		{[]string{"describe"}, 2, "missing argument ID (or -w/--workflow-id, -r/--run-id)"},
		{[]string{"signal", "-w", "4711"}, 2, "missing argument NAME"},
		{[]string{"cancel", "-r"}, 2, "flag needs an argument: 'r' in -r"},
	} {
		code, out, errs := w.run(tc.args[0], tc.args[1:]...)
		if code != tc.code || out != "" || !strings.Contains(errs, tc.stderr) {
			t.Errorf("workflow %q: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.args, code, out, errs, tc.code, tc.stderr)
		}
	}
}
