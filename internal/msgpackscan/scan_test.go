package msgpackscan

import (
	"bytes"
	"errors"
	"math"
	"runtime"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// nested is depth one-element arrays around a nil.
func nested(depth int) []byte {
	return append(bytes.Repeat([]byte{0x91}, depth), 0xc0)
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     []byte
		lim    Limits
		want   error
		depth  int
		values int
	}{
		{"a scalar", []byte{0x05}, Limits{}, nil, 0, 1},
		{"a map of strings", mustMarshal(t, map[string]any{"a": 1, "b": []any{"x", true, 1.5}}), Limits{}, nil, 2, 8},
		{"every scalar type", mustMarshal(t, []any{nil, false, int8(-3), int64(-1 << 40), uint64(1 << 63), float32(1), 2.5, "s", []byte{1, 2}, map[int]string{1: "one"}}), Limits{}, nil, 2, 13},
		{"an extension (a time)", mustMarshal(t, []any{mustTime(t)}), Limits{}, nil, 1, 2},
		{"an empty array counts as a level", []byte{0x91, 0x90}, Limits{MaxDepth: 1}, ErrTooDeep, 2, 2},
		{"exactly the depth", nested(3), Limits{MaxDepth: 3}, nil, 3, 4},
		{"one level too deep", nested(4), Limits{MaxDepth: 3}, ErrTooDeep, 4, 5},
		{"800,000 levels", nested(800_000), Limits{}, ErrTooDeep, DefaultMaxDepth + 1, 800_001},
		{"too many values", mustMarshal(t, []int{1, 2, 3}), Limits{MaxValues: 3}, ErrTooMany, 1, 4},
		{"nothing", nil, Limits{}, ErrMalformed, 0, 0},
		{"the unused type byte", []byte{0xc1}, Limits{}, ErrMalformed, 0, 0},
		{"bytes after the value", []byte{0x01, 0x02}, Limits{}, ErrMalformed, 0, 1},
		{"an array32 declaring four billion elements", []byte{0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0}, Limits{}, ErrMalformed, 1, 1},
		{"a map32 declaring four billion entries", []byte{0xdf, 0xff, 0xff, 0xff, 0xff, 0xc0, 0xc0}, Limits{}, ErrMalformed, 1, 1},
		{"a str32 declaring four gigabytes", []byte{0xdb, 0xff, 0xff, 0xff, 0xff, 'a'}, Limits{}, ErrMalformed, 0, 0},
		{"a bin32 declaring four gigabytes", []byte{0xc6, 0xff, 0xff, 0xff, 0xff}, Limits{}, ErrMalformed, 0, 0},
		{"an ext32 declaring four gigabytes", []byte{0xc9, 0xff, 0xff, 0xff, 0xff, 0x01}, Limits{}, ErrMalformed, 0, 0},
		{"nested lengths that each fit but not together", []byte{0x92, 0x92, 0xc0, 0xc0}, Limits{}, ErrMalformed, 2, 2},
		{"too deep and cut short is malformed", append(bytes.Repeat([]byte{0x91}, 40), 0x92, 0xc0), Limits{}, ErrMalformed, DefaultMaxDepth + 1, 41},
		{"a truncated number", []byte{0xcf, 0x01}, Limits{}, ErrMalformed, 0, 0},
		{"a header cut short", []byte{0xdc, 0x00}, Limits{}, ErrMalformed, 0, 0},
	} {
		st, err := Check(tc.in, tc.lim)
		if !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
			t.Errorf("%s: Check = %v, want %v", tc.name, err, tc.want)
		}
		if st.Depth != tc.depth || st.Values != tc.values {
			t.Errorf("%s: stats %+v, want depth %d and %d values", tc.name, st, tc.depth, tc.values)
		}
		var e *Error
		if err != nil && (!errors.As(err, &e) || e.Code() != ErrorCode) {
			t.Errorf("%s: %v is not an *Error with code %s", tc.name, err, ErrorCode)
		}
	}
}

func mustTime(t *testing.T) any {
	t.Helper()
	var v any
	if err := msgpack.Unmarshal([]byte{0xd6, 0xff, 0, 0, 0, 1}, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestCheckDeepIsFlat checks that the walk of 800,000 nested arrays keeps
// no more than a counter per level up to the depth bound: msgpack's own
// Skip recurses once per level and took 256 MB of stack for this input.
func TestCheckDeepIsFlat(t *testing.T) {
	b := nested(800_000)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	st, err := Check(b, Limits{})
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooDeep) || st.Depth != DefaultMaxDepth+1 {
		t.Fatalf("Check = %+v, %v", st, err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<10 {
		t.Errorf("Check allocated %d bytes", grew)
	}
	if grew := int64(after.StackInuse) - int64(before.StackInuse); grew > 1<<20 {
		t.Errorf("the stack grew by %d bytes", grew)
	}
}

func TestLimitsValidate(t *testing.T) {
	if err := (Limits{}).Validate(); err != nil {
		t.Errorf("the zero Limits: %v", err)
	}
	if err := (Limits{MaxDepth: -1}).Validate(); err == nil {
		t.Error("a negative depth was accepted")
	}
}

func TestReadHeader(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want Header
	}{
		{[]byte{0x7f}, Header{Kind: Uint, Size: 1, Code: 0x7f}},
		{[]byte{0xff}, Header{Kind: Int, Size: 1, Code: 0xff}},
		{[]byte{0xa2, 'h', 'i'}, Header{Kind: Str, Size: 1, Len: 2, Code: 0xa2}},
		{[]byte{0xda, 0x00, 0x01, 'x'}, Header{Kind: Str, Size: 3, Len: 1, Code: 0xda}},
		{[]byte{0xc7, 0x01, 0x05, 0xaa}, Header{Kind: Ext, Size: 3, Len: 1, Code: 0xc7, ExtType: 5}},
		{[]byte{0xd4, 0xfe, 0xaa}, Header{Kind: Ext, Size: 2, Len: 1, Code: 0xd4, ExtType: -2}},
		{[]byte{0xdd, 0xff, 0xff, 0xff, 0xff}, Header{Kind: Array, Size: 5, Len: math.MaxUint32, Code: 0xdd}},
		{[]byte{0xde, 0x00, 0x02}, Header{Kind: Map, Size: 3, Len: 2, Code: 0xde}},
		{[]byte{0xcb, 0, 0, 0, 0, 0, 0, 0, 0}, Header{Kind: Float, Size: 1, Len: 8, Code: 0xcb}},
	} {
		h, err := ReadHeader(tc.in)
		if err != nil || h != tc.want {
			t.Errorf("ReadHeader(% x) = %+v, %v; want %+v", tc.in, h, err, tc.want)
		}
	}
}

// FuzzCheck holds Check to msgpack's own reading: whatever Check accepts,
// msgpack skips whole and decodes, and whatever msgpack skips whole within
// the depth, Check accepts. Check must never panic, and must say the same
// of a value whatever the depth bound, as long as the value fits it.
func FuzzCheck(f *testing.F) {
	f.Add([]byte{0x93, 0x01, 0xa1, 'a', 0x81, 0xc0, 0xc3})
	f.Add(nested(100))
	f.Add(nested(300))
	f.Add([]byte{0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0})
	f.Add([]byte{0xdf, 0x7f, 0xff, 0xff, 0xff})
	f.Add([]byte{0xdb, 0xff, 0xff, 0xff, 0xff, 'a'})
	f.Add([]byte{0xc6, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0xc9, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add(append(bytes.Repeat([]byte{0xdc, 0xff, 0xff}, 20), 0xc0))
	f.Add(append(bytes.Repeat([]byte{0x81, 0x91}, 30), 0xc0, 0xc0))
	f.Add(mustMarshal(f, map[string]any{"a": []any{1, "b", map[string]any{"c": nil}}, "t": mustTimeF(f)}))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := Check(b, Limits{MaxDepth: 8})
		if err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTooDeep) {
			t.Fatalf("Check(% x): unexpected %v", b, err)
		}
		if st.Depth > 9 {
			t.Fatalf("depth %d beyond the bound", st.Depth)
		}
		r := bytes.NewReader(b)
		skipErr := msgpack.NewDecoder(r).Skip()
		whole := skipErr == nil && r.Len() == 0
		switch {
		case err == nil && !whole:
			t.Fatalf("Check accepted % x, msgpack does not read it whole: %v", b, skipErr)
		case errors.Is(err, ErrMalformed) && whole && st.Depth <= 8:
			t.Fatalf("Check refused % x (%v), msgpack reads it whole", b, err)
		case errors.Is(err, ErrTooDeep) && !whole:
			t.Fatalf("Check says % x is only too deep, msgpack does not read it whole: %v", b, skipErr)
		}
		if err == nil {
			var v any
			dec := msgpack.NewDecoder(bytes.NewReader(b))
			dec.SetMapDecoder(func(d *msgpack.Decoder) (any, error) { return d.DecodeUntypedMap() })
			func() {
				defer func() { _ = recover() }() // a map used as a map key is unhashable in Go
				_ = dec.Decode(&v)
			}()
			st2, err2 := Check(b, Limits{MaxDepth: 64})
			if err2 != nil || st2 != st {
				t.Fatalf("a deeper bound changed the verdict on % x: %+v %v, then %+v %v", b, st, err, st2, err2)
			}
		}
	})
}

func mustTimeF(f *testing.F) any {
	var v any
	if err := msgpack.Unmarshal([]byte{0xd6, 0xff, 0, 0, 0, 1}, &v); err != nil {
		f.Fatal(err)
	}
	return v
}

func TestValueLen(t *testing.T) {
	doc := mustMarshal(t, map[string]any{"a": []any{1, "b", map[string]any{"c": nil}}, "p": bytes.Repeat([]byte{7}, 300)})
	for _, c := range []struct {
		name string
		b    []byte
		want int
	}{
		{"a fixint", []byte{0x01, 0x02}, 1},
		{"a document then more", append(append([]byte(nil), doc...), 0xc0, 0xc0), len(doc)},
		{"800,000 nested arrays", nested(800_000), 800_001},
		{"a bin of 300 bytes", append([]byte{0xc5, 0x01, 0x2c}, make([]byte, 301)...), 303},
	} {
		if n, err := ValueLen(c.b); err != nil || n != c.want {
			t.Errorf("%s: ValueLen = %d, %v; want %d", c.name, n, err, c.want)
		}
	}
	for _, bad := range [][]byte{nil, {0xc1}, {0x92, 0x01}, {0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0}, {0xc6, 0xff, 0xff, 0xff, 0xff}, {0x81, 0xa1}} {
		if n, err := ValueLen(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("ValueLen(% x) = %d, %v; want ErrMalformed", bad, n, err)
		}
	}
}

// FuzzValueLen holds ValueLen to Check: a prefix Check accepts as one
// value is exactly what ValueLen measures, whatever follows it; ValueLen
// never panics and never measures past the bytes it has.
func FuzzValueLen(f *testing.F) {
	f.Add([]byte{0x93, 0x01, 0xa1, 'a', 0x81, 0xc0, 0xc3, 0xc0})
	f.Add(nested(300))
	f.Add([]byte{0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0})
	f.Add([]byte{0xc6, 0xff, 0xff, 0xff, 0xff})
	f.Add(append(bytes.Repeat([]byte{0x81, 0x91}, 30), 0xc0, 0xc0, 0x01))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := ValueLen(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("ValueLen(% x): unexpected %v", b, err)
			}
			if _, cerr := Check(b, Limits{MaxDepth: 1 << 20}); cerr == nil {
				t.Fatalf("ValueLen refused % x (%v), Check accepts it", b, err)
			}
			return
		}
		if n < 1 || n > len(b) {
			t.Fatalf("ValueLen(% x) = %d", b, n)
		}
		if _, cerr := Check(b[:n], Limits{MaxDepth: 1 << 20}); cerr != nil {
			t.Fatalf("ValueLen(% x) = %d, Check refuses that prefix: %v", b, n, cerr)
		}
	})
}
