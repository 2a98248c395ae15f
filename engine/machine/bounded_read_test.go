package machine

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// decodeElided decodes what storage.DecodeAt decodes, the large fields
// cleared and their lengths told; a record DecodeAt refuses it refuses
// with the same error.
func TestDecodeElided(t *testing.T) {
	ev := engine.Event{Seq: 3, Type: engine.EventJobCreated, Step: "s", Name: "n", Payload: bytes.Repeat([]byte("p"), 50), LastResult: bytes.Repeat([]byte("r"), 20),
		Wait: &engine.WaitSpec{Signals: []string{"a", "b"}, Timers: []engine.Timer{{ID: "t", FireMS: 9}}}, Reason: "why"}
	b, err := storage.Encode(storage.KindEvent, eventVersion, &ev)
	if err != nil {
		t.Fatal(err)
	}
	key := []byte("k")
	for _, c := range []struct {
		max                 int
		payload, lastResult int
	}{{-1, 0, 0}, {100, 0, 0}, {30, 50, 0}, {10, 50, 20}, {0, 50, 20}} {
		var got engine.Event
		sizes, err := decodeElided(key, b, storage.KindEvent, eventVersion, &got, eventLargeFields, c.max)
		if err != nil {
			t.Fatalf("max %d: %v", c.max, err)
		}
		want := ev
		if c.payload > 0 {
			want.Payload = nil
		}
		if c.lastResult > 0 {
			want.LastResult = nil
		}
		if sizes[0] != c.payload || sizes[1] != c.lastResult || !reflect.DeepEqual(got, want) {
			t.Errorf("max %d: %+v, sizes %v; want %+v, [%d %d]", c.max, got, sizes, want, c.payload, c.lastResult)
		}
	}
	for _, bad := range [][]byte{b[:len(b)-3], append(append([]byte(nil), b...), 0xc0), b[:1], {b[0], b[1], 0x91, 0xc0}} {
		var a, e engine.Event
		_, want := storage.DecodeAt(key, bad, storage.KindEvent, eventVersion, &a)
		_, got := decodeElided(key, bad, storage.KindEvent, eventVersion, &e, eventLargeFields, 0)
		if want == nil || got == nil || got.Error() != want.Error() {
			t.Errorf("% x: %v, DecodeAt says %v", bad, got, want)
		}
	}
}

// FuzzDecodeElided holds decodeElided to storage.DecodeAt on any bytes:
// it never panics, refuses what DecodeAt refuses, and of a record DecodeAt
// reads it decodes the same event with the large fields left out.
func FuzzDecodeElided(f *testing.F) {
	for _, ev := range []engine.Event{
		{Seq: 1, Type: engine.EventJobCreated, Payload: []byte("input"), LastResult: []byte("last")},
		{Seq: 2, Type: engine.EventSignalReceived, Name: "s", Payload: bytes.Repeat([]byte{1}, 300), Wait: &engine.WaitSpec{Signals: []string{"x"}}},
		{Seq: 3, Type: "marker"},
	} {
		b, err := storage.Encode(storage.KindEvent, eventVersion, &ev)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, 10)
	}
	f.Add([]byte{byte(storage.KindEvent), 1, 0xdf, 0xff, 0xff, 0xff, 0xff}, 0)
	f.Add(append([]byte{byte(storage.KindEvent), 1, 0x81, 0xa1, 'p'}, bytes.Repeat([]byte{0x91}, 10_000)...), 0)
	f.Fuzz(func(t *testing.T, b []byte, max int) {
		var whole, got engine.Event
		_, wantErr := storage.DecodeAt(nil, b, storage.KindEvent, eventVersion, &whole)
		sizes, err := decodeElided(nil, b, storage.KindEvent, eventVersion, &got, eventLargeFields, max)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("% x, max %d: %v; DecodeAt: %v", b, max, err, wantErr)
		}
		if err != nil {
			return
		}
		if max >= 0 && len(whole.Payload) > max {
			if sizes[0] != len(whole.Payload) {
				t.Fatalf("payload of %d bytes, elided %d", len(whole.Payload), sizes[0])
			}
			whole.Payload = nil
		}
		if max >= 0 && len(whole.LastResult) > max {
			if sizes[1] != len(whole.LastResult) {
				t.Fatalf("last result of %d bytes, elided %d", len(whole.LastResult), sizes[1])
			}
			whole.LastResult = nil
		}
		if !reflect.DeepEqual(got, whole) {
			t.Fatalf("% x, max %d: %+v, want %+v", b, max, got, whole)
		}
	})
}
