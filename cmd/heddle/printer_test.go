package main

// These tests drive what happens when output cannot be written: the
// printer keeps the first failure, and the command exits 1 saying why
// instead of 0 as if everything had been said.

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// brokenWriter takes room bytes, then fails every write, as a closed pipe
// or a full disk does.
type brokenWriter struct {
	room int
	got  bytes.Buffer
}

var errBroken = errors.New("write: broken on purpose")

func (b *brokenWriter) Write(p []byte) (int, error) {
	if len(p) > b.room {
		n := b.room
		b.got.Write(p[:n])
		b.room = 0
		return n, errBroken
	}
	b.room -= len(p)
	return b.got.Write(p)
}

func TestPrinterKeepsTheFirstFailure(t *testing.T) {
	w := &brokenWriter{room: 8}
	p := newPrinter(w)
	p.printf("%s\n", "one")
	if err := p.err(); err != nil {
		t.Fatalf("after a write that fit: %v", err)
	}
	p.println("two", 2)
	p.printf("three\n")
	if err := p.err(); !errors.Is(err, errBroken) {
		t.Errorf("after the writer broke: err %v, want %v", err, errBroken)
	}
	// Nothing is written after the failure, so the output stops where it
	// broke instead of going on with a hole.
	if got := w.got.String(); got != "one\ntwo " {
		t.Errorf("written %q, want %q", got, "one\ntwo ")
	}
	if n, err := p.Write([]byte("four\n")); n != 0 || !errors.Is(err, errBroken) {
		t.Errorf("Write after the failure = %d, %v; want 0, the first failure", n, err)
	}
}

// A writer that takes less than it was given without an error is a
// failure too (io.Writer's contract says it must return one).
func TestPrinterShortWrite(t *testing.T) {
	p := newPrinter(shortWriter{})
	p.printf("abc")
	if err := p.err(); err == nil {
		t.Error("a short write was not reported")
	}
}

type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return len(p) / 2, nil }

func TestOutputWriteFailureExitsOne(t *testing.T) {
	w := newWFEnv(t, "")
	for _, args := range [][]string{
		{"version"},                            // the command writes and checks
		{"--help"},                             // cobra writes the help and checks nothing
		{"workflow", "list", "--addr", w.addr}, // a table
		{"workflow", "list", "--addr", w.addr, "-o", "json"},
	} {
		var stderr bytes.Buffer
		code := run(args, &brokenWriter{}, &stderr)
		if code != 1 || !strings.Contains(stderr.String(), errBroken.Error()) {
			t.Errorf("heddle %s with a broken stdout: exit %d, stderr %q; want 1 naming the failure",
				strings.Join(args, " "), code, stderr.String())
		}
	}
	// A diagnostic that cannot be written fails the command too: with
	// -o jsonl, the cursor of the next page goes to stderr.
	for _, id := range []string{"broken-1", "broken-2"} {
		w.ok("start", "--type", "Gate", "--queue", wfIdleQueue, "--id", id)
	}
	var stdout bytes.Buffer
	code := run([]string{"workflow", "list", "--addr", w.addr, "-o", "jsonl", "--limit", "1"}, &stdout, &brokenWriter{})
	if code != 1 || strings.Count(stdout.String(), "\n") != 1 {
		t.Errorf("workflow list -o jsonl --limit 1 with a broken stderr: exit %d, stdout %q; want 1 and one run", code, stdout.String())
	}
}
