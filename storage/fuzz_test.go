package storage

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

// fuzzRec has a field of each shape heddle's records use, so that decoding
// arbitrary bytes into it reaches every msgpack decoder path that matters.
type fuzzRec struct {
	Name  string           `msgpack:"name"`
	N     int64            `msgpack:"n"`
	U     uint32           `msgpack:"u"`
	OK    bool             `msgpack:"ok"`
	Tags  []string         `msgpack:"tags"`
	Blob  []byte           `msgpack:"blob"`
	Attrs map[string]int64 `msgpack:"attrs"`
}

func FuzzDecode(f *testing.F) {
	f.Add(MustEncode(KindJob, 1, fuzzRec{Name: "job", N: -5, U: 7, OK: true, Tags: []string{"a"}, Blob: []byte{0, 1}, Attrs: map[string]int64{"k": 1}}))
	f.Add(MustEncode(KindJob, 3, map[string]any{"name": 1, "extra": []any{nil, 2.5}}))
	f.Add(MustEncode(KindJob, 2, []any{"arr", 1}))
	f.Add([]byte{byte(KindJob), 1, 0xc0})
	f.Add([]byte{byte(KindJob), 1, 0xdf, 0xff, 0xff, 0xff, 0xff}) // map claiming 4G entries
	f.Add([]byte{byte(KindEvent), 1, 0x80})
	f.Add([]byte{})
	f.Add(append(append([]byte{byte(KindJob), 1}, bytes.Repeat([]byte{0x91}, 300)...), 0xc0))           // deep nesting
	f.Add(append(append([]byte{byte(KindJob), 1}, bytes.Repeat([]byte{0x81, 0xa1, 'a'}, 40)...), 0xc0)) // deep maps
	f.Add([]byte{byte(KindJob), 1, 0x81, 0xa4, 'b', 'l', 'o', 'b', 0xc6, 0xff, 0xff, 0xff, 0xff})       // 4 GiB of blob
	f.Add([]byte{byte(KindJob), 1, 0x81, 0xa4, 't', 'a', 'g', 's', 0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0}) // 4G tags

	f.Fuzz(func(t *testing.T, data []byte) {
		// Decode checks the bytes before msgpack's DecodeMap, reached for
		// map[string]any and any, preallocates the length a header claims
		// (vmihailenco/msgpack#376) or recurses into nesting.
		var m map[string]any
		if _, err := Decode(data, KindJob, 3, &m); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Decode into a map: %v is not ErrCorrupt", err)
		}
		var r fuzzRec
		ver, err := Decode(data, KindJob, 3, &r)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Decode into a struct: %v is not ErrCorrupt", err)
			}
			return
		}
		if ver < 1 || ver > 3 || ver != data[1] {
			t.Fatalf("Decode returned version %d from header % x", ver, data[:2])
		}
		b, err := Encode(KindJob, ver, r)
		if err != nil {
			t.Fatalf("re-encoding %+v: %v", r, err)
		}
		var r2 fuzzRec
		if ver2, err := Decode(b, KindJob, 3, &r2); err != nil || ver2 != ver {
			t.Fatalf("decoding the re-encoding = %d, %v", ver2, err)
		}
		if !reflect.DeepEqual(r, r2) {
			t.Fatalf("round trip changed the value:\n%#v\n%#v", r, r2)
		}
	})
}

func FuzzParseKeys(f *testing.F) {
	f.Add(ReadyKey("orders", 1000, 7), "orders", int64(1000), uint64(7), uint64(3), "timer")
	f.Add(LeaseKey(-1, 1<<63), "", int64(-1), uint64(0), uint64(0), "")
	f.Add(TimerKey(5, 6, "wake"), "q", int64(1<<40), uint64(1<<40), uint64(256), "req-1")
	f.Add(RequestAgeKey(9, "req"), "a", int64(256), uint64(255), uint64(1), "")
	f.Add(EventKey(1, 2), "ab", int64(0), uint64(1), uint64(2), "x")
	f.Add(JobKey(3), "", int64(0), uint64(0), uint64(0), "")
	f.Add(StepDueKey(7, 3, "1"), "", int64(7), uint64(3), uint64(0), "1")
	f.Add(WaiterKey(2, 3, "1"), "", int64(0), uint64(3), uint64(2), "1")
	f.Add([]byte{PrefixReady, 0xff, 0xff}, "", int64(0), uint64(0), uint64(0), "")
	f.Add(QueueKey("orders", 7), "orders", int64(0), uint64(7), uint64(0), "")

	f.Fuzz(func(t *testing.T, data []byte, queue string, at int64, id, seq uint64, rest string) {
		// Arbitrary bytes: every parser either fails with a key error or
		// returns fields that rebuild exactly the bytes it was given.
		checkErr := func(name string, err error) bool {
			t.Helper()
			if err == nil {
				return true
			}
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Kind != KindKey || !bytes.Equal(ce.Key, data) {
				t.Fatalf("%s(% x): error %v is not a key CorruptError", name, data, err)
			}
			return false
		}
		rebuilt := func(name string, k []byte) {
			t.Helper()
			if !bytes.Equal(k, data) {
				t.Fatalf("%s(% x) parsed into fields that rebuild % x", name, data, k)
			}
		}
		if e, err := ParseReadyKey(data); checkErr("ParseReadyKey", err) {
			rebuilt("ParseReadyKey", ReadyKey(e.Queue, e.ReadyAtMS, e.Job))
		}
		if tk, err := ParseTimeKey(data); checkErr("ParseTimeKey", err) {
			switch data[0] {
			case PrefixLease:
				rebuilt("ParseTimeKey", LeaseKey(tk.AtMS, tk.Job))
			case PrefixDelayed:
				rebuilt("ParseTimeKey", DelayedKey(tk.AtMS, tk.Job))
			case PrefixDeadline:
				rebuilt("ParseTimeKey", DeadlineKey(tk.AtMS, tk.Job))
			case PrefixTimer:
				rebuilt("ParseTimeKey", TimerKey(tk.AtMS, tk.Job, tk.Rest))
			case PrefixReqAge:
				rebuilt("ParseTimeKey", RequestAgeKey(tk.AtMS, tk.Rest))
			case PrefixSchedDue:
				rebuilt("ParseTimeKey", SchedDueKey(tk.AtMS, tk.Rest))
			case PrefixReviewLease:
				rebuilt("ParseTimeKey", ReviewLeaseKey(tk.AtMS, tk.Job))
			case PrefixStepDue:
				rebuilt("ParseTimeKey", StepDueKey(tk.AtMS, tk.Job, tk.Rest))
			default:
				t.Fatalf("ParseTimeKey accepted prefix %q", data[0])
			}
		}
		if q, err := ParseQueueKey(data); checkErr("ParseQueueKey", err) {
			rebuilt("ParseQueueKey", QueueKey(q, binary.BigEndian.Uint64(data[len(data)-8:])))
		}
		if w, err := ParseWaiterKey(data); checkErr("ParseWaiterKey", err) {
			rebuilt("ParseWaiterKey", WaiterKey(w.Seq, w.Job, w.Step))
		}
		if j, err := ParseJobKey(data); checkErr("ParseJobKey", err) {
			rebuilt("ParseJobKey", JobKey(j))
		}
		if j, s, err := ParseEventKey(data); checkErr("ParseEventKey", err) {
			rebuilt("ParseEventKey", EventKey(j, s))
		}
		if j, err := TrailingJob(data); checkErr("TrailingJob", err) && j != binary.BigEndian.Uint64(data[len(data)-8:]) {
			t.Fatalf("TrailingJob(% x) = %d", data, j)
		}

		// Keys built by the constructors round-trip.
		if len(queue) > MaxKeyString {
			queue = queue[:MaxKeyString]
		}
		if e, err := ParseReadyKey(ReadyKey(queue, at, id)); err != nil || e != (ReadyEntry{queue, at, id}) {
			t.Fatalf("ReadyKey(%q, %d, %d) parses as %+v, %v", queue, at, id, e, err)
		}
		if q, err := ParseQueueKey(QueueKey(queue, id)); err != nil || q != queue {
			t.Fatalf("QueueKey(%q, %d) parses as %q, %v", queue, id, q, err)
		}
		for _, tc := range []struct {
			k    []byte
			want TimeKey
		}{
			{LeaseKey(at, id), TimeKey{at, id, ""}},
			{DelayedKey(at, id), TimeKey{at, id, ""}},
			{DeadlineKey(at, id), TimeKey{at, id, ""}},
			{TimerKey(at, id, rest), TimeKey{at, id, rest}},
			{RequestAgeKey(at, rest), TimeKey{at, 0, rest}},
		} {
			if got, err := ParseTimeKey(tc.k); err != nil || got != tc.want {
				t.Fatalf("ParseTimeKey(% x) = %+v, %v; want %+v", tc.k, got, err, tc.want)
			}
		}
		if j, err := ParseJobKey(JobKey(id)); err != nil || j != id {
			t.Fatalf("ParseJobKey(JobKey(%d)) = %d, %v", id, j, err)
		}
		if j, s, err := ParseEventKey(EventKey(id, seq)); err != nil || j != id || s != seq {
			t.Fatalf("ParseEventKey(EventKey(%d, %d)) = %d, %d, %v", id, seq, j, s, err)
		}
		for _, k := range [][]byte{ReadyKey(queue, at, id), StatusKey(byte(seq), id), TypeKey(queue, id), QueueKey(queue, id)} {
			if j, err := TrailingJob(k); err != nil || j != id {
				t.Fatalf("TrailingJob(% x) = %d, %v; want %d", k, j, err, id)
			}
		}

		// Byte order is the numeric order of (time as unsigned, job).
		at2, id2 := int64(seq), id^seq
		want := cmp.Or(cmp.Compare(uint64(at), uint64(at2)), cmp.Compare(id, id2))
		if got := bytes.Compare(ReadyKey(queue, at, id), ReadyKey(queue, at2, id2)); got != want {
			t.Fatalf("ReadyKey order of (%d, %d) and (%d, %d) is %d, want %d", at, id, at2, id2, got, want)
		}
		if got := bytes.Compare(LeaseKey(at, id), LeaseKey(at2, id2)); got != want {
			t.Fatalf("LeaseKey order of (%d, %d) and (%d, %d) is %d, want %d", at, id, at2, id2, got, want)
		}
	})
}

func FuzzLoadSnapshot(f *testing.F) {
	src := openMem(f)
	commit(f, src, func(tx *Tx) {
		tx.Set(JobKey(1), MustEncode(KindJob, 1, fuzzRec{Name: "a"}))
		tx.Set(EventKey(1, 1), []byte("event"))
		tx.Set(ReadyKey("q", 5, 1), nil)
		SetAppliedIndex(tx, 3)
	})
	var buf bytes.Buffer
	if _, err := src.WriteSnapshot(&buf); err != nil {
		f.Fatal(err)
	}
	snap := buf.Bytes()
	f.Add(snap)
	f.Add(snap[:len(snap)/2])
	f.Add(encodeSnapshot(nil))
	f.Add([]byte(snapshotMagic))
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, data []byte) {
		db := openMem(t)
		info, err := db.LoadSnapshot(bytes.NewReader(data))
		if err != nil {
			return
		}
		// Whatever loaded must snapshot back to the same contents.
		var out bytes.Buffer
		again, err := db.WriteSnapshot(&out)
		if err != nil {
			t.Fatalf("WriteSnapshot after a successful load: %v", err)
		}
		if again.Keys != info.Keys || again.AppliedIndex != info.AppliedIndex {
			t.Fatalf("loaded %+v, but the database snapshots as %+v", info, again)
		}
	})
}
