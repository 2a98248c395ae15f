package storage

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A SIGKILL in the middle of writing leaves the torn tail the integrity
// checks must accept without a word: a child process (this test binary,
// running TestCrashWriterChild) commits transactions as fast as it can and
// prints each one's number once Commit returned; the parent kills it at a
// random moment, reopens the directory (which must not be refused) and
// checks that every acknowledged transaction is there. Large values go to
// the value log, so both kinds of log are cut mid-write.

const (
	crashWriterDirEnv   = "HEDDLE_STORAGE_CRASH_DIR"
	crashWriterStartEnv = "HEDDLE_STORAGE_CRASH_START"
	crashWriterSeedEnv  = "HEDDLE_STORAGE_CRASH_SEED"
	crashWriterKeys     = 6 // keys per transaction
)

// crashValue is key j of transaction n: every third one large enough for
// the value log.
func crashValue(n, j int) []byte {
	size := 200 + (n*7+j*13)%900
	if j%3 == 0 {
		size = 5000 + (n*11)%4000
	}
	return bytes.Repeat([]byte{byte('a' + (n+j)%26)}, size)
}

func crashKey(n, j int) []byte { return fmt.Appendf(nil, "c%08d/%d", n, j) }

func TestCrashWriterChild(t *testing.T) {
	dir := os.Getenv(crashWriterDirEnv)
	if dir == "" {
		t.Skip("the child of TestSIGKILLMidWriteOpensCleanly")
	}
	start, err := strconv.Atoi(os.Getenv(crashWriterStartEnv))
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(Options{Dir: dir, ReserveBytes: -1, MemTableBytes: 4 << 20})
	if err != nil {
		fmt.Printf("OPEN %v\n", err)
		os.Exit(3)
	}
	out := bufio.NewWriter(os.Stdout)
	for n := start; ; n++ {
		b := db.NewBatch()
		tx := b.Begin()
		for j := range crashWriterKeys {
			tx.Set(crashKey(n, j), crashValue(n, j))
		}
		if err := b.Add(tx); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
		if _, err := fmt.Fprintf(out, "ACK %d\n", n); err != nil {
			os.Exit(4)
		}
		if err := out.Flush(); err != nil {
			os.Exit(4)
		}
	}
}

func TestSIGKILLMidWriteOpensCleanly(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("re-executes itself and SIGKILLs the child: Linux only")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(crashWriterSeedEnv); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seed = v
	}
	t.Logf("seed %d (rerun with %s=%d)", seed, crashWriterSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	dir := t.TempDir()
	next := 0
	for round := 1; round <= 3; round++ {
		target := 50 + rng.IntN(400)
		acked := runCrashWriter(t, dir, next, target)
		t.Logf("round %d: killed the writer after %d acknowledged transactions", round, acked-next)
		db, err := Open(Options{Dir: dir, ReserveBytes: -1, MemTableBytes: 4 << 20})
		if err != nil {
			t.Fatalf("round %d: reopening after SIGKILL: %v", round, err)
		}
		for n := range acked {
			for j := range crashWriterKeys {
				v, err := db.Get(crashKey(n, j))
				if err != nil || !bytes.Equal(v, crashValue(n, j)) {
					t.Fatalf("round %d: acknowledged transaction %d key %d: %d bytes, %v", round, n, j, len(v), err)
				}
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		next = acked
	}
}

// runCrashWriter runs the child from transaction start, kills it once it
// acknowledged target more, and returns the number after the last one
// acknowledged.
func runCrashWriter(t *testing.T, dir string, start, target int) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashWriterChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashWriterDirEnv+"="+dir, crashWriterStartEnv+"="+strconv.Itoa(start))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := start
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "ACK "); ok {
			v, err := strconv.Atoi(n)
			if err != nil {
				t.Fatalf("child printed %q", line)
			}
			acked = v + 1
			if acked-start >= target {
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				break
			}
		} else if strings.HasPrefix(line, "OPEN ") {
			t.Fatalf("the child could not open the directory: %s", line)
		}
	}
	// Acknowledgements printed before the kill landed count too.
	for sc.Scan() {
		if n, ok := strings.CutPrefix(sc.Text(), "ACK "); ok {
			if v, err := strconv.Atoi(n); err == nil {
				acked = v + 1
			}
		}
	}
	werr := cmd.Wait()
	ee, ok := werr.(*exec.ExitError)
	if !ok {
		t.Fatalf("the child ended with %v, not by SIGKILL\nstderr:\n%s", werr, stderr.String())
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the child ended with %v, not by SIGKILL\nstderr:\n%s", werr, stderr.String())
	}
	return acked
}
