// Package examples holds no code of its own: each example is a main
// package in a folder of its own, and this test builds and runs them all.
package examples

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runTimeout bounds one run of one example. Each finishes in seconds; the
// margin is for a loaded CI machine.
const runTimeout = 2 * time.Minute

// TestExamples builds every example and runs it, checking that it exits 0
// and prints what shows it worked. hello runs twice on one directory: a
// second run of the README's program must not fail because the first one
// left its workflow behind.
func TestExamples(t *testing.T) {
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./...")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/...: %v\n%s", err, out)
	}
	helloDir := t.TempDir()
	runs := []struct {
		name string
		args []string
		want string // a line of the output that shows the example worked
	}{
		{"hello", []string{"-dir", helloDir}, "order-1 run 1: charged 4200 cents"},
		{"hello", []string{"-dir", helloDir}, "order-1 run 2: charged 4200 cents"},
		{"saga", nil, "ok: trip-2 was undone in reverse order"},
		{"signals-queries", nil, "cart-7 checked out: 1050 cents"},
		{"review", nil, "feature-7 SUCCESS: cost 4.5 over 3 runs, phases spec SUCCESS, code SUCCESS"},
		{"child", nil, "child order-9-box-c: run 4, Completed, child of run 1"},
		{"cluster-client", nil, ": hello, Dr. Ada"},
		{"backup", nil, "approval-2 finished on the copy: \"no\""},
		{"cancellation", nil, "race-1: the timer won after"},
		{"subscription", nil, "sub-1: charged 3 times"},
		{"schedules", nil, `triggered while paused ("quiet hours"): special report by reports-`},
		{"async-completion", nil, "expense-4 finished: train to Lyon: approved by Ada"},
		{"updates", nil, "flight-12 closed with seats [1A 1B]"},
		{"temporal-port", nil, "ok: 4 Temporal-shaped samples ran"},
		{"interceptor", nil, "ok: order-5 charged, Wipe refused, every line tagged with the tenant"},
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			exe := filepath.Join(bin, r.name)
			if _, err := os.Stat(exe); err != nil {
				t.Fatalf("go build made no %s: %v", r.name, err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
			defer cancel()
			var out bytes.Buffer
			cmd := exec.CommandContext(ctx, exe, r.args...)
			cmd.Stdout, cmd.Stderr = &out, &out
			start := time.Now()
			err := cmd.Run()
			t.Logf("%s %s: %v in %v\n%s", r.name, strings.Join(r.args, " "), err, time.Since(start).Round(time.Millisecond), out.String())
			if ctx.Err() != nil {
				t.Fatalf("%s did not finish within %v", r.name, runTimeout)
			}
			if err != nil {
				t.Fatalf("%s failed: %v", r.name, err)
			}
			if !strings.Contains(out.String(), r.want) {
				t.Errorf("%s did not print %q", r.name, r.want)
			}
		})
	}
}
