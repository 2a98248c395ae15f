package embedded

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// A batch interrupted by SIGKILL: a child process (this test binary,
// running TestBatchCrashChild) opens the engine, whose runner works on a
// batch that terminates every run, and prints the number of terminated
// runs after each commit. The parent kills it with SIGKILL at a random
// count (so most kills land in the middle of a page: some of its runs
// terminated, the page not yet counted), three times, and then lets an
// engine of its own finish the batch. Every run must end terminated by
// exactly one job_terminated, the batch must count each once as done, and
// the store must verify.

const (
	batchCrashDirEnv = "HEDDLE_BATCH_CRASH_DIR"
	batchCrashRuns   = 600
	batchCrashRate   = 300 // runs a second: a page of 100 every third of a second
)

func TestBatchSIGKILL(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the test re-executes itself and SIGKILLs the child: Linux only")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(crashSeedEnv); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", crashSeedEnv, s, err)
		}
		seed = v
	}
	t.Logf("seed %d (rerun with %s=%d)", seed, crashSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 0x6261746368))
	dir := t.TempDir()

	e, err := Open(Config{Dir: dir, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	ids := startRuns(t, e, "order", batchCrashRuns)
	if _, err := e.StartBatch(bg, engine.StartBatch{ID: "crash", BatchSpec: engine.BatchSpec{Operation: engine.BatchTerminate,
		Query: "type=order", Reason: "crash", RunsPerSecond: batchCrashRate}}); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	last := 0
	for round := 1; round <= 3 && last < batchCrashRuns; round++ {
		target := last + 1 + rng.IntN(batchCrashRuns/4)
		if target >= batchCrashRuns {
			break
		}
		last = runBatchCrashChild(t, dir, target)
		t.Logf("round %d: killed the child at %d terminated runs (target %d)", round, last, target)
	}

	e, err = Open(Config{Dir: dir, BatchRunsPerSecond: 100000})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	b := waitBatch(t, e, "crash")
	if b.State != engine.BatchCompleted || b.Done != batchCrashRuns || b.Failed != 0 || b.Total != batchCrashRuns {
		t.Fatalf("the batch after the kills: %+v, want all %d runs done once", b, batchCrashRuns)
	}
	for _, id := range ids {
		if n := countEvents(t, e, id, engine.EventJobTerminated); n != 1 {
			t.Fatalf("run %d was terminated %d times", id, n)
		}
	}
	verifyOK(t, e)
}

// runBatchCrashChild runs the child until it printed target or more
// terminated runs, SIGKILLs it, and returns the last count it printed.
func runBatchCrashChild(t *testing.T, dir string, target int) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestBatchCrashChild$", "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), batchCrashDirEnv+"="+dir)
	var stderr crashStderr
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	count, killed := 0, false
	r := bufio.NewReader(stdout)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			if err != io.EOF {
				t.Errorf("reading the child: %v", err)
			}
			break
		}
		n, ok := strings.CutPrefix(strings.TrimSpace(line), "TERMINATED ")
		if !ok {
			continue
		}
		if count, err = strconv.Atoi(n); err != nil {
			t.Fatalf("malformed line %q", line)
		}
		if count >= target && !killed {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatalf("kill: %v", err)
			}
			killed = true
		}
	}
	werr := cmd.Wait()
	var ee *exec.ExitError
	if !killed || !errors.As(werr, &ee) {
		t.Fatalf("the child ended by itself at %d terminated runs (%v)\nstderr:\n%s", count, werr, stderr.String())
	}
	return count
}

// TestBatchCrashChild is the child of TestBatchSIGKILL; it does nothing
// unless HEDDLE_BATCH_CRASH_DIR names its directory. It runs until killed
// (or, should the parent vanish, for a minute).
func TestBatchCrashChild(t *testing.T) {
	dir := os.Getenv(batchCrashDirEnv)
	if dir == "" {
		t.Skip("run by TestBatchSIGKILL only")
	}
	e, err := Open(Config{Dir: dir, OnSchedulerError: func(err error) {
		fmt.Fprintf(os.Stderr, "runner: %v\n", err)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e.wakeBatches() // Open's runner reads the batches at once anyway
	for ctx.Err() == nil {
		changed := e.Committed()
		n, err := e.Count(ctx, engine.ListQuery{Status: engine.StatusTerminated})
		if err != nil {
			crashDie("count: %v", err)
		}
		if _, err := fmt.Fprintf(os.Stdout, "TERMINATED %d\n", n.Count); err != nil {
			crashDie("write: %v", err)
		}
		select {
		case <-changed:
		case <-ctx.Done():
		}
	}
}
