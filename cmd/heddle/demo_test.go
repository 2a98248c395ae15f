package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/clock"
)

// The demo runs in-process end to end and prints the lines that prove its
// story: every order completed, the stale write refused, the store verified.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	cfg := demoConfig{Dir: t.TempDir(), Out: &out, Clock: clock.Wall(), Timeline: "order-3"}
	if err := runDemo(context.Background(), cfg); err != nil {
		t.Fatalf("demo failed: %v\noutput:\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"order-1  completed (attempt 2",
		"order-2  completed (attempt 2",
		"order-3  completed (attempt 2",
		"order-1  claimed by worker-b (job 1, attempt 2, after job_requeued: lease_expired)",
		"step reserve-inventory already committed at seq 4 by attempt 1: skipped",
		"commits charge-card as attempt 1: refused: engine: stale attempt",
		"order-3  step charge-card failed (try 1)",
		"alice sends signal approved",
		"after wait_completed: timer ship-window",
		"history of order-3 (job 3)",
		"timer_fired",
		"store verified: 3 jobs, 0 problems",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", text)
	}
}

// A directory given with --dir must be new or empty: the demo's checks
// assume its workers meet only the demo's own jobs.
func TestDemoRefusesNonEmptyDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := runDemo(context.Background(), demoConfig{Dir: dir, Out: &out, Clock: clock.Wall(), Timeline: "order-1"})
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("runDemo in a non-empty dir: err = %v, want a refusal", err)
	}
}

// The dispatcher answers unknown commands and missing ones with usage on
// stderr and exit code 2, and help with usage on stdout and 0.
func TestDispatch(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{args: nil, code: 2, stderr: "Usage:"},
		{args: []string{"frobnicate"}, code: 2, stderr: `unknown command "frobnicate"`},
		{args: []string{"help"}, code: 0, stdout: "demo"},
		{args: []string{"--help"}, code: 0, stdout: "Usage:"},
		{args: []string{"help", "demo"}, code: 0, stdout: "--dir"},
		{args: []string{"demo", "--bogus"}, code: 2, stderr: "flag provided but not defined"},
		{args: []string{"demo", "extra"}, code: 2, stderr: `unexpected argument "extra"`},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String(), tc.stdout) || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("heddle %v: code %d, stdout %q, stderr %q; want code %d, stdout with %q, stderr with %q",
				tc.args, code, stdout.String(), stderr.String(), tc.code, tc.stdout, tc.stderr)
		}
	}
}

// The story checks must be able to fail: a history without the events an
// order's story needs is rejected.
func TestCheckStoryRejectsMissingEvents(t *testing.T) {
	retried := []engine.Event{
		{Seq: 1, Type: evActivityFailed, Step: "charge-card"},
		{Seq: 2, Type: engine.EventTimerFired, Name: "ship-window"},
		{Seq: 3, Type: engine.EventWaitCompleted, Name: "ship-window"},
	}
	if err := checkStory("order-3", retried); err != nil {
		t.Fatalf("complete story rejected: %v", err)
	}
	if err := checkStory("order-3", retried[1:]); err == nil {
		t.Error("order-3 without activity_failed accepted")
	}
	requeued := []engine.Event{{Seq: 1, Type: engine.EventJobRequeued, Reason: engine.ReasonRetry}}
	if err := checkStory("order-1", requeued); err == nil {
		t.Error("order-1 requeued for a reason other than lease_expired accepted")
	}
}
