package raftfsm

import (
	"bytes"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

func newTestFSM(t *testing.T, opts storage.Options) *FSM {
	t.Helper()
	m, err := machine.NewMachine(engine.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	f := openTestFSM(t, opts, m)
	t.Cleanup(func() {
		if err := f.close(); err != nil {
			t.Errorf("closing the FSM: %v", err)
		}
	})
	return f
}

// openTestFSM opens an FSM applying commands with m; the caller closes it.
func openTestFSM(t *testing.T, opts storage.Options, m commandApplier) *FSM {
	t.Helper()
	state, err := newStateDir(filepath.Join(t.TempDir(), "state"), opts)
	if err != nil {
		t.Fatal(err)
	}
	f, err := newFSM(state, m)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func commandsEntry(t *testing.T, index uint64, cmds ...engine.Command) *raft.Log {
	t.Helper()
	var raw [][]byte
	for _, c := range cmds {
		b, err := machine.EncodeCommand(c)
		if err != nil {
			t.Fatal(err)
		}
		raw = append(raw, b)
	}
	data, err := encodeEntry(entryCommands, &commandsBody{Cmds: raw})
	if err != nil {
		t.Fatal(err)
	}
	return &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: data}
}

func creates(n, inputBytes int) []engine.Command {
	var out []engine.Command
	for i := 0; i < n; i++ {
		out = append(out, &engine.CreateJob{Header: engine.Header{NowMS: 1000}, Type: "t", Queue: "q", Input: bytes.Repeat([]byte{byte(i)}, inputBytes)})
	}
	return out
}

// storedApplied returns the applied index the FSM's database holds.
func storedApplied(t *testing.T, f *FSM) uint64 {
	t.Helper()
	var idx uint64
	err := f.View(func(r *storage.Reader) error {
		var err error
		idx, err = storage.AppliedIndex(r)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func countJobs(t *testing.T, f *FSM) int {
	t.Helper()
	n := 0
	err := f.View(func(r *storage.Reader) error {
		return r.Scan(storage.JobPrefix, nil, false, func([]byte, []byte) (bool, error) { n++; return true, nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// An entry whose writes overflow one Badger transaction is applied in
// several, with the same result as in one.
func TestEntrySplitAcrossTransactions(t *testing.T) {
	small := newTestFSM(t, storage.Options{NoSync: true, MemTableBytes: 1 << 20})
	large := newTestFSM(t, storage.Options{NoSync: true})
	cmds := creates(200, 16<<10) // about 3 MiB of inputs, over small's batch
	if int64(200*16<<10) < storage.MaxBatchBytes(storage.Options{MemTableBytes: 1 << 20}) {
		t.Fatal("the entry would fit one small batch; the test proves nothing")
	}
	for _, f := range []*FSM{small, large} {
		out := f.ApplyBatch([]*raft.Log{commandsEntry(t, 1, cmds...)})[0].(*entryOutcome)
		for i, err := range out.errs {
			if err != nil {
				t.Fatalf("command %d: %v", i, err)
			}
		}
	}
	if a, b := hashState(t, small), hashState(t, large); a != b {
		t.Fatalf("split apply %s differs from single apply %s", a[:12], b[:12])
	}
}

// A node that crashed between the transactions of one entry finds the
// entry's progress stored and resumes after the commands it holds.
func TestEntryResumesAfterPartialApply(t *testing.T) {
	f := newTestFSM(t, storage.Options{NoSync: true})
	f.ApplyBatch([]*raft.Log{commandsEntry(t, 1, creates(1, 1)...)})
	// Pretend three of entry 2's six commands were committed before a crash.
	f.ApplyBatch([]*raft.Log{commandsEntry(t, 2, creates(3, 1)...)})
	b := f.db.NewBatch()
	tx := b.Begin()
	tx.Set(keyEntryPart, partValue(3, 3))
	storage.SetAppliedIndex(tx, 2)
	if err := b.Add(tx); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	out := f.ApplyBatch([]*raft.Log{commandsEntry(t, 3, creates(6, 1)...)})[0].(*entryOutcome)
	for i := 0; i < 3; i++ {
		if !errors.Is(out.errs[i], engine.ErrUnknownOutcome) {
			t.Fatalf("command %d = %v, want ErrUnknownOutcome (applied before the crash)", i, out.errs[i])
		}
	}
	for i := 3; i < 6; i++ {
		if out.errs[i] != nil {
			t.Fatalf("command %d: %v", i, out.errs[i])
		}
	}
	if n := countJobs(t, f); n != 1+3+3 {
		t.Fatalf("%d jobs, want 7: the resumed entry applied its first commands again", n)
	}
}

// A malformed entry fails alike on every node: it writes nothing but the
// applied index, and its proposer hears a typed error.
func TestBadEntryWritesNothing(t *testing.T) {
	f := newTestFSM(t, storage.Options{NoSync: true})
	f.ApplyBatch([]*raft.Log{commandsEntry(t, 1, creates(2, 1)...)})
	out := f.ApplyBatch([]*raft.Log{{Index: 2, Type: raft.LogCommand, Data: []byte{entryVersion, 99, 0xc0}}})[0].(*entryOutcome)
	var ee *EntryError
	if !errors.As(out.errs[0], &ee) || ee.Index != 2 || ee.Code() != BadEntryCode {
		t.Fatalf("bad entry = %v, want an EntryError at index 2", out.errs[0])
	}
	if f.Applied() != 2 {
		t.Fatalf("applied = %d, want 2", f.Applied())
	}
	// Only the applied index moved.
	idx := storedApplied(t, f)
	if idx != 2 || countJobs(t, f) != 2 {
		t.Fatalf("applied index %d, %d jobs after a bad entry", idx, countJobs(t, f))
	}
}

// A corrupt snapshot is refused and the live state stays as it was, in a
// directory of its own (a node of one group) and in a keyspace of the
// node's store (a shard replica of a sharded node).
func TestCorruptRestoreKeepsState(t *testing.T) {
	opts := storage.Options{NoSync: true}
	t.Run("directory", func(t *testing.T) { testCorruptRestoreKeepsState(t, newTestFSM(t, opts)) })
	t.Run("keyspace", func(t *testing.T) {
		store := openTestStore(t, opts)
		m, err := machine.NewMachine(engine.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		f, err := newFSM(store.replica(3, ""), m)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := f.close(); err != nil {
				t.Errorf("closing the FSM: %v", err)
			}
		})
		testCorruptRestoreKeepsState(t, f)
		// The old generation is cleared once retired, and the node's store
		// holds the one live generation alone.
		if err := f.close(); err != nil {
			t.Fatal(err)
		}
		if got := keyspacesOf(t, store); !slices.Equal(got, []string{"shard 3 generation 1"}) {
			t.Fatalf("the store holds %v", got)
		}
	})
}

func testCorruptRestoreKeepsState(t *testing.T, f *FSM) {
	f.ApplyBatch([]*raft.Log{commandsEntry(t, 1, creates(3, 1)...)})
	want := hashState(t, f)
	var snap bytes.Buffer
	if _, err := f.db.WriteSnapshot(&snap); err != nil {
		t.Fatal(err)
	}
	bad := snap.Bytes()[:snap.Len()-3]
	if err := f.Restore(nopCloser{bytes.NewReader(bad)}); !errors.Is(err, storage.ErrCorrupt) {
		t.Fatalf("restore of a truncated snapshot = %v, want ErrCorrupt", err)
	}
	if got := hashState(t, f); got != want || f.state.generation() != 0 {
		t.Fatalf("state after a refused restore: %s gen %d, want %s gen 0", got[:12], f.state.generation(), want[:12])
	}
	// A good snapshot swaps in a new generation with the same contents.
	if err := f.Restore(nopCloser{bytes.NewReader(snap.Bytes())}); err != nil {
		t.Fatal(err)
	}
	if got := hashState(t, f); got != want || f.state.generation() != 1 || f.Applied() != 1 {
		t.Fatalf("after restore: %s gen %d applied %d", got[:12], f.state.generation(), f.Applied())
	}
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

func TestDecodeEntryRejects(t *testing.T) {
	good, _ := encodeEntry(entryNode, &nodeBody{ID: "n1", HTTPAddr: "h"})
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "shorter than"},
		{"version", []byte{9, 1, 0x80}, "version 9"},
		{"kind", []byte{entryVersion, 7, 0x80}, "unknown kind 7"},
		{"truncated", good[:len(good)-1], "malformed body"},
		{"trailing", append(append([]byte(nil), good...), 0), "bytes after"},
		{"a length beyond the bytes", []byte{entryVersion, byte(entryCommands), 0x81, 0xa1, 'c', 0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0}, "only 1 bytes are left"},
		{"nested too deep", append(append([]byte{entryVersion, byte(entryCommands)}, bytes.Repeat([]byte{0x91}, 1_000_000)...), 0xc0), "nested deeper than 4 levels"},
		{"no commands", mustEntry(t, entryCommands, &commandsBody{}), "0 commands"},
		{"node without id", mustEntry(t, entryNode, &nodeBody{}), "without an id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeEntry(tc.b)
			if !errors.Is(err, ErrBadEntry) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("decodeEntry = %v, want ErrBadEntry mentioning %q", err, tc.want)
			}
		})
	}
	if e, err := decodeEntry(good); err != nil || e.node.ID != "n1" {
		t.Fatalf("good entry: %+v, %v", e, err)
	}
}

func mustEntry(t *testing.T, k entryKind, body any) []byte {
	t.Helper()
	b, err := encodeEntry(k, body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func FuzzDecodeEntry(f *testing.F) {
	good, _ := encodeEntry(entryNode, &nodeBody{ID: "n1", HTTPAddr: "127.0.0.1:1"})
	cmd, _ := machine.EncodeCommand(&engine.CreateJob{Type: "t", Queue: "q"})
	cmds, _ := encodeEntry(entryCommands, &commandsBody{Cmds: [][]byte{cmd, cmd}})
	f.Add(good)
	f.Add(cmds)
	f.Add([]byte{entryVersion, byte(entryCommands), 0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Add(append(append([]byte{entryVersion, byte(entryCommands)}, bytes.Repeat([]byte{0x91}, 200)...), 0xc0))
	f.Add([]byte{entryVersion, byte(entryNode), 0x81, 0xa1, 'i', 0xdb, 0xff, 0xff, 0xff, 0xff, 'n'})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEntry(b)
		if err != nil {
			if !errors.Is(err, ErrBadEntry) {
				t.Fatalf("error %v is not ErrBadEntry", err)
			}
			return
		}
		// What decodes must re-encode to an entry that decodes the same.
		var body any = &commandsBody{Cmds: e.cmds}
		if e.kind == entryNode {
			body = e.node
		}
		again, err := decodeEntry(mustEntry(t, e.kind, body))
		if err != nil || len(again.cmds) != len(e.cmds) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// Applying tells the engine (onApply) the job records each batch wrote
// and the jobs it closed, for the waiters on a run's changes and on its
// result: a run's creation writes its record and closes nothing; a run's
// termination writes it and closes it, beside another run's creation in
// the same batch.
func TestApplyTellsTheJobsItClosed(t *testing.T) {
	f := newTestFSM(t, storage.Options{NoSync: true})
	type call struct{ touched, closed []uint64 }
	var calls []call
	f.onApply = func(touched, closed []uint64) { calls = append(calls, call{touched, closed}) }
	out := f.ApplyBatch([]*raft.Log{commandsEntry(t, 1, creates(2, 1)...)})[0].(*entryOutcome)
	if out.errs[0] != nil || out.errs[1] != nil {
		t.Fatalf("creating: %v", out.errs)
	}
	a, b := out.results[0].(*engine.CreateResult).Job, out.results[1].(*engine.CreateResult).Job
	if len(calls) != 1 || !slices.Equal(calls[0].touched, []uint64{uint64(a), uint64(b)}) || len(calls[0].closed) != 0 {
		t.Fatalf("after the creates: onApply calls %+v; want one, touching %d and %d, closing none", calls, a, b)
	}
	calls = nil
	out2 := f.ApplyBatch([]*raft.Log{
		commandsEntry(t, 2, creates(1, 1)...),
		commandsEntry(t, 3, &engine.Terminate{Header: engine.Header{NowMS: 2000}, Target: engine.Target{Job: b}, Reason: "test"}),
	})
	if err := out2[1].(*entryOutcome).errs[0]; err != nil {
		t.Fatalf("terminating: %v", err)
	}
	if err := out2[0].(*entryOutcome).errs[0]; err != nil {
		t.Fatalf("creating: %v", err)
	}
	c := out2[0].(*entryOutcome).results[0].(*engine.CreateResult).Job
	if len(calls) != 1 || !slices.Contains(calls[0].touched, uint64(b)) || !slices.Contains(calls[0].touched, uint64(c)) ||
		!slices.Equal(calls[0].closed, []uint64{uint64(b)}) {
		t.Fatalf("after the termination: onApply calls %+v; want one, touching %d and %d, closing %d alone", calls, b, c, b)
	}
}
