package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine/clock"
)

// The demo runs in-process end to end and prints the lines that prove its
// story: every order completed, the stale write refused, the store verified.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	cfg := demoConfig{Dir: t.TempDir(), Out: &out, Clock: clock.Wall(), Timeline: "order-1"}
	if err := runDemo(context.Background(), cfg); err != nil {
		t.Fatalf("demo failed: %v\noutput:\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		// each order's outcome
		"order-1  workflow completed: shipped 1x loom",
		"order-2  workflow completed: shipped 3x shuttle",
		"order-3  workflow completed: shipped 40x heddle-frame",
		"approved by alice",
		"order-4  workflow FAILED: ",
		"ok  order-4 Failed after compensating, as planned",
		// the retry
		"order-2  ChargeCard        attempt 1 FAILED: card network timeout",
		"order-2  ChargeCard        attempt 2 ok",
		"ok  order-2 ChargeCard retried",
		// the signal
		"order-3  alice sends signal approved",
		"ok  order-3 received the signal approved",
		// the child workflow
		"[child order-3-shipment]",
		"ShipmentWorkflow",
		// the compensation
		"order-4  ShipOrder         attempt 1 FAILED: address undeliverable (non-retryable) [child order-4-shipment]",
		"order-4  RefundCard        attempt 1 ok: COMPENSATION refunded",
		"order-4  ReleaseInventory  attempt 1 ok: COMPENSATION released",
		"compensated (card refunded, inventory released) after: child workflow execution error (type: ShipmentWorkflow",
		// the recovery
		"order-1  committed so far: ReserveInventory, ChargeCard; stopping worker-a",
		"order-1  resumed by worker-b as attempt 2",
		"order-1  worker-a's Stop returned: context deadline exceeded",
		"order-1 executions by idempotency key: order-1/1/1 ReserveInventory×1, order-1/1/2 ChargeCard×1, order-1/1/3 SendConfirmation×2",
		"order-1  SendConfirmation  attempt 1 ok: mail sent (worker-b)",
		"ok  order-1 recovered: lease_expired requeue; worker-b did not re-run ReserveInventory (1 execution) or ChargeCard (1 execution)",
		// the steps: a critic, a broken resource, a person
		"order-5  photo-critic      critic: photo-1 is blurry -> retry",
		"order-5  PublishListing    attempt 1 FAILED on browser-1",
		"order-5  PublishListing    attempt 2 ok on browser-2",
		"is NEEDS_USER, asking \"captcha for LST-5-eu: what is 3+4?\"; the run is Waiting, holding no lease",
		"order-5  bob answers step 3: 7",
		"order-5  workflow completed: listed warping-board as LST-5-eu with photo-2, captcha solved",
		"ok  order-5 the critic sent photo-1 back (retry, recorded on the step) and accepted photo-2",
		"ok  order-5 browser-1 failed the listing and joined its avoid-list; SWITCHING_RESOURCE leased browser-2",
		"ok  order-5 the captcha step waited in NEEDS_USER, was answered, and ran again with the answer",
		// the timeline and the store
		"history of order-1",
		"timer_fired",
		"store verified: 9 jobs, 0 problems",
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
		{args: nil, code: 2, stderr: "heddle: missing command\n\nUsage:"},
		{args: []string{"frobnicate"}, code: 2, stderr: `unknown command "frobnicate"`},
		{args: []string{"help"}, code: 0, stdout: "demo"},
		{args: []string{"--help"}, code: 0, stdout: "Usage:"},
		{args: []string{"help", "demo"}, code: 0, stdout: "--dir"},
		{args: []string{"demo", "--bogus"}, code: 2, stderr: "unknown flag: --bogus"},
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
