package converter

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to Decode: it must return an error or
// values, never panic, and a payload it accepts must survive being decoded
// and encoded again unchanged.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		``, `[]`, `[1,"a",null]`, `[{"id":"x","items":["a"],"total":1}]`, `{"a":1}`, `[1,`, `null`, `[[[]]]`, `["\u00e9", 1e400]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var (
			a any
			s string
			n int
			o order
		)
		_ = Decode(data, &a, &s, &n, &o)
		_ = Decode(data, &o)
		_ = NewEncodedValues(data).Get(nil, &n)
		_ = NewEncodedValue(data).Get(&o)

		if len(data) == 0 || Decode(data) != nil {
			return
		}
		var values []any
		if json.Unmarshal(data, &values) != nil {
			return // an array, but of numbers too large for float64
		}
		again, err := Encode(values...)
		if err != nil {
			t.Fatalf("re-encoding %#v: %v", values, err)
		}
		back := make([]any, len(values))
		ptrs := make([]any, len(values))
		for i := range back {
			ptrs[i] = &back[i]
		}
		if err := Decode(again, ptrs...); err != nil {
			t.Fatalf("decoding re-encoded %s: %v", again, err)
		}
		if len(values) == 0 {
			back = values
		}
		if !reflect.DeepEqual(back, values) {
			t.Fatalf("round trip changed %#v into %#v", values, back)
		}
	})
}

// FuzzDecodeData feeds arbitrary bytes, envelopes included, to DecodeData
// with a codec converter: it must return an error or Encode's JSON array,
// never panic.
func FuzzDecodeData(f *testing.F) {
	dc := NewCodecDataConverter(GetDefaultDataConverter(), NewZlibCodec(ZlibCodecOptions{AlwaysEncode: true}))
	good, _ := EncodeWith(dc, "a", 1)
	for _, seed := range [][]byte{good, []byte(`{"heddle_payloads":[]}`), []byte(`{"heddle_payloads":[{"metadata":{"encoding":"YmluYXJ5L3psaWI="},"data":"AAAA"}]}`),
		[]byte(`{"heddle_payloads":null}`), []byte(`[1]`), nil} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, c := range []DataConverter{nil, dc} {
			out, err := DecodeData(c, data)
			if err != nil || !IsEnvelope(data) {
				continue
			}
			var raws []json.RawMessage
			if err := json.Unmarshal(out, &raws); err != nil {
				t.Fatalf("DecodeData(%q) = %q, not a JSON array: %v", data, out, err)
			}
		}
	})
}
