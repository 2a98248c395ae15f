package converter

import (
	"encoding/json"
	"reflect"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// FuzzDecode feeds arbitrary bytes to Decode: it must return an error or
// values, never panic, and a payload it accepts must survive being decoded
// and encoded again unchanged.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		``, `[]`, `[1,"a",null]`, `[{"id":"x","items":["a"],"total":1}]`, `{"a":1}`, `[1,`, `null`, `[[[]]]`, `["\u00e9", 1e400]`,
		`{"heddle_payloads":[{"metadata":{"encoding":"YmluYXJ5L3BsYWlu"},"data":"AAEC"}]}`,
		`{"heddle_payloads":[{"metadata":{"encoding":"anNvbi9wcm90b2J1Zg=="},"data":"WzEsWzJdXQ=="},{}]}`,
		`{"heddle_payloads":[{"metadata":{"encoding":"YmluYXJ5L3Byb3RvYnVm"},"data":"CgF4"},null]}`,
		`{"heddle_payloads":[{"metadata":{"encoding":"YmluYXJ5L251bGw="}},{"metadata":{"encoding":"anNvbi9wbGFpbg=="},"data":"Mg=="}]}`,
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
		var (
			b  []byte
			rv RawValue
			pv structpb.Value
			pl *structpb.ListValue
		)
		_ = Decode(data, &a, &s, &n, &o)
		_ = Decode(data, &o)
		_ = Decode(data, &b, &pv, &pl, &rv)
		_ = NewEncodedValues(data).Get(nil, &n)
		_ = NewEncodedValue(data).Get(&o)
		if vals, err := RawValues(data); err == nil {
			args := make([]any, len(vals))
			for i, v := range vals {
				args[i] = v
			}
			// The values of a JSON array are written again; an envelope's
			// json/plain payloads may hold bytes that are not JSON, which
			// Encode refuses to put in an array.
			if _, err := Encode(args...); err != nil && !IsEnvelope(data) {
				t.Fatalf("re-encoding the values of %q: %v", data, err)
			}
		}
		if IsEnvelope(data) {
			return
		}

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
			// What Encode writes: a JSON array, or an envelope of the
			// default converter's payloads that Decode reads.
			if IsEnvelope(out) {
				if _, err := RawValues(out); err != nil {
					t.Fatalf("DecodeData(%q) = %q, an envelope RawValues refuses: %v", data, out, err)
				}
				continue
			}
			var raws []json.RawMessage
			if err := json.Unmarshal(out, &raws); err != nil {
				t.Fatalf("DecodeData(%q) = %q, not a JSON array: %v", data, out, err)
			}
		}
	})
}

// FuzzProtoPayload feeds arbitrary bytes to both protobuf payload
// converters, into messages that nest (google.protobuf.Value) and that do
// not: each must return an error or a message, never panic or recurse
// without end, and a message it accepts must be written again.
func FuzzProtoPayload(f *testing.F) {
	for _, seed := range []string{`null`, `{"a":[1,"x",{"b":null}]}`, `[[[[[]]]]]`, `"2026-01-31T09:00:00Z"`, "\x0a\x01x", "\x32\x03\x32\x01\x00", ``} {
		f.Add([]byte(seed))
	}
	pj, pb := NewProtoJSONPayloadConverter(), NewProtoPayloadConverter()
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, c := range []PayloadConverter{pj, pb} {
			p := newPayload(c.Encoding(), data)
			var v *structpb.Value
			if c.FromPayload(p, &v) == nil && v != nil {
				if _, err := c.ToPayload(v); err != nil {
					t.Fatalf("%s: a value it read (%v) cannot be written: %v", c.Encoding(), v, err)
				}
			}
			var ts timestamppb.Timestamp
			_ = c.FromPayload(p, &ts)
			_ = c.ToString(p)
		}
	})
}
