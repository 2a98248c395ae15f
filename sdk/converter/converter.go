// Package converter turns the values that cross a workflow's boundary (inputs, results, signals) into JSON payload bytes and back.
package converter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// Sentinel errors of the package, matched with errors.Is.
var (
	// ErrNoData: an EncodedValue or EncodedValues holds no payload at all,
	// so there is nothing to decode (Temporal's temporal.ErrNoData, which
	// is this same value).
	ErrNoData = errors.New("no data available")
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
// pointers than values is fine too, as in Temporal: the pointers past the
// last value are left as they are (a handler's missing arguments are zero
// values), which lets a reader add parameters before every sender sends
// them. A nil pointer skips its value. Empty data holds no values. An
// envelope of EncodeData is decoded with the default data converter.
func Decode(data []byte, valuePtrs ...any) error {
	if IsEnvelope(data) {
		// Stored by another data converter: readable here when its
		// payloads need no codec (DecodeWith gives the codec).
		var err error
		if data, err = DecodeData(nil, data); err != nil {
			return err
		}
	}
	var raw []json.RawMessage
	if len(data) > 0 {
		if err := json.Unmarshal(data, &raw); err != nil {
			return fmt.Errorf("converter: payload is not a JSON array of values: %w", err)
		}
	}
	for i, p := range valuePtrs {
		if p == nil {
			continue
		}
		rv := reflect.ValueOf(p)
		if rv.Kind() != reflect.Pointer {
			return fmt.Errorf("converter: value pointer %d is a %T, not a pointer", i, p)
		}
		if rv.IsNil() || i >= len(raw) {
			continue
		}
		if err := json.Unmarshal(raw[i], p); err != nil {
			return fmt.Errorf("converter: decode value %d into %T: %w", i, p, err)
		}
	}
	return nil
}

// EncodedValue is one value whose decoding is left to the code that knows
// its type, such as the result of a query or a side effect. Get decodes it
// into valuePtr; it returns ErrNoData when there is no payload at all.
type EncodedValue interface {
	HasValue() bool
	Get(valuePtr any) error
}

// EncodedValues is a list of values decoded by the code that knows their
// types, such as the details of an error or the arguments of a dynamic
// workflow. Get decodes them in order with the rules of Decode; it returns
// ErrNoData when there is no payload at all.
type EncodedValues interface {
	HasValues() bool
	Get(valuePtrs ...any) error
}

// DataHolder is implemented by the EncodedValue and EncodedValues this
// package makes: Data returns the payload bytes (Encode's JSON array),
// which the caller must not change. Code that stores or forwards a value
// without decoding it asks for it with a type assertion.
type DataHolder interface {
	Data() []byte
}

// NewEncodedValue wraps payload bytes written by Encode as one value: Get
// decodes the first. The slice is kept, not copied, so the caller must not
// change it afterwards.
func NewEncodedValue(data []byte) EncodedValue { return encodedValue{data: data} }

// NewEncodedValues wraps payload bytes written by Encode as a list of
// values. The slice is kept, not copied.
func NewEncodedValues(data []byte) EncodedValues { return encodedValues{data: data} }

// DataOf returns the payload bytes of v when it is one this package made
// (or anything else implementing DataHolder), else nil.
func DataOf(v any) []byte {
	if p, ok := v.(DataHolder); ok {
		return p.Data()
	}
	return nil
}

type encodedValue struct{ data []byte }

func (v encodedValue) HasValue() bool { return len(v.data) > 0 }
func (v encodedValue) Data() []byte   { return v.data }

func (v encodedValue) Get(valuePtr any) error {
	if !v.HasValue() {
		return ErrNoData
	}
	return Decode(v.data, valuePtr)
}

type encodedValues struct{ data []byte }

func (v encodedValues) HasValues() bool { return len(v.data) > 0 }
func (v encodedValues) Data() []byte    { return v.data }

func (v encodedValues) Get(valuePtrs ...any) error {
	if !v.HasValues() {
		return ErrNoData
	}
	return Decode(v.data, valuePtrs...)
}
