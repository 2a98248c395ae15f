package embedded

import (
	"bufio"
	"bytes"
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
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// Crash safety: a child process (this test binary, running TestCrashChild)
// drives a durable engine from many goroutines and prints one line per
// acknowledged command, after the acknowledgement. The parent reads lines
// until a random count, SIGKILLs the child, reopens the directory and checks
// that every acknowledged command is in the store and that the whole store
// verifies. The cycle repeats on the same directory, the child going on with
// new workflow ids (and picking up the jobs the last child left behind).
//
// SIGKILL ends the process, not the machine: this checks that an
// acknowledgement means the command is committed (and that nothing a crash
// can interrupt leaves the store inconsistent), not what an fsync survives.

const (
	crashDirEnv   = "HEDDLE_CRASH_CHILD_DIR"
	crashRoundEnv = "HEDDLE_CRASH_CHILD_ROUND"
	crashSeedEnv  = "HEDDLE_CRASH_SEED"
	crashRounds   = 3
	crashWorkers  = 16
	crashQueue    = "crash"
	crashLeaseMS  = 2000
)

func TestCrashSafetySIGKILL(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("crash test re-executes itself and SIGKILLs the child: Linux only")
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
	rng := rand.New(rand.NewPCG(seed, 0x6865646c65))
	dir := t.TempDir()
	var acks []crashAck
	for round := 1; round <= crashRounds; round++ {
		target := 200 + rng.IntN(1301)
		got := runCrashChild(t, dir, round, target)
		t.Logf("round %d: killed the child after %d acknowledgements (target %d)", round, len(got), target)
		acks = append(acks, got...)
		checkCrashAcks(t, dir, acks)
	}
}

// crashAck is one acknowledged command as the child printed it:
// "ACK <kind> <job> <seq> [<name>]".
type crashAck struct {
	kind string
	job  engine.JobID
	seq  uint64 // the seq the command's event got (0 for create)
	name string // workflow id for create, step for commit, attempt for claim
	line string
}

func parseCrashAck(line string) (crashAck, error) {
	f := strings.Fields(line)
	if len(f) < 4 || f[0] != "ACK" {
		return crashAck{}, fmt.Errorf("malformed ack %q", line)
	}
	job, err1 := strconv.ParseUint(f[2], 10, 64)
	seq, err2 := strconv.ParseUint(f[3], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return crashAck{}, fmt.Errorf("malformed ack %q: %v", line, err)
	}
	a := crashAck{kind: f[1], job: engine.JobID(job), seq: seq, line: line}
	if len(f) > 4 {
		a.name = f[4]
	}
	return a, nil
}

// runCrashChild starts the child on dir, reads acknowledgements until it has
// target of them, kills the child with SIGKILL, and returns every complete
// line the child wrote before it died (at least target).
func runCrashChild(t *testing.T, dir string, round, target int) []crashAck {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashRoundEnv+"="+strconv.Itoa(round))
	var stderr crashStderr
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acks []crashAck
	var parseErr error
	killed := false
	r := bufio.NewReader(stdout)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			// EOF: the child died (a trailing partial line was never
			// completed, so it acknowledges nothing).
			if err != io.EOF {
				parseErr = errors.Join(parseErr, err)
			}
			break
		}
		if !strings.HasPrefix(line, "ACK ") {
			continue // the test framework's own output
		}
		a, err := parseCrashAck(strings.TrimSpace(line))
		if err != nil {
			parseErr = errors.Join(parseErr, err)
			continue
		}
		acks = append(acks, a)
		if len(acks) == target && !killed {
			// Every line read so far was printed after its command was
			// acknowledged; the lines still in the pipe were too, and are
			// read (and checked) after the kill.
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatalf("kill: %v", err)
			}
			killed = true
		}
	}
	werr := cmd.Wait()
	if strings.Contains(stderr.String(), "WARNING: DATA RACE") {
		t.Errorf("the child reported a data race:\n%s", stderr.String())
	}
	if parseErr != nil {
		t.Fatalf("reading the child's output: %v\nstderr:\n%s", parseErr, stderr.String())
	}
	var ee *exec.ExitError
	if !killed || !errors.As(werr, &ee) {
		t.Fatalf("round %d: the child ended by itself after %d of %d acknowledgements (%v)\nstderr:\n%s",
			round, len(acks), target, werr, stderr.String())
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("round %d: the child ended with %v, not by SIGKILL\nstderr:\n%s", round, werr, stderr.String())
	}
	return acks
}

// checkCrashAcks reopens dir and checks every acknowledgement of every round
// so far, then verifies the whole store.
func checkCrashAcks(t *testing.T, dir string, acks []crashAck) {
	t.Helper()
	e, err := Open(Config{Dir: dir, DisableScheduler: true})
	if err != nil {
		t.Fatalf("reopen after SIGKILL: %v", err)
	}
	defer closeOK(t, e)
	hist := map[engine.JobID][]engine.Event{}
	history := func(id engine.JobID) []engine.Event {
		if h, ok := hist[id]; ok {
			return h
		}
		var evs []engine.Event
		if err := e.DB().View(func(r *storage.Reader) (err error) { evs, _, err = machine.ReadHistory(r, id, 0, 0); return err }); err != nil {
			t.Fatalf("history of job %d: %v", id, err)
		}
		hist[id] = evs
		return evs
	}
	event := func(a crashAck) (engine.Event, bool) {
		h := history(a.job)
		if a.seq == 0 || a.seq > uint64(len(h)) {
			return engine.Event{}, false
		}
		return h[a.seq-1], true
	}
	bad := 0
	fail := func(a crashAck, format string, args ...any) {
		bad++
		if bad <= 20 {
			t.Errorf("acknowledged %q: "+format, append([]any{a.line}, args...)...)
		}
	}
	for _, a := range acks {
		ev, ok := event(a)
		switch a.kind {
		case "create":
			j, err := e.Describe(bg, engine.Target{WorkflowID: a.name})
			if err != nil || j.ID != a.job {
				fail(a, "describe gives %+v, %v", j, err)
			} else if !ok || ev.Type != engine.EventJobCreated {
				fail(a, "event %d is %+v", a.seq, ev)
			}
		case "claim":
			if !ok || ev.Type != engine.EventJobLeased || strconv.FormatUint(ev.Attempt, 10) != a.name {
				fail(a, "event %d is %+v", a.seq, ev)
			}
		case "append":
			if !ok || ev.Type != "activity_started" {
				fail(a, "event %d is %+v", a.seq, ev)
			}
		case "commit":
			if !ok || !ev.Commit || ev.Step != a.name {
				fail(a, "event %d is %+v", a.seq, ev)
				continue
			}
			eff, err := e.Effect(bg, a.job, a.name)
			if err != nil || eff == nil || eff.CommittedSeq != a.seq {
				fail(a, "effect is %+v, %v", eff, err)
			}
		case "wait":
			if !ok || ev.Type != engine.EventJobWaiting {
				fail(a, "event %d is %+v", a.seq, ev)
			}
		case "signal":
			if !ok || ev.Type != engine.EventSignalReceived {
				fail(a, "event %d is %+v", a.seq, ev)
			}
		case "complete", "fail":
			want, wantEv := engine.StatusCompleted, engine.EventJobCompleted
			if a.kind == "fail" {
				want, wantEv = engine.StatusFailed, engine.EventJobFailed
			}
			j, err := e.Describe(bg, engine.Target{Job: a.job})
			if err != nil || j.Status != want {
				fail(a, "job is %+v, %v", j, err)
			} else if !ok || ev.Type != wantEv {
				fail(a, "event %d is %+v", a.seq, ev)
			}
		default:
			fail(a, "unknown kind")
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d acknowledged commands are missing or wrong after SIGKILL", bad, len(acks))
	}
	var errs []error
	if err := e.DB().View(func(r *storage.Reader) error { errs = machine.Verify(r, 20); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, err := range errs {
		t.Error(err)
	}
	if len(errs) > 0 {
		t.FailNow()
	}
}

// TestCrashChild is the child of TestCrashSafetySIGKILL; it does nothing
// unless HEDDLE_CRASH_CHILD_DIR names its directory. It runs until killed
// (or, should the parent vanish, for a minute).
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("run by TestCrashSafetySIGKILL only")
	}
	round := os.Getenv(crashRoundEnv)
	e, err := Open(Config{Dir: dir, OnSchedulerError: func(err error) {
		fmt.Fprintf(os.Stderr, "scheduler: %v\n", err)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := &ackWriter{}
	var wg sync.WaitGroup
	for w := range crashWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			crashWorker(ctx, e, out, round, w)
		}()
	}
	wg.Wait()
}

// ackWriter prints each acknowledgement with one write to the unbuffered
// stdout, so a line is either wholly in the pipe or not at all.
type ackWriter struct{ mu sync.Mutex }

func (a *ackWriter) ack(format string, args ...any) {
	line := fmt.Appendf([]byte("ACK "), format+"\n", args...)
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := os.Stdout.Write(line); err != nil {
		crashDie("write ack: %v", err)
	}
}

func crashDie(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "crash child: "+format+"\n", args...)
	os.Exit(2)
}

// crashWorker is one worker of the child: it starts workflows and works
// whatever the queue hands it (its own jobs, other workers', or those an
// earlier child left behind), through a mix of appends, step commits,
// heartbeats, waits and signals, completions and failures, and abandons one
// job in five with its lease running (the scheduler reclaims it later).
func crashWorker(ctx context.Context, e *Engine, out *ackWriter, round string, w int) {
	input := bytes.Repeat([]byte{'i'}, 200)
	owner := fmt.Sprintf("r%s-w%d", round, w)
	// fenced reports whether err is a stale attempt (the lease expired and
	// the job was reclaimed): the worker drops the job. Anything else is fatal.
	fenced := func(what string, err error) bool {
		if errors.Is(err, engine.ErrStaleAttempt) {
			return true
		}
		if ctx.Err() != nil {
			return true
		}
		crashDie("%s: %v", what, err)
		return false
	}
	for i := 0; ctx.Err() == nil; i++ {
		wf := fmt.Sprintf("r%s-w%02d-%d", round, w, i)
		c := engine.CreateJob{Header: engine.Header{RequestID: "rq-" + wf}, WorkflowID: wf, Type: "order", Queue: crashQueue, Input: input}
		cr, err := e.Create(ctx, c)
		if err != nil {
			fenced("create "+wf, err)
			return
		}
		out.ack("create %d 1 %s", cr.Job, wf)
		if i%8 == 7 { // a client retry: the same request must answer the same job
			again, err := e.Create(ctx, c)
			if err != nil {
				fenced("retry "+wf, err)
				return
			}
			if again.Job != cr.Job {
				crashDie("retry of %s answered job %d, first answer was %d", wf, again.Job, cr.Job)
			}
		}

		got, err := e.Claim(ctx, engine.Claim{Queue: crashQueue, Owner: owner, Max: 1, LeaseMS: crashLeaseMS})
		if err != nil {
			fenced("claim", err)
			return
		}
		if len(got) == 0 {
			continue
		}
		cj := got[0]
		out.ack("claim %d %d %d", cj.Job, cj.LastSeq, cj.Attempt)
		ref := engine.LeaseRef{Job: cj.Job, Attempt: cj.Attempt}
		step := fmt.Sprintf("charge-a%d", cj.Attempt)

		ar, err := e.Append(ctx, engine.AppendEvents{LeaseRef: ref, Events: []engine.NewEvent{{Type: "activity_started", Step: step}}})
		if err != nil {
			if fenced("append", err) {
				continue
			}
		}
		out.ack("append %d %d", cj.Job, ar.LastSeq)
		if _, err := e.HeartbeatOne(ctx, ref, crashLeaseMS); err != nil && fenced("heartbeat", err) {
			continue
		}
		cs, err := e.CommitStep(ctx, engine.CommitStep{LeaseRef: ref, Step: step, Type: "activity_completed", Payload: []byte(owner)})
		if err != nil {
			if fenced("commit", err) {
				continue
			}
		}
		out.ack("commit %d %d %s", cj.Job, cs.LastSeq, step)

		switch i % 5 {
		case 0, 1:
			st, err := e.Complete(ctx, engine.Complete{LeaseRef: ref, Result: []byte("done")})
			if err != nil {
				if fenced("complete", err) {
					continue
				}
			}
			out.ack("complete %d %d", cj.Job, st.Seq)
		case 2:
			st, err := e.Fail(ctx, engine.Fail{LeaseRef: ref, Error: []byte("boom")})
			if err != nil {
				if fenced("fail", err) {
					continue
				}
			}
			out.ack("fail %d %d", cj.Job, st.Seq)
		case 3:
			wr, err := e.Wait(ctx, engine.Wait{LeaseRef: ref, Spec: engine.WaitSpec{Signals: []string{"go"}}, SeenSeq: cs.LastSeq})
			if err != nil {
				if fenced("wait", err) {
					continue
				}
			}
			out.ack("wait %d %d", cj.Job, wr.Seq)
			// Wake it: it goes back to the queue for a later attempt.
			sr, err := e.Signal(ctx, engine.Signal{Target: engine.Target{WorkflowID: cj.WorkflowID}, Name: "go"})
			if err != nil {
				fenced("signal", err)
				return
			}
			out.ack("signal %d %d", sr.Job, sr.Seq)
		case 4:
			// Abandoned with its lease running.
		}
	}
}

// crashStderr is a bytes.Buffer safe for the exec copier and the test.
type crashStderr struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *crashStderr) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *crashStderr) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
