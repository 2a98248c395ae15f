package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// openMem opens a small in-memory database that is closed when the test ends.
// The smallest memtable keeps Badger's batch limits, and so the tests of
// ErrBatchFull and ErrTooLarge, small.
func openMem(t testing.TB) *DB {
	t.Helper()
	db, err := Open(Options{InMemory: true, MemTableBytes: 1 << 20, BlockCacheBytes: 1 << 20})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

// commit runs fn in one Tx of a fresh batch and commits it.
func commit(t testing.TB, db *DB, fn func(tx *Tx)) {
	t.Helper()
	b := db.NewBatch()
	tx := b.Begin()
	fn(tx)
	if err := b.Add(tx); err != nil {
		b.Discard()
		t.Fatalf("Add: %v", err)
	}
	if err := b.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

// putAll writes kvs one Tx per key, starting a new batch whenever one fills.
func putAll(t testing.TB, db *DB, kvs map[string]string) {
	t.Helper()
	keys := make([]string, 0, len(kvs))
	for k := range kvs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b := db.NewBatch()
	for _, k := range keys {
		tx := b.Begin()
		tx.Set([]byte(k), []byte(kvs[k]))
		err := b.Add(tx)
		if errors.Is(err, ErrBatchFull) {
			if err := b.Commit(); err != nil {
				t.Fatalf("Commit: %v", err)
			}
			b = db.NewBatch()
			err = b.Add(tx)
		}
		if err != nil {
			t.Fatalf("Add %q: %v", k, err)
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

// dump returns every key and value in db.
func dump(t testing.TB, db *DB) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := db.View(func(r *Reader) error {
		return r.Scan(nil, nil, true, func(k, v []byte) (bool, error) {
			out[string(k)] = string(v)
			return true, nil
		})
	})
	if err != nil {
		t.Fatalf("dump: %v", err)
	}
	return out
}

func wantCorrupt(t *testing.T, err error, reason string) {
	t.Helper()
	var ce *CorruptError
	if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a *CorruptError", err)
	}
	if !strings.Contains(err.Error(), reason) {
		t.Errorf("err = %q, want it to mention %q", err, reason)
	}
	if ce.Code() != CorruptCode || !strings.Contains(err.Error(), CorruptCode) {
		t.Errorf("err = %q, want code %s", err, CorruptCode)
	}
}

// --- keys ---

func TestKeyOrderIsNumeric(t *testing.T) {
	ordered := [][]byte{
		ReadyKey("q", 0, 1<<60),
		ReadyKey("q", 1, 9),
		ReadyKey("q", 1, 10),
		ReadyKey("q", 255, 0),
		ReadyKey("q", 256, 0),
		ReadyKey("q", 1<<40, 0),
		ReadyKey("q", math.MaxInt64, 0),
	}
	for i := 1; i < len(ordered); i++ {
		if bytes.Compare(ordered[i-1], ordered[i]) >= 0 {
			e0, _ := ParseReadyKey(ordered[i-1])
			e1, _ := ParseReadyKey(ordered[i])
			t.Errorf("ReadyKey %+v does not sort before %+v", e0, e1)
		}
	}
	for _, mk := range []func(at int64, id uint64) []byte{
		LeaseKey,
		DelayedKey,
		DeadlineKey,
		func(at int64, id uint64) []byte { return TimerKey(at, id, "zzz") },
		func(at int64, id uint64) []byte { return RequestAgeKey(at, "zzz") },
	} {
		a, b, c := mk(1, 7), mk(256, 0), mk(1<<40, 0)
		if bytes.Compare(a, b) >= 0 || bytes.Compare(b, c) >= 0 {
			t.Errorf("time keys with prefix %q do not sort by time", a[:1])
		}
	}
	if bytes.Compare(EventKey(1, 255), EventKey(1, 256)) >= 0 || bytes.Compare(EventKey(1, 1<<40), EventKey(2, 0)) >= 0 {
		t.Error("event keys do not sort by job, then sequence")
	}
	if bytes.Compare(JobKey(255), JobKey(256)) >= 0 {
		t.Error("job keys do not sort numerically")
	}
}

func TestKeyRangesDoNotOverlap(t *testing.T) {
	a := ReadyPrefix("a")
	end := PrefixEnd(a)
	for _, k := range [][]byte{
		ReadyKey("ab", 0, 0),
		ReadyKey("ab", math.MaxInt64, math.MaxUint64),
		ReadyKey("", math.MaxInt64, math.MaxUint64),
		ReadyKey("b", 0, 0),
	} {
		if bytes.HasPrefix(k, a) || (bytes.Compare(k, a) >= 0 && bytes.Compare(k, end) < 0) {
			t.Errorf("key %q of another queue falls in the range of queue \"a\"", k)
		}
	}
	for _, k := range [][]byte{ReadyKey("a", 0, 0), ReadyKey("a", math.MaxInt64, math.MaxUint64)} {
		if !bytes.HasPrefix(k, a) || bytes.Compare(k, end) >= 0 {
			t.Errorf("key %q of queue \"a\" is outside its range", k)
		}
	}
	for _, pair := range [][2][]byte{
		{TypePrefix("a"), TypeKey("ab", 1)},
		{QueuePrefix("a"), QueueKey("ab", 1)},
	} {
		if bytes.HasPrefix(pair[1], pair[0]) {
			t.Errorf("%q has prefix %q of a shorter name", pair[1], pair[0])
		}
	}

	// The same through a real scan.
	db := openMem(t)
	commit(t, db, func(tx *Tx) {
		tx.Set(ReadyKey("a", 5, 1), nil)
		tx.Set(ReadyKey("ab", 1, 2), nil)
		tx.Set(ReadyKey("a", 2, 3), nil)
		tx.Set(ReadyKey("b", 0, 4), nil)
		tx.Set(ReadyKey("", 0, 5), nil)
	})
	var jobs []uint64
	err := db.View(func(r *Reader) error {
		return r.Scan(ReadyPrefix("a"), nil, false, func(k, _ []byte) (bool, error) {
			e, err := ParseReadyKey(k)
			if err != nil {
				return false, err
			}
			if e.Queue != "a" {
				t.Errorf("scan of queue a returned %+v", e)
			}
			jobs = append(jobs, e.Job)
			return true, nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(jobs, []uint64{3, 1}) {
		t.Errorf("queue a holds jobs %v, want [3 1] (readyAt order)", jobs)
	}
}

func TestParseKeysRoundTrip(t *testing.T) {
	re, err := ParseReadyKey(ReadyKey("orders", 1234567, 42))
	if err != nil || re != (ReadyEntry{Queue: "orders", ReadyAtMS: 1234567, Job: 42}) {
		t.Errorf("ParseReadyKey = %+v, %v", re, err)
	}
	re, err = ParseReadyKey(ReadyKey("", 0, 0))
	if err != nil || re != (ReadyEntry{}) {
		t.Errorf("ParseReadyKey(empty queue) = %+v, %v", re, err)
	}

	for _, tc := range []struct {
		name string
		key  []byte
		want TimeKey
	}{
		{"lease", LeaseKey(1000, 7), TimeKey{AtMS: 1000, Job: 7}},
		{"timer", TimerKey(2000, 8, "wake-up"), TimeKey{AtMS: 2000, Job: 8, Rest: "wake-up"}},
		{"timer without name", TimerKey(2000, 8, ""), TimeKey{AtMS: 2000, Job: 8}},
		{"delayed", DelayedKey(3000, 9), TimeKey{AtMS: 3000, Job: 9}},
		{"deadline", DeadlineKey(3500, 10), TimeKey{AtMS: 3500, Job: 10}},
		{"request age", RequestAgeKey(4000, "req-1"), TimeKey{AtMS: 4000, Rest: "req-1"}},
		{"max", LeaseKey(math.MaxInt64, math.MaxUint64), TimeKey{AtMS: math.MaxInt64, Job: math.MaxUint64}},
	} {
		got, err := ParseTimeKey(tc.key)
		if err != nil || got != tc.want {
			t.Errorf("%s: ParseTimeKey = %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}

	if id, err := ParseJobKey(JobKey(1 << 50)); err != nil || id != 1<<50 {
		t.Errorf("ParseJobKey = %d, %v", id, err)
	}
	if job, seq, err := ParseEventKey(EventKey(3, 300)); err != nil || job != 3 || seq != 300 {
		t.Errorf("ParseEventKey = %d, %d, %v", job, seq, err)
	}
	for _, k := range [][]byte{
		ReadyKey("q", 5, 77), StatusKey(2, 77), TypeKey("billing", 77), QueueKey("q", 77), JobKey(77),
	} {
		if id, err := TrailingJob(k); err != nil || id != 77 {
			t.Errorf("TrailingJob(%q) = %d, %v", k, id, err)
		}
	}

	bad := []struct {
		name string
		fn   func() error
	}{
		{"ready key of a job", func() error { _, err := ParseReadyKey(JobKey(1)); return err }},
		{"ready key too long", func() error { _, err := ParseReadyKey(append(ReadyKey("q", 1, 1), 0)); return err }},
		{"ready key too short", func() error { _, err := ParseReadyKey(ReadyKey("q", 1, 1)[:10]); return err }},
		{"ready key bad length", func() error { _, err := ParseReadyKey([]byte{PrefixReady, 0xff, 0xff}); return err }},
		{"time key of a job", func() error { _, err := ParseTimeKey(JobKey(1)); return err }},
		{"time key too short", func() error { _, err := ParseTimeKey(LeaseKey(1, 1)[:8]); return err }},
		{"lease key too long", func() error { _, err := ParseTimeKey(append(LeaseKey(1, 1), 'x')); return err }},
		{"delayed key short", func() error { _, err := ParseTimeKey(DelayedKey(1, 1)[:12]); return err }},
		{"deadline key long", func() error { _, err := ParseTimeKey(append(DeadlineKey(1, 1), 'x')); return err }},
		{"timer key short", func() error { _, err := ParseTimeKey(TimerKey(1, 1, "")[:16]); return err }},
		{"job key of an event", func() error { _, err := ParseJobKey(EventKey(1, 1)); return err }},
		{"job key empty", func() error { _, err := ParseJobKey(nil); return err }},
		{"event key of a job", func() error { _, _, err := ParseEventKey(JobKey(1)); return err }},
		{"trailing job short", func() error { _, err := TrailingJob([]byte("s1234567")); return err }},
	}
	for _, tc := range bad {
		err := tc.fn()
		var ce *CorruptError
		if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) || ce.Kind != KindKey {
			t.Errorf("%s: err = %v, want a key *CorruptError", tc.name, err)
		}
	}
}

func TestPrefixEnd(t *testing.T) {
	for _, tc := range []struct{ in, want []byte }{
		{[]byte("a"), []byte("b")},
		{[]byte("ab"), []byte("ac")},
		{[]byte{'a', 0xff}, []byte("b")},
		{[]byte{'a', 0xfe, 0xff, 0xff}, []byte{'a', 0xff}},
		{[]byte{0xff, 0xff}, nil},
		{nil, nil},
	} {
		in := slices.Clone(tc.in)
		got := PrefixEnd(in)
		if !bytes.Equal(got, tc.want) || (tc.want == nil) != (got == nil) {
			t.Errorf("PrefixEnd(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if !bytes.Equal(in, tc.in) {
			t.Errorf("PrefixEnd modified its argument to %q", in)
		}
	}
	// Every key under the prefix sorts below the end.
	p := EventPrefix(5)
	if end := PrefixEnd(p); bytes.Compare(EventKey(5, math.MaxUint64), end) >= 0 || bytes.Compare(EventKey(6, 0), end) < 0 {
		t.Errorf("PrefixEnd(EventPrefix(5)) = %q splits the wrong keys", end)
	}
}

func TestU64(t *testing.T) {
	if v, err := ParseU64(U64(1<<63 + 5)); err != nil || v != 1<<63+5 {
		t.Errorf("ParseU64(U64(x)) = %d, %v", v, err)
	}
	_, err := ParseU64([]byte{1, 2, 3})
	wantCorrupt(t, err, "3 bytes")
}

// --- codec ---

type testRec struct {
	Name  string            `msgpack:"name"`
	N     int64             `msgpack:"n"`
	Tags  []string          `msgpack:"tags"`
	Attrs map[string]uint32 `msgpack:"attrs"`
}

func TestCodecRoundTrip(t *testing.T) {
	in := testRec{Name: "job-1", N: -1 << 40, Tags: []string{"a", "b"}, Attrs: map[string]uint32{"x": 1}}
	b, err := Encode(KindJob, 2, in)
	if err != nil {
		t.Fatal(err)
	}
	if Kind(b[0]) != KindJob || b[1] != 2 {
		t.Fatalf("header = % x, want kind %d version 2", b[:2], KindJob)
	}
	if !bytes.Equal(MustEncode(KindJob, 2, in), b) {
		t.Error("MustEncode differs from Encode")
	}
	var out testRec
	ver, err := Decode(b, KindJob, 3, &out)
	if err != nil || ver != 2 {
		t.Fatalf("Decode = %d, %v", ver, err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip gave %+v, want %+v", out, in)
	}
	if _, err := Encode(KindJob, 1, func() {}); err == nil {
		t.Error("Encode of a func succeeded")
	}
	if got := Kind(99).String(); got != "kind(99)" {
		t.Errorf("Kind(99).String() = %q", got)
	}
}

func TestCodecErrors(t *testing.T) {
	good := MustEncode(KindJob, 2, testRec{Name: "job-1", N: 5, Tags: []string{"t"}})
	with := func(f func(b []byte) []byte) []byte { return f(slices.Clone(good)) }
	for _, tc := range []struct {
		name   string
		b      []byte
		kind   Kind
		reason string
	}{
		{"empty", nil, KindJob, "0 bytes is too short"},
		{"one byte", good[:1], KindJob, "1 bytes is too short"},
		{"wrong kind", good, KindEvent, "type byte is job"},
		{"unknown kind", with(func(b []byte) []byte { b[0] = 77; return b }), KindJob, "type byte is kind(77)"},
		{"version 0", with(func(b []byte) []byte { b[1] = 0; return b }), KindJob, "version 0 is not in [1, 3]"},
		{"version above max", with(func(b []byte) []byte { b[1] = 4; return b }), KindJob, "version 4 is not in [1, 3]"},
		{"truncated", good[:len(good)-2], KindJob, "are left [HDL-MSGPACK-0001]"},
		{"header only", good[:2], KindJob, "the bytes end inside a value"},
		{"a length beyond the bytes", append([]byte{byte(KindJob), 1, 0xdd, 0xff, 0xff, 0xff, 0xff}, 0xc0), KindJob, "4294967295 more values are declared but only 1 bytes are left"},
		{"nested too deep", append(append([]byte{byte(KindJob), 1}, bytes.Repeat([]byte{0x91}, 33)...), 0xc0), KindJob, "nested deeper than 32 levels"},
		{"trailing", append(slices.Clone(good), 0xc0, 0xc0), KindJob, "2 trailing bytes"},
		{"wrong type", MustEncode(KindJob, 1, []int{1, 2}), KindJob, "corrupt job record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out testRec
			_, err := Decode(tc.b, tc.kind, 3, &out)
			wantCorrupt(t, err, tc.reason)
			if ce := err.(*CorruptError); ce.Kind != tc.kind || ce.Key != nil {
				t.Errorf("CorruptError = %+v, want kind %s and no key", ce, tc.kind)
			}
		})
	}
}

func TestDecodeAt(t *testing.T) {
	key := JobKey(12)
	good := MustEncode(KindJob, 1, testRec{Name: "x"})
	var out testRec
	if ver, err := DecodeAt(key, good, KindJob, 1, &out); err != nil || ver != 1 || out.Name != "x" {
		t.Fatalf("DecodeAt(good) = %d, %v, %+v", ver, err, out)
	}
	_, err := DecodeAt(key, good, KindEvent, 1, &out)
	wantCorrupt(t, err, fmt.Sprintf("at key %q", key))
	if ce := err.(*CorruptError); !bytes.Equal(ce.Key, key) {
		t.Errorf("CorruptError.Key = %q, want %q", ce.Key, key)
	}
	key[1] = 'Z' // the error must hold its own copy
	if ce := err.(*CorruptError); bytes.Equal(ce.Key, key) {
		t.Error("CorruptError.Key aliases the caller's key")
	}
}

// --- Tx and Batch ---

func TestTxOverlay(t *testing.T) {
	db := openMem(t)
	commit(t, db, func(tx *Tx) {
		for _, k := range []string{"p/a", "p/c", "p/e", "p/g", "o/x", "q/y"} {
			tx.Set([]byte(k), []byte("old-"+k))
		}
	})

	b := db.NewBatch()
	defer b.Discard()
	tx := b.Begin()
	tx.Set([]byte("p/b"), []byte("new-b"))   // new, between committed keys
	tx.Set([]byte("p/c"), []byte("first-c")) // overwritten twice
	tx.Set([]byte("p/c"), []byte("new-c"))
	tx.Delete([]byte("p/e"))               // committed key hidden
	tx.Set([]byte("p/h"), []byte("new-h")) // new, after every committed key
	tx.Set([]byte("p/0"), []byte("new-0")) // new, before every committed key
	tx.Set([]byte("p/z"), []byte("gone"))  // new, then deleted
	tx.Delete([]byte("p/z"))
	tx.Set([]byte("o/y"), []byte("other")) // outside the scanned prefix
	tx.Delete([]byte("p/never-existed"))   // deleting nothing

	for k, want := range map[string]string{
		"p/a": "old-p/a", "p/b": "new-b", "p/c": "new-c", "p/0": "new-0", "o/x": "old-o/x",
	} {
		if got, err := tx.Get([]byte(k)); err != nil || string(got) != want {
			t.Errorf("Get(%q) = %q, %v; want %q", k, got, err, want)
		}
	}
	for _, k := range []string{"p/e", "p/z", "p/never-existed", "p/missing"} {
		if _, err := tx.Get([]byte(k)); err != ErrNotFound {
			t.Errorf("Get(%q) err = %v, want ErrNotFound", k, err)
		}
		if ok, err := tx.Has([]byte(k)); ok || err != nil {
			t.Errorf("Has(%q) = %v, %v", k, ok, err)
		}
	}
	if ok, err := tx.Has([]byte("p/a")); !ok || err != nil {
		t.Errorf("Has(p/a) = %v, %v", ok, err)
	}
	if tx.Len() != 8 {
		t.Errorf("Len = %d, want 8 distinct keys", tx.Len())
	}

	type kv struct{ k, v string }
	scan := func(start string, withValues bool, limit int) []kv {
		t.Helper()
		var got []kv
		var s []byte
		if start != "" {
			s = []byte(start)
		}
		err := tx.Scan([]byte("p/"), s, withValues, func(k, v []byte) (bool, error) {
			if limit >= 0 && len(got) >= limit {
				t.Fatalf("Scan called fn after it returned false")
			}
			if !withValues && v != nil {
				t.Errorf("Scan without values passed %q", v)
			}
			got = append(got, kv{string(k), string(v)})
			return limit < 0 || len(got) < limit, nil
		})
		if err != nil {
			t.Fatalf("Scan: %v", err)
		}
		return got
	}
	all := []kv{
		{"p/0", "new-0"}, {"p/a", "old-p/a"}, {"p/b", "new-b"}, {"p/c", "new-c"}, {"p/g", "old-p/g"}, {"p/h", "new-h"},
	}
	if got := scan("", true, -1); !slices.Equal(got, all) {
		t.Errorf("Scan = %v, want %v", got, all)
	}
	if got := scan("p/c", true, -1); !slices.Equal(got, all[3:]) {
		t.Errorf("Scan from p/c = %v, want %v", got, all[3:])
	}
	if got := scan("p/d", true, -1); !slices.Equal(got, all[4:]) {
		t.Errorf("Scan from p/d = %v, want %v", got, all[4:])
	}
	if got := scan("o", true, -1); !slices.Equal(got, all) {
		t.Errorf("Scan from before the prefix = %v, want %v", got, all)
	}
	keysOnly := scan("", false, -1)
	for i := range keysOnly {
		if keysOnly[i].k != all[i].k {
			t.Errorf("Scan without values = %v", keysOnly)
			break
		}
	}
	for limit := 1; limit <= len(all); limit++ {
		if got := scan("", true, limit); !slices.Equal(got, all[:limit]) {
			t.Errorf("Scan stopping after %d = %v", limit, got)
		}
	}
	sentinel := errors.New("stop")
	if err := tx.Scan([]byte("p/"), nil, false, func(k, _ []byte) (bool, error) { return true, sentinel }); err != sentinel {
		t.Errorf("Scan returned %v, want the callback's error", err)
	}

	if k, err := tx.First([]byte("p/")); err != nil || string(k) != "p/0" {
		t.Errorf("First = %q, %v", k, err)
	}
	if _, err := tx.First([]byte("nothing/")); err != ErrNotFound {
		t.Errorf("First of an empty range: %v", err)
	}

	// The batch's transaction is untouched until the Tx is added.
	other := b.Begin()
	if _, err := other.Get([]byte("p/b")); err != ErrNotFound {
		t.Errorf("another Tx sees p/b before Add: %v", err)
	}
	if err := b.Add(tx); err != nil {
		t.Fatal(err)
	}
	next := b.Begin()
	if v, err := next.Get([]byte("p/c")); err != nil || string(v) != "new-c" {
		t.Errorf("next Tx in the batch reads p/c = %q, %v", v, err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"o/x": "old-o/x", "o/y": "other", "q/y": "old-q/y"}
	for _, e := range all {
		want[e.k] = e.v
	}
	if got := dump(t, db); !reflect.DeepEqual(got, want) {
		t.Errorf("after commit the database holds %v, want %v", got, want)
	}
}

func TestDroppedTxWritesNothing(t *testing.T) {
	db := openMem(t)
	commit(t, db, func(tx *Tx) { tx.Set([]byte("k1"), []byte("v1")) })

	b := db.NewBatch()
	dropped := b.Begin()
	dropped.Set([]byte("k2"), []byte("v2"))
	dropped.Delete([]byte("k1"))
	kept := b.Begin()
	kept.Set([]byte("k3"), []byte("v3"))
	if err := b.Add(kept); err != nil {
		t.Fatal(err)
	}
	check := b.Begin()
	if _, err := check.Get([]byte("k2")); err != ErrNotFound {
		t.Errorf("dropped write visible in the batch: %v", err)
	}
	if v, err := check.Get([]byte("k1")); err != nil || string(v) != "v1" {
		t.Errorf("dropped delete visible in the batch: %q, %v", v, err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"k1": "v1", "k3": "v3"}
	if got := dump(t, db); !reflect.DeepEqual(got, want) {
		t.Errorf("database holds %v, want %v", got, want)
	}

	empty := db.NewBatch()
	empty.Begin().Set([]byte("k4"), []byte("v4"))
	if !empty.Empty() {
		t.Error("batch with no added Tx is not Empty")
	}
	if err := empty.Commit(); err != nil {
		t.Fatalf("Commit of an empty batch: %v", err)
	}
	if _, err := db.Get([]byte("k4")); err != ErrNotFound {
		t.Errorf("k4 = %v, want ErrNotFound", err)
	}
}

func TestBatchTooLarge(t *testing.T) {
	db := openMem(t)
	val := bytes.Repeat([]byte("v"), 1000)

	b := db.NewBatch()
	defer b.Discard()
	big := b.Begin()
	for i := 0; big.Bytes() <= db.maxBytes; i++ {
		big.Set(fmt.Appendf(nil, "big/%05d", i), val)
	}
	if err := b.Add(big); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Add of %d bytes (limit %d) = %v, want ErrTooLarge", big.Bytes(), db.maxBytes, err)
	}
	many := b.Begin()
	for i := int64(0); i <= db.maxCount; i++ {
		many.Set(fmt.Appendf(nil, "n%d", i), nil)
	}
	if err := b.Add(many); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Add of %d keys (limit %d) = %v, want ErrTooLarge", many.Len(), db.maxCount, err)
	}
	if !b.Empty() {
		t.Error("batch is not empty after refused Adds")
	}
	small := b.Begin()
	small.Set([]byte("small"), []byte("ok"))
	if err := b.Add(small); err != nil {
		t.Fatalf("Add after ErrTooLarge: %v", err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := dump(t, db); !reflect.DeepEqual(got, map[string]string{"small": "ok"}) {
		t.Errorf("database holds %d keys, want only the small write", len(got))
	}
}

func TestBatchFull(t *testing.T) {
	db := openMem(t)
	val := bytes.Repeat([]byte("v"), 1000)
	fill := func(tx *Tx, n int) {
		for j := 0; j < 10; j++ {
			tx.Set(fmt.Appendf(nil, "tx%03d/%d", n, j), val)
		}
	}

	b := db.NewBatch()
	var added int
	var full *Tx
	for n := 0; full == nil; n++ {
		tx := b.Begin()
		fill(tx, n)
		switch err := b.Add(tx); {
		case err == nil:
			added++
		case errors.Is(err, ErrBatchFull):
			full = tx
			if want := int(db.maxBytes / tx.Bytes()); added != want {
				t.Errorf("batch took %d Txs of %d bytes before ErrBatchFull, want %d (limit %d)", added, tx.Bytes(), want, db.maxBytes)
			}
			if _, err := b.Begin().Get(fmt.Appendf(nil, "tx%03d/0", n)); err != ErrNotFound {
				t.Errorf("refused Tx's write visible in the batch: %v", err)
			}
		default:
			t.Fatalf("Add #%d: %v", n, err)
		}
		if n > 1000 {
			t.Fatal("batch never filled")
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := len(dump(t, db)); got != added*10 {
		t.Fatalf("after the first commit the database holds %d keys, want %d", got, added*10)
	}

	b2 := db.NewBatch()
	if err := b2.Add(full); err != nil {
		t.Fatalf("Add of the refused Tx to a fresh batch: %v", err)
	}
	if err := b2.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := len(dump(t, db)); got != (added+1)*10 {
		t.Errorf("after the second commit the database holds %d keys, want %d", got, (added+1)*10)
	}
	if v, err := db.Get(fmt.Appendf(nil, "tx%03d/9", added)); err != nil || !bytes.Equal(v, val) {
		t.Errorf("refused Tx's write after retry = %d bytes, %v", len(v), err)
	}
}

func TestAppliedIndex(t *testing.T) {
	db := openMem(t)
	read := func() uint64 {
		t.Helper()
		var idx uint64
		if err := db.View(func(r *Reader) (err error) { idx, err = AppliedIndex(r); return }); err != nil {
			t.Fatalf("AppliedIndex: %v", err)
		}
		return idx
	}
	if got := read(); got != 0 {
		t.Errorf("AppliedIndex of an empty database = %d, want 0", got)
	}
	commit(t, db, func(tx *Tx) {
		SetAppliedIndex(tx, 1<<40+3)
		if got, err := AppliedIndex(tx); err != nil || got != 1<<40+3 {
			t.Errorf("AppliedIndex through the Tx = %d, %v", got, err)
		}
	})
	if got := read(); got != 1<<40+3 {
		t.Errorf("AppliedIndex = %d, want %d", got, uint64(1<<40+3))
	}
	commit(t, db, func(tx *Tx) { tx.Set(KeyAppliedIndex, []byte{1}) })
	err := db.View(func(r *Reader) error { _, err := AppliedIndex(r); return err })
	wantCorrupt(t, err, "1 bytes")
}

// --- options ---

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		o     Options
		field string
	}{
		{Options{}, "Dir"},
		{Options{InMemory: true, Dir: "x"}, "Dir"},
		{Options{Dir: "x", MemTableBytes: -1}, "MemTableBytes"},
		{Options{Dir: "x", MemTableBytes: 1<<20 - 1}, "MemTableBytes"},
		{Options{Dir: "x", NumMemtables: -1}, "NumMemtables"},
		{Options{Dir: "x", NumMemtables: 1}, "NumMemtables"},
		{Options{Dir: "x", BlockCacheBytes: -1}, "BlockCacheBytes"},
		{Options{Dir: "x", ValueThresholdBytes: -1}, "ValueThresholdBytes"},
		{Options{Dir: "x", ValueThresholdBytes: 1<<20 + 1}, "ValueThresholdBytes"},
		{Options{Dir: "x", MemTableBytes: 1 << 20, ValueThresholdBytes: 200 << 10}, "ValueThresholdBytes"},
		{Options{Dir: "x", ValueLogFileBytes: -1}, "ValueLogFileBytes"},
		{Options{Dir: "x", ValueLogFileBytes: 1000}, "ValueLogFileBytes"},
	} {
		err := tc.o.Validate()
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tc.field+" ") {
			t.Errorf("Validate(%+v) = %v, want ErrInvalidOptions naming %s", tc.o, err, tc.field)
		}
		if _, err := Open(tc.o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("Open(%+v) = %v, want ErrInvalidOptions", tc.o, err)
		}
	}
	for _, o := range []Options{
		{InMemory: true},
		{Dir: "x"},
		{Dir: "x", NoSync: true, MemTableBytes: 1 << 20, NumMemtables: 2, ValueThresholdBytes: 1 << 10, ValueLogFileBytes: 1 << 20},
		{Dir: "x", ValueThresholdBytes: 1 << 20},
		{InMemory: true, MemTableBytes: 1 << 20, BlockCacheBytes: 0},
	} {
		if err := o.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v, want nil", o, err)
		}
	}
	db := openMem(t)
	if o := db.Options(); o.MemTableBytes != 1<<20 || o.NumMemtables != DefaultNumMemtables ||
		o.ValueThresholdBytes != DefaultValueThresholdBytes || o.Logger == nil {
		t.Errorf("Options() = %+v, want defaults filled in", o)
	}
}

// --- snapshots ---

// snapshotData is a keyspace of a few thousand keys of every kind.
func snapshotData() map[string]string {
	kvs := map[string]string{string(KeyAppliedIndex): string(U64(4242))}
	for i := uint64(0); i < 600; i++ {
		kvs[string(JobKey(i))] = strings.Repeat("j", int(i%97))
		kvs[string(EventKey(i, i%3))] = fmt.Sprintf("event %d", i)
		kvs[string(ReadyKey(fmt.Sprintf("q%d", i%4), int64(i)*1000, i))] = ""
		kvs[string(TimerKey(int64(i), i, "t"))] = ""
		kvs[string(RequestKey(fmt.Sprintf("req-%d", i)))] = strings.Repeat("r", int(i%300))
	}
	return kvs
}

// encodeSnapshot builds a snapshot by hand from the format description, so
// the writer is checked against the format and not against itself.
func encodeSnapshot(kvs map[string]string) []byte {
	keys := make([]string, 0, len(kvs))
	for k := range kvs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b := []byte("HDLSNAP1")
	for _, k := range keys {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = binary.AppendUvarint(b, uint64(len(kvs[k])))
		b = append(b, kvs[k]...)
	}
	b = append(b, 0)
	b = binary.AppendUvarint(b, uint64(len(keys)))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

func TestSnapshotRoundTrip(t *testing.T) {
	src := openMem(t)
	want := snapshotData()
	putAll(t, src, want)

	var buf bytes.Buffer
	info, err := src.WriteSnapshot(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if info.Keys != int64(len(want)) || info.Bytes != int64(buf.Len()) || info.AppliedIndex != 4242 {
		t.Errorf("WriteSnapshot info = %+v, want %d keys, %d bytes, index 4242", info, len(want), buf.Len())
	}
	if enc := encodeSnapshot(want); !bytes.Equal(buf.Bytes(), enc) {
		t.Errorf("snapshot is not in the documented format (%d bytes, hand-built %d)", buf.Len(), len(enc))
	}

	dst := openMem(t)
	linfo, err := dst.LoadSnapshot(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if linfo != info {
		t.Errorf("LoadSnapshot info = %+v, want %+v", linfo, info)
	}
	if got := dump(t, dst); !reflect.DeepEqual(got, want) {
		t.Errorf("loaded database differs: %d keys, want %d", len(got), len(want))
	}
	if idx, err := dst.Get(KeyAppliedIndex); err != nil || !bytes.Equal(idx, U64(4242)) {
		t.Errorf("loaded applied index = %x, %v", idx, err)
	}

	if _, err := dst.LoadSnapshot(bytes.NewReader(buf.Bytes())); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("LoadSnapshot into a non-empty database = %v", err)
	}
}

func TestSnapshotEmpty(t *testing.T) {
	var buf bytes.Buffer
	info, err := openMem(t).WriteSnapshot(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if want := encodeSnapshot(nil); !bytes.Equal(buf.Bytes(), want) || info != (SnapshotInfo{Bytes: int64(len(want))}) {
		t.Errorf("empty snapshot = % x, %+v; want % x", buf.Bytes(), info, want)
	}
	dst := openMem(t)
	if info, err := dst.LoadSnapshot(&buf); err != nil || info.Keys != 0 {
		t.Fatalf("LoadSnapshot(empty) = %+v, %v", info, err)
	}
	if got := dump(t, dst); len(got) != 0 {
		t.Errorf("loaded empty snapshot holds %v", got)
	}
}

// hookWriter runs hook on the first write that reaches it: with the
// snapshot's buffering, that is in the middle of the iteration.
type hookWriter struct {
	bytes.Buffer
	hook  func()
	first int // size of the first write, which ran the hook
}

func (w *hookWriter) Write(p []byte) (int, error) {
	if w.hook != nil {
		w.hook()
		w.hook = nil
		w.first = len(p)
	}
	return w.Buffer.Write(p)
}

func TestSnapshotIsPointInTime(t *testing.T) {
	src := openMem(t)
	want := snapshotData()
	putAll(t, src, want)

	later := func() {
		commit(t, src, func(tx *Tx) {
			tx.Set([]byte("0-before-everything"), []byte("late"))
			tx.Set([]byte("zzz-after-everything"), []byte("late"))
			tx.Set(JobKey(1), []byte("overwritten"))
			tx.Set(JobKey(599), []byte("overwritten"))
			tx.Delete(JobKey(2))
			tx.Delete(RequestKey("req-599"))
			SetAppliedIndex(tx, 5000)
		})
	}

	w := &hookWriter{hook: later}
	info, err := src.WriteSnapshot(w)
	if err != nil {
		t.Fatal(err)
	}
	if w.hook != nil || w.first >= w.Len()-5 {
		t.Fatalf("the hook ran after a first write of %d of %d bytes; the test needs it in mid-iteration", w.first, w.Len())
	}
	if info.AppliedIndex != 4242 || info.Keys != int64(len(want)) {
		t.Errorf("info = %+v, want the state before the later commit", info)
	}
	dst := openMem(t)
	if _, err := dst.LoadSnapshot(bytes.NewReader(w.Bytes())); err != nil {
		t.Fatal(err)
	}
	got := dump(t, dst)
	if !reflect.DeepEqual(got, want) {
		for _, k := range []string{"0-before-everything", "zzz-after-everything", string(JobKey(1)), string(JobKey(2))} {
			t.Logf("key %q: snapshot %q, at snapshot time %q", k, got[k], want[k])
		}
		t.Fatalf("snapshot is not the state at the time it started (%d keys, want %d)", len(got), len(want))
	}

	// The later commit did happen, and a second snapshot carries it.
	var buf bytes.Buffer
	info, err = src.WriteSnapshot(&buf)
	if err != nil || info.AppliedIndex != 5000 || info.Keys != int64(len(want)) { // two keys added, two deleted
		t.Errorf("second snapshot = %+v, %v", info, err)
	}
}

func TestSnapshotCorrupt(t *testing.T) {
	src := openMem(t)
	kvs := snapshotData()
	putAll(t, src, kvs)
	var buf bytes.Buffer
	if _, err := src.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	mutate := func(f func(b []byte) []byte) []byte { return f(slices.Clone(good)) }
	// resign appends a valid checksum, for inputs whose flaw is elsewhere.
	resign := func(b []byte) []byte {
		return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
	}

	// A byte inside a value, which only the checksum can notice.
	valueAt := bytes.Index(good, []byte(kvs[string(RequestKey("req-299"))]))
	if valueAt < len(good)/4 {
		t.Fatalf("value found at %d of %d", valueAt, len(good))
	}
	for _, tc := range []struct {
		name   string
		b      []byte
		reason string
	}{
		{"empty", nil, "truncated at byte 0, reading magic"},
		{"bad magic", mutate(func(b []byte) []byte { b[7] = '2'; return b }), "bad magic"},
		{"flipped value byte", mutate(func(b []byte) []byte { b[valueAt+10] ^= 0x20; return b }), "checksum"},
		{"flipped middle byte", mutate(func(b []byte) []byte { b[len(b)/2] ^= 0x01; return b }), "snapshot"},
		{"flipped checksum", mutate(func(b []byte) []byte { b[len(b)-1] ^= 0x80; return b }), "checksum"},
		{"truncated magic", good[:5], "truncated"},
		{"truncated after magic", good[:8], "truncated"},
		{"truncated in the middle", good[:len(good)/2], "truncated"},
		{"truncated trailer", good[:len(good)-1], "truncated"},
		{"no trailer", good[:len(good)-6], "truncated"},
		{"trailing byte", append(slices.Clone(good), 0), "trailing bytes"},
		{"count mismatch", resign([]byte("HDLSNAP1\x01a\x011\x01b\x012\x00\x01")), "trailer counts 1 records, found 2"},
		{"out of order", resign([]byte("HDLSNAP1\x01b\x00\x01a\x00\x00\x02")), "does not sort after"},
		{"duplicate key", []byte("HDLSNAP1\x01a\x00\x01a\x00\x00\x02...."), "does not sort after"},
		{"huge key", []byte("HDLSNAP1\xff\xff\xff\xff\x0f"), "over the limit"},
		{"huge value", []byte("HDLSNAP1\x01a\xff\xff\xff\xff\x0f"), "over the limit"},
		{"varint overflow", []byte("HDLSNAP1\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"), "malformed key length"},
		{"bad applied index", []byte("HDLSNAP1\x08mapplied\x01x"), `at key "mapplied"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := openMem(t).LoadSnapshot(bytes.NewReader(tc.b))
			wantCorrupt(t, err, tc.reason)
		})
	}
}

// TestSnapshotEveryByteMatters flips each byte of a small snapshot in turn:
// CRC-32C detects every error confined to one byte, so each load must fail.
func TestSnapshotEveryByteMatters(t *testing.T) {
	good := encodeSnapshot(map[string]string{"ja": "one", "jb": "", "mapplied": string(U64(7))})
	if info, err := openMem(t).LoadSnapshot(bytes.NewReader(good)); err != nil || info.AppliedIndex != 7 || info.Keys != 3 {
		t.Fatalf("LoadSnapshot(good) = %+v, %v", info, err)
	}
	for i := range good {
		b := slices.Clone(good)
		b[i] ^= 0x41
		_, err := openMem(t).LoadSnapshot(bytes.NewReader(b))
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("flipping byte %d: err = %v, want ErrCorrupt", i, err)
		}
	}
}

// errReader fails after its data, as a broken connection would.
type errReader struct {
	data []byte
	err  error
}

func (r *errReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestSnapshotReadError(t *testing.T) {
	good := encodeSnapshot(map[string]string{"a": "1", "b": "2"})
	broken := errors.New("connection reset")
	for _, n := range []int{0, 4, 10, len(good) - 2} {
		_, err := openMem(t).LoadSnapshot(&errReader{data: good[:n], err: broken})
		if !errors.Is(err, broken) || errors.Is(err, ErrCorrupt) {
			t.Errorf("read error after %d bytes: err = %v, want the reader's error, not corruption", n, err)
		}
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

func TestSnapshotWriteError(t *testing.T) {
	db := openMem(t)
	putAll(t, db, snapshotData())
	full := errors.New("disk full")
	if _, err := db.WriteSnapshot(failWriter{full}); !errors.Is(err, full) {
		t.Errorf("WriteSnapshot = %v, want the writer's error", err)
	}
}

// --- on disk ---

func TestOnDiskReopen(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	rec := MustEncode(KindJob, 1, testRec{Name: "durable", N: 9})
	big := bytes.Repeat([]byte("b"), 10<<10) // above the value threshold: lives in the value log
	commit(t, db, func(tx *Tx) {
		tx.Set(JobKey(9), rec)
		tx.Set(RequestKey("big"), big)
		SetAppliedIndex(tx, 17)
	})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	}()
	v, err := db.Get(JobKey(9))
	if err != nil {
		t.Fatal(err)
	}
	var out testRec
	if _, err := DecodeAt(JobKey(9), v, KindJob, 1, &out); err != nil || out.Name != "durable" || out.N != 9 {
		t.Errorf("reopened record = %+v, %v", out, err)
	}
	if v, err := db.Get(RequestKey("big")); err != nil || !bytes.Equal(v, big) {
		t.Errorf("reopened large value = %d bytes, %v", len(v), err)
	}
	var idx uint64
	if err := db.View(func(r *Reader) (err error) { idx, err = AppliedIndex(r); return }); err != nil || idx != 17 {
		t.Errorf("reopened applied index = %d, %v", idx, err)
	}
}

// A read the database itself fails is ErrRead, still matching Badger's
// error, and distinct from a key that is simply missing.
func TestFailedReadIsErrRead(t *testing.T) {
	db := openMem(t)
	txn := db.Badger().NewTransaction(false)
	r := NewReader(txn)
	if _, err := r.Get(JobKey(1)); !errors.Is(err, ErrNotFound) || errors.Is(err, ErrRead) {
		t.Fatalf("missing key: %v, want ErrNotFound alone", err)
	}
	txn.Discard()
	_, err := r.Get(JobKey(1))
	if !errors.Is(err, ErrRead) || !errors.Is(err, badger.ErrDiscardedTxn) || errors.Is(err, ErrNotFound) {
		t.Fatalf("read of a discarded transaction: %v, want ErrRead wrapping badger.ErrDiscardedTxn", err)
	}
}

// A record nested a million levels deep (a megabyte, corrupt or crafted)
// is refused by a walk that keeps a counter per level up to the bound:
// msgpack's own Skip, which Decode ran before, recursed once per level and
// grew the goroutine's stack by 256 MB for it (a few megabytes more and the
// process dies of a stack overflow no recover catches).
func TestDecodeDeepRecordDoesNotRecurse(t *testing.T) {
	b := append(append([]byte{byte(KindJob), 1}, bytes.Repeat([]byte{0x91}, 1<<20)...), 0xc0)
	type result struct {
		err   error
		stats runtime.MemStats
	}
	done := make(chan result)
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	// A fresh goroutine starts with a small stack: what it grows to is
	// what Decode took.
	go func() {
		var out testRec
		_, err := Decode(b, KindJob, 1, &out)
		var r result
		runtime.ReadMemStats(&r.stats)
		r.err = err
		done <- r
	}()
	r := <-done
	wantCorrupt(t, r.err, "nested deeper than 32 levels")
	after := r.stats
	if grew := int64(after.StackInuse) - int64(before.StackInuse); grew > 1<<20 {
		t.Errorf("decoding grew the stacks by %d KiB", grew>>10)
	}
}
