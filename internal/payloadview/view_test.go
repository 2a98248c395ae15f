package payloadview

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"
)

func mustMsgpack(t testing.TB, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Worst cases: each is a payload of about a megabyte (the engine's default
// limit) built to make a renderer recurse, allocate by a declared length or
// amplify its output.
func nestedMsgpack(depth int) []byte { return append(bytes.Repeat([]byte{0x91}, depth), 0xc0) }
func nestedJSON(depth int) []byte {
	return append(bytes.Repeat([]byte("["), depth), bytes.Repeat([]byte("]"), depth)...)
}

func worstCases(t testing.TB) map[string][]byte {
	wide := append([]byte{0xdd, 0x00, 0x0f, 0xff, 0xff}, bytes.Repeat([]byte{0x90}, 0xfffff)...)
	return map[string][]byte{
		"800,000 nested msgpack arrays":                          nestedMsgpack(800_000),
		"1,000,000 nested msgpack maps":                          append(bytes.Repeat([]byte{0x81, 0xc0}, 500_000), 0xc0),
		"JSON nested 10,000 deep (the most encoding/json reads)": nestedJSON(10_000),
		"JSON nested 500,000 deep":                               nestedJSON(500_000),
		"JSON nested 32 deep around a million values":            append(append(bytes.Repeat([]byte("["), 32), bytes.Repeat([]byte("0,"), 500_000)...), append([]byte("0"), bytes.Repeat([]byte("]"), 32)...)...),
		"a msgpack array of a million empty arrays":              wide,
		"a str32 declaring 4 GiB":                                append([]byte{0x91, 0xdb, 0xff, 0xff, 0xff, 0xff}, bytes.Repeat([]byte("a"), 1<<20)...),
		"an array32 declaring 4 billion values":                  append([]byte{0xdd, 0xff, 0xff, 0xff, 0xff}, bytes.Repeat([]byte{0xc0}, 1<<20)...),
		"a megabyte of control characters":                       bytes.Repeat([]byte{0x01}, 1<<20),
		"a megabyte string in msgpack of control characters":     mustMsgpack(t, []any{strings.Repeat("\x01", 1<<20)}),
		"a megabyte of binary":                                   bytes.Repeat([]byte{0xff}, 1<<20),
	}
}

func TestRender(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	for _, tc := range []struct {
		name  string
		in    []byte
		style Style
		kind  Kind
		text  string
	}{
		{"the SDK's JSON array, indented", []byte(` [{"sku":"A-1","qty":2, "tags": [], "m": {}}]` + "\n"), Indented, JSON,
			"[\n  {\n    \"sku\": \"A-1\",\n    \"qty\": 2,\n    \"tags\": [],\n    \"m\": {}\n  }\n]"},
		{"the same, compact", []byte(`[ {"sku" : "A-1", "qty":2} ]`), Compact, JSON, `[{"sku":"A-1","qty":2}]`},
		{"a JSON scalar", []byte(`42`), Indented, JSON, "42"},
		{"escapes in JSON are kept", []byte(`["a\"b\\", "\u00e9"]`), Compact, JSON, `["a\"b\\","\u00e9"]`},
		{"a byte of a JSON string that is not UTF-8", []byte("[\"a\xffb\"]"), Compact, JSON, `["a\ufffdb"]`},
		{"a msgpack map, keys in the order written", []byte{0x82, 0xa1, 'b', 0x01, 0xa1, 'a', 0x92, 0xa1, 'x', 0xc3}, Indented, Msgpack,
			"{\n  \"b\": 1,\n  \"a\": [\n    \"x\",\n    true\n  ]\n}"},
		{"a msgpack array with a map keyed by numbers", mustMsgpack(t, []any{map[int]string{1: "one"}}), Indented, Msgpack, "[\n  {\n    \"1\": \"one\"\n  }\n]"},
		{"msgpack scalars", mustMsgpack(t, []any{nil, false, int8(-3), int64(-1 << 40), uint64(math.MaxUint64), float32(0.5), 1e21, 1e-7, math.NaN(), []byte("hi"), "é\n<", at, map[string]any{}}), Compact, Msgpack,
			`[null,false,-3,-1099511627776,18446744073709551615,0.5,1e+21,1e-7,"NaN","aGk=","é\n<","2026-01-02T03:04:05.000006Z",{}]`},
		{"msgpack keyed by an array is not shown as JSON", []byte{0x81, 0x91, 0x01, 0x02}, Compact, Binary, "gZEBAg=="},
		{"text that is not JSON", []byte("hello, world"), Indented, Text, `"hello, world"`},
		{"a single byte that msgpack reads as a number is text", []byte("h"), Indented, Text, `"h"`},
		{"msgpack with bytes after the document is not msgpack", append(mustMsgpack(t, []any{1}), 0xc1), Indented, Binary, "kQHB"},
		{"binary", []byte{0xff, 0x00, 0xfe}, Indented, Binary, "/wD+"},
	} {
		v := Render(tc.in, tc.style, Limits{})
		if v == nil || v.Kind != tc.kind || v.Text != tc.text || v.Size != len(tc.in) || v.Cut || v.Hidden != "" {
			t.Errorf("%s: %+v, want kind %s text %q", tc.name, v, tc.kind, tc.text)
		}
	}
	if v := Render(nil, Indented, Limits{}); v != nil {
		t.Errorf("an empty payload: %+v, want nil", v)
	}
}

func TestRenderHidesDeepPayloads(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		kind Kind
	}{
		{"msgpack one level too deep", nestedMsgpack(DefaultMaxDepth + 1), Msgpack},
		{"800,000 nested msgpack arrays", nestedMsgpack(800_000), Msgpack},
		{"JSON one level too deep", nestedJSON(DefaultMaxDepth + 1), JSON},
		{"JSON nested 10,000 deep", nestedJSON(10_000), JSON},
	} {
		v := Render(tc.in, Indented, Limits{})
		if v.Kind != tc.kind || v.Hidden == "" || v.Text != "" || v.Size != len(tc.in) {
			t.Errorf("%s: %+v, want a hidden %s payload", tc.name, v, tc.kind)
		}
	}
	for _, in := range [][]byte{nestedMsgpack(DefaultMaxDepth), nestedJSON(DefaultMaxDepth)} {
		if v := Render(in, Indented, Limits{}); v.Hidden != "" || v.Cut || !json.Valid([]byte(v.Text)) {
			t.Errorf("a payload at the depth bound: %+v", v)
		}
	}
	// encoding/json refuses more than 10,000 levels: such bytes are text.
	if v := Render(nestedJSON(500_000), Indented, Limits{}); v.Kind != Text || !v.Cut {
		t.Errorf("JSON nested 500,000 deep: kind %s, cut %v", v.Kind, v.Cut)
	}
}

func TestRenderCuts(t *testing.T) {
	big := []byte(`"` + strings.Repeat("é", DefaultMaxTextBytes) + `"`)
	v := Render(big, Indented, Limits{})
	if !v.Cut || len(v.Text) > DefaultMaxTextBytes+len("\n…") || !strings.HasSuffix(v.Text, "\n…") || v.Size != len(big) {
		t.Errorf("a large payload: cut %v, %d bytes shown of %d", v.Cut, len(v.Text), v.Size)
	}
	if !strings.HasPrefix(v.Text, `"éé`) || strings.ContainsRune(v.Text, utf8.RuneError) {
		t.Error("a large payload was not cut at a character boundary")
	}
	ints := mustMsgpack(t, make([]int, 100))
	v = Render(ints, Compact, Limits{MaxValues: 10})
	if !v.Cut || v.Text != "[0,0,0,0,0,0,0,0,0,…" {
		t.Errorf("ten values of a msgpack array: %+v", v)
	}
	v = Render([]byte(`[1,2,3,4]`), Compact, Limits{MaxValues: 3})
	if !v.Cut || v.Text != "[1,2,…" {
		t.Errorf("three values of a JSON array: %+v", v)
	}
	v = Render([]byte("some text"), Compact, Limits{MaxTextBytes: 5})
	if !v.Cut || v.Text != `"some…` {
		t.Errorf("five bytes of text: %+v", v)
	}
	v = Render(bytes.Repeat([]byte{0xff}, 100), Compact, Limits{MaxTextBytes: 8})
	if !v.Cut || v.Text != "////////…" {
		t.Errorf("eight bytes of binary: %+v", v)
	}
}

// TestRenderMemoryIsBounded renders each worst case and measures what it
// allocated: before this package the web UI's renderer took 536 MB for
// 50,000 nested msgpack arrays, 1.5 GB for JSON nested 10,000 deep (20 KB),
// and overflowed the stack at 800,000 levels.
func TestRenderMemoryIsBounded(t *testing.T) {
	for name, b := range worstCases(t) {
		for _, style := range []Style{Indented, Compact} {
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			v := Render(b, style, Limits{})
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%s (%d bytes, style %d): %s, cut %v, hidden %q; allocated %d KiB", name, len(b), style, v.Kind, v.Cut, v.Hidden, alloc>>10)
			// The text as it grows and its copy to a string, and
			// encoding/json's check of validity, which keeps a state per
			// level up to the 10,000 it reads (350 KiB).
			if limit := uint64(1 << 20); alloc > limit {
				t.Errorf("%s: rendering allocated %d bytes, more than %d", name, alloc, limit)
			}
			if len(v.Text) > DefaultMaxTextBytes+len("\n…") {
				t.Errorf("%s: %d bytes of text", name, len(v.Text))
			}
		}
	}
}

func TestJSONDepth(t *testing.T) {
	for in, want := range map[string]int{`1`: 0, `[]`: 1, `[[1],{"a":[2]}]`: 3, `["[[[", {"]": "{{"}]`: 2, `"\"["`: 0} {
		if got := JSONDepth([]byte(in)); got != want {
			t.Errorf("JSONDepth(%s) = %d, want %d", in, got, want)
		}
	}
}

func TestLimitsValidate(t *testing.T) {
	if (Limits{}).Validate() != nil || (Limits{MaxTextBytes: -1}).Validate() == nil {
		t.Error("Validate accepts a negative field or refuses the zero Limits")
	}
}

// FuzzRender renders any bytes in both styles and checks the bounds, and
// that what is shown whole is what the standard library makes of it: the
// indented or compacted JSON, or for msgpack, JSON that decodes to the
// document msgpack decodes.
func FuzzRender(f *testing.F) {
	f.Add([]byte(`[1,"a",{"b":null}]`))
	f.Add([]byte{0x81, 0xa1, 'a', 0x01})
	f.Add([]byte{0xff})
	f.Add(nestedMsgpack(40))
	f.Add(nestedMsgpack(200))
	f.Add(nestedJSON(40))
	f.Add(nestedJSON(200))
	f.Add([]byte{0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0})
	f.Add([]byte{0xdf, 0xff, 0xff, 0xff, 0xff, 0xc0, 0xc0})
	f.Add([]byte{0x91, 0xdb, 0xff, 0xff, 0xff, 0xff, 'a'})
	f.Add([]byte{0x91, 0xc6, 0xff, 0xff, 0xff, 0xff, 'a'})
	f.Add([]byte{0x91, 0xd6, 0xff, 0, 0, 0, 1})
	f.Add(mustMsgpack(f, map[string]any{"t": time.Unix(1, 2), "f": 1.5, "n": -7, "b": []byte{1}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		lim := Limits{MaxDepth: 8, MaxTextBytes: 4096}
		for _, style := range []Style{Indented, Compact} {
			v := Render(b, style, lim)
			if len(b) == 0 {
				if v != nil {
					t.Fatal("an empty payload gave a view")
				}
				return
			}
			if v.Size != len(b) || len(v.Text) > lim.MaxTextBytes+len("\n…") || v.Hidden != "" && v.Text != "" || !utf8.ValidString(v.Text) {
				t.Fatalf("payload % x: %+v", b, v)
			}
			if v.Cut || v.Hidden != "" {
				continue
			}
			switch v.Kind {
			case JSON:
				if !utf8.Valid(b) {
					continue // its strings' stray bytes are written as \ufffd
				}
				var want bytes.Buffer
				if style == Indented {
					_ = json.Indent(&want, b, "", "  ")
				} else {
					_ = json.Compact(&want, b)
				}
				if got := strings.TrimSpace(want.String()); v.Text != got {
					t.Fatalf("JSON % x: rendered %q, encoding/json %q", b, v.Text, got)
				}
			case Msgpack:
				if !json.Valid([]byte(v.Text)) {
					t.Fatalf("msgpack % x rendered as %q, not JSON", b, v.Text)
				}
				sameDocument(t, b, v.Text)
			}
		}
	})
}

// sameDocument checks that text, rendered from the msgpack b, decodes to
// what encoding/json makes of msgpack's own decoding of b, when every map
// of b is keyed by strings and its numbers are finite.
func sameDocument(t *testing.T, b []byte, text string) {
	doc, ok := stringKeyed(b)
	if !ok {
		return
	}
	want, err := json.Marshal(doc)
	if err != nil {
		return // NaN, which is rendered as a string
	}
	var w, g any
	if json.Unmarshal(want, &w) != nil || json.Unmarshal([]byte(text), &g) != nil {
		t.Fatalf("msgpack % x: %s or %s does not decode", b, want, text)
	}
	if !reflect.DeepEqual(w, g) {
		t.Fatalf("msgpack % x: rendered %s, encoding/json writes %s", b, text, want)
	}
}

// stringKeyed decodes b with msgpack when every map in it is keyed by
// strings (msgpack's default decoder would read a nil key as "").
func stringKeyed(b []byte) (doc any, ok bool) {
	defer func() {
		if recover() != nil { // a map keyed by a map is unhashable in Go
			ok = false
		}
	}()
	dec := msgpack.NewDecoder(bytes.NewReader(b))
	dec.SetMapDecoder(func(d *msgpack.Decoder) (any, error) { return d.DecodeUntypedMap() })
	if err := dec.Decode(&doc); err != nil {
		return nil, false // an extension msgpack does not know
	}
	return withStringKeys(doc)
}

func withStringKeys(v any) (any, bool) {
	switch x := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			ks, ok := k.(string)
			if !ok {
				return nil, false
			}
			if m[ks], ok = withStringKeys(e); !ok {
				return nil, false
			}
		}
		return m, true
	case []any:
		for i, e := range x {
			var ok bool
			if x[i], ok = withStringKeys(e); !ok {
				return nil, false
			}
		}
	}
	return v, true
}
