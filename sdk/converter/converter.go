// Package converter turns the values that cross a workflow's boundary (inputs, results, signals) into JSON payload bytes and back.
package converter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
)

// Encode writes values as one JSON array, so a payload can carry any number
// of arguments in order. No values encode to nil, not to "[]", so that "no
// payload" has a single representation.
func Encode(values ...any) ([]byte, error) {
	if len(values) == 0 {
		return nil, nil
	}
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, v := range values {
		// Each value is marshalled on its own so that an error can say
		// which argument could not be encoded.
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("converter: encode value %d (%T): %w", i, v, err)
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(b)
	}
	buf.WriteByte(']')
	return buf.Bytes(), nil
}

// Decode reads a payload written by Encode into valuePtrs, in order. Fewer
// pointers than encoded values is fine: a reader may ignore trailing
// arguments it does not know, which lets a sender add arguments later. More
// pointers than values is an error, because a value the reader needs is
// missing. A nil pointer skips its value. Empty data holds no values.
func Decode(data []byte, valuePtrs ...any) error {
	var raw []json.RawMessage
	if len(data) > 0 {
		if err := json.Unmarshal(data, &raw); err != nil {
			return fmt.Errorf("converter: payload is not a JSON array of values: %w", err)
		}
	}
	if len(valuePtrs) > len(raw) {
		return fmt.Errorf("converter: %d value pointers given but the payload holds only %d values", len(valuePtrs), len(raw))
	}
	for i, p := range valuePtrs {
		if p == nil {
			continue
		}
		rv := reflect.ValueOf(p)
		if rv.Kind() != reflect.Pointer {
			return fmt.Errorf("converter: value pointer %d is a %T, not a pointer", i, p)
		}
		if rv.IsNil() {
			continue
		}
		if err := json.Unmarshal(raw[i], p); err != nil {
			return fmt.Errorf("converter: decode value %d into %T: %w", i, p, err)
		}
	}
	return nil
}

// EncodedValue is a payload whose decoding is left to the code that knows
// the target type, such as a workflow reading a signal. The zero value holds
// no payload.
type EncodedValue struct {
	data []byte
}

// NewEncodedValue wraps payload bytes written by Encode. The slice is kept,
// not copied, so the caller must not change it afterwards.
func NewEncodedValue(data []byte) EncodedValue {
	return EncodedValue{data: data}
}

// HasValue reports whether the payload holds anything at all.
func (v EncodedValue) HasValue() bool { return len(v.data) > 0 }

// Data returns the payload bytes; the caller must not change them.
func (v EncodedValue) Data() []byte { return v.data }

// Get decodes the payload into valuePtrs with the rules of Decode.
func (v EncodedValue) Get(valuePtrs ...any) error { return Decode(v.data, valuePtrs...) }
