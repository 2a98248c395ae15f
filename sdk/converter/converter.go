// Package converter turns the values that cross a workflow's boundary (inputs, results, signals) into JSON payload bytes and back.
package converter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"google.golang.org/protobuf/proto"
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
//
// A list holding a value that JSON cannot carry as Temporal does (a
// []byte, a protobuf message, a RawValue of another encoding) is written
// instead as an envelope of the default data converter's payloads, one per
// value (see EncodeData): the []byte as binary/plain, the message as
// json/protobuf, a nil as binary/null and every other value as json/plain.
// Decode reads both forms.
func Encode(values ...any) ([]byte, error) {
	if len(values) == 0 {
		return nil, nil
	}
	for _, v := range values {
		if needsPayload(v) {
			return encodeEnvelope(values)
		}
	}
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, v := range values {
		// Each value is marshalled on its own so that an error can say
		// which argument could not be encoded.
		var b []byte
		var err error
		if rv, ok := v.(RawValue); ok {
			b, err = rawJSON(rv.Payload())
		} else {
			b, err = json.Marshal(v)
		}
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

// needsPayload reports whether v is written as a payload of its own rather
// than as JSON in the array: a []byte, a protobuf message (not a nil
// pointer, which is null either way), and a RawValue whose payload is not
// JSON. The checks are type switches, so values of other types cost the
// hot path next to nothing.
func needsPayload(v any) bool {
	switch x := v.(type) {
	case nil, json.RawMessage, string, bool, int, int64, float64, map[string]any, []any:
		return false
	case []byte:
		return true
	case RawValue:
		return !isJSONPayload(x.Payload())
	case proto.Message:
		return !isNilValue(x)
	}
	t := reflect.TypeOf(v)
	return t.Kind() == reflect.Struct && isProtoStruct(t)
}

// isJSONPayload reports whether p holds a value JSON writes as it is: a
// json/plain value, or nil.
func isJSONPayload(p *Payload) bool {
	switch string(p.GetMetadata()[MetadataEncoding]) {
	case MetadataEncodingJSON, MetadataEncodingNil:
		return true
	}
	return p == nil
}

// rawJSON returns the JSON of a payload isJSONPayload accepts, checked and
// compacted so that it cannot break the array it goes into.
func rawJSON(p *Payload) ([]byte, error) {
	if string(p.GetMetadata()[MetadataEncoding]) != MetadataEncodingJSON {
		return []byte("null"), nil
	}
	return json.Marshal(json.RawMessage(p.GetData()))
}

// encodeEnvelope writes values as an envelope of the default data
// converter's payloads.
func encodeEnvelope(values []any) ([]byte, error) {
	if len(values) > maxEnvelopePayloads {
		return nil, fmt.Errorf("converter: %d values, over the %d one payload list may hold", len(values), maxEnvelopePayloads)
	}
	ps := make([]*Payload, len(values))
	for i, v := range values {
		p, err := defaultDataConverter.ToPayload(v)
		if err != nil {
			return nil, fmt.Errorf("converter: encode value %d (%T): %w", i, v, err)
		}
		ps[i] = p
	}
	return json.Marshal(envelope{Payloads: ps})
}

// Decode reads a payload written by Encode into valuePtrs, in order. Fewer
// pointers than encoded values is fine: a reader may ignore trailing
// arguments it does not know, which lets a sender add arguments later. More
// pointers than values is fine too, as in Temporal: the pointers past the
// last value are left as they are (a handler's missing arguments are zero
// values), which lets a reader add parameters before every sender sends
// them. A nil pointer skips its value. Empty data holds no values.
//
// An envelope (Encode's for a []byte or a protobuf message, or
// EncodeData's of a data converter whose payloads need no codec) is decoded
// with the default data converter, payload by payload; a *RawValue
// receives its value's payload as it is. A []byte that an earlier heddle
// stored as a JSON base64 string still decodes into a []byte.
func Decode(data []byte, valuePtrs ...any) error {
	for i, p := range valuePtrs {
		if p != nil && reflect.ValueOf(p).Kind() != reflect.Pointer {
			return fmt.Errorf("converter: value pointer %d is a %T, not a pointer", i, p)
		}
	}
	if IsEnvelope(data) {
		env, err := parseEnvelope(data)
		if err != nil {
			return err
		}
		ptrs := make([]any, len(valuePtrs))
		for i, p := range valuePtrs {
			if p != nil && !reflect.ValueOf(p).IsNil() {
				ptrs[i] = p
			}
		}
		return defaultDataConverter.FromPayloads(&Payloads{Payloads: env.Payloads}, ptrs...)
	}
	var raw []json.RawMessage
	if len(data) > 0 {
		if err := json.Unmarshal(data, &raw); err != nil {
			return fmt.Errorf("converter: payload is not a JSON array of values: %w", err)
		}
	}
	for i, p := range valuePtrs {
		if p == nil || i >= len(raw) || reflect.ValueOf(p).IsNil() {
			continue
		}
		if rv, ok := p.(*RawValue); ok {
			*rv = NewRawValue(jsonPayload(raw[i]))
			continue
		}
		if err := json.Unmarshal(raw[i], p); err != nil {
			return fmt.Errorf("converter: decode value %d into %T: %w", i, p, err)
		}
	}
	return nil
}

// jsonPayload is the default converter's payload of one JSON value.
func jsonPayload(raw json.RawMessage) *Payload {
	if bytes.Equal(bytes.TrimSpace(raw), jsonNull) {
		return newPayload(MetadataEncodingNil, nil)
	}
	return newPayload(MetadataEncodingJSON, bytes.Clone(raw))
}

// RawValues splits a value list as it is stored (Encode's JSON array or an
// envelope of payloads) into one RawValue per value: JSON values as
// json/plain payloads (null as binary/null), an envelope's payloads as they
// are. Encode of the result writes the same values again, so a list can be
// forwarded without knowing its types.
func RawValues(data []byte) ([]RawValue, error) {
	if len(data) == 0 {
		return nil, nil
	}
	if IsEnvelope(data) {
		env, err := parseEnvelope(data)
		if err != nil {
			return nil, err
		}
		out := make([]RawValue, len(env.Payloads))
		for i, p := range env.Payloads {
			out[i] = NewRawValue(p)
		}
		return out, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, fmt.Errorf("converter: payload is not a JSON array of values: %w", err)
	}
	out := make([]RawValue, len(raws))
	for i, r := range raws {
		out[i] = NewRawValue(jsonPayload(r))
	}
	return out, nil
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
