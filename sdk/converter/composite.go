package converter

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
)

// ErrUnknownEncoding: a payload's encoding has no converter in the data
// converter decoding it (a payload a codec left encoded, say).
var ErrUnknownEncoding = errors.New("converter: no payload converter for the encoding")

// CompositeDataConverter is a DataConverter made of payload converters:
// a value is encoded by the first that accepts it, a payload decoded by
// the one of its encoding.
type CompositeDataConverter struct {
	converters []PayloadConverter
	byEncoding map[string]PayloadConverter
}

// NewCompositeDataConverter returns a DataConverter trying converters in
// order, as Temporal's.
func NewCompositeDataConverter(converters ...PayloadConverter) *CompositeDataConverter {
	dc := &CompositeDataConverter{converters: slices.Clone(converters), byEncoding: map[string]PayloadConverter{}}
	for _, pc := range converters {
		dc.byEncoding[pc.Encoding()] = pc
	}
	return dc
}

// defaultDataConverter is Temporal's default, in its order: nil, []byte,
// protobuf messages (written as protobuf JSON; the binary converter after
// it only decodes, as the first converter that accepts a value writes it)
// and JSON for everything else.
var defaultDataConverter = NewCompositeDataConverter(NewNilPayloadConverter(), NewByteSlicePayloadConverter(),
	NewProtoJSONPayloadConverter(), NewProtoPayloadConverter(), NewJSONPayloadConverter())

// GetDefaultDataConverter returns the data converter used when none is
// set, Temporal's: nil as binary/null, a []byte as binary/plain, a
// protobuf message as json/protobuf (binary/protobuf is read too), and
// any other value as json/plain. A value list of JSON values alone is
// stored exactly as heddle always stored it (Encode's JSON array).
func GetDefaultDataConverter() DataConverter { return defaultDataConverter }

// ToPayload returns the payload of the first converter that accepts
// value; a RawValue is its own payload.
func (dc *CompositeDataConverter) ToPayload(value any) (*Payload, error) {
	if rv, ok := value.(RawValue); ok {
		return rv.Payload(), nil
	}
	for _, pc := range dc.converters {
		p, err := pc.ToPayload(value)
		if err != nil {
			return nil, err
		}
		if p != nil {
			return p, nil
		}
	}
	return nil, fmt.Errorf("converter: no payload converter accepts a %T", value)
}

// FromPayload decodes p with the converter of its encoding; a *RawValue
// receives p as it is.
func (dc *CompositeDataConverter) FromPayload(p *Payload, valuePtr any) error {
	if p == nil {
		return nil
	}
	if rv, ok := valuePtr.(*RawValue); ok {
		*rv = NewRawValue(p)
		return nil
	}
	enc := string(p.Metadata[MetadataEncoding])
	pc, ok := dc.byEncoding[enc]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownEncoding, enc)
	}
	return pc.FromPayload(p, valuePtr)
}

func (dc *CompositeDataConverter) ToPayloads(values ...any) (*Payloads, error) {
	ps := &Payloads{}
	for i, v := range values {
		p, err := dc.ToPayload(v)
		if err != nil {
			return nil, fmt.Errorf("converter: value %d: %w", i, err)
		}
		ps.Payloads = append(ps.Payloads, p)
	}
	return ps, nil
}

// FromPayloads decodes payloads into valuePtrs in order; pointers past the
// last payload are left alone, as Decode does.
func (dc *CompositeDataConverter) FromPayloads(ps *Payloads, valuePtrs ...any) error {
	for i, p := range ps.GetPayloads() {
		if i >= len(valuePtrs) {
			break
		}
		if valuePtrs[i] == nil {
			continue
		}
		if err := dc.FromPayload(p, valuePtrs[i]); err != nil {
			return fmt.Errorf("converter: payload %d: %w", i, err)
		}
	}
	return nil
}

func (dc *CompositeDataConverter) ToString(p *Payload) string {
	if pc, ok := dc.byEncoding[string(p.GetMetadata()[MetadataEncoding])]; ok {
		return pc.ToString(p)
	}
	return fmt.Sprintf("unknown encoding %q: %d bytes", p.GetMetadata()[MetadataEncoding], len(p.GetData()))
}

func (dc *CompositeDataConverter) ToStrings(ps *Payloads) []string {
	var out []string
	for _, p := range ps.GetPayloads() {
		out = append(out, dc.ToString(p))
	}
	return out
}

func newPayload(encoding string, data []byte) *Payload {
	return &Payload{Metadata: map[string][]byte{MetadataEncoding: []byte(encoding)}, Data: data}
}

// JSONPayloadConverter writes any value as JSON (MetadataEncodingJSON).
type JSONPayloadConverter struct{}

// NewJSONPayloadConverter returns the JSON payload converter.
func NewJSONPayloadConverter() *JSONPayloadConverter { return &JSONPayloadConverter{} }

func (*JSONPayloadConverter) ToPayload(value any) (*Payload, error) {
	b, err := json.Marshal(value)
	if err != nil {
		return nil, fmt.Errorf("converter: encode %T as JSON: %w", value, err)
	}
	return newPayload(MetadataEncodingJSON, b), nil
}

func (*JSONPayloadConverter) FromPayload(p *Payload, valuePtr any) error {
	if err := json.Unmarshal(p.Data, valuePtr); err != nil {
		return fmt.Errorf("converter: decode JSON into %T: %w", valuePtr, err)
	}
	return nil
}

func (*JSONPayloadConverter) ToString(p *Payload) string { return string(p.Data) }
func (*JSONPayloadConverter) Encoding() string           { return MetadataEncodingJSON }

// NilPayloadConverter writes nil (MetadataEncodingNil).
type NilPayloadConverter struct{}

// NewNilPayloadConverter returns the nil payload converter.
func NewNilPayloadConverter() *NilPayloadConverter { return &NilPayloadConverter{} }

func (*NilPayloadConverter) ToPayload(value any) (*Payload, error) {
	if value == nil {
		return newPayload(MetadataEncodingNil, nil), nil
	}
	return nil, nil
}

// FromPayload sets the pointed-to value to its zero value.
func (*NilPayloadConverter) FromPayload(_ *Payload, valuePtr any) error { return zeroValue(valuePtr) }

// zeroValue sets what valuePtr points to to its zero value.
func zeroValue(valuePtr any) error {
	rv := reflect.ValueOf(valuePtr)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("converter: value pointer is a %T, not a non-nil pointer", valuePtr)
	}
	rv.Elem().SetZero()
	return nil
}

func (*NilPayloadConverter) ToString(*Payload) string { return "nil" }
func (*NilPayloadConverter) Encoding() string         { return MetadataEncodingNil }

// ByteSlicePayloadConverter writes a []byte as itself
// (MetadataEncodingBinary).
type ByteSlicePayloadConverter struct{}

// NewByteSlicePayloadConverter returns the []byte payload converter.
func NewByteSlicePayloadConverter() *ByteSlicePayloadConverter {
	return &ByteSlicePayloadConverter{}
}

func (*ByteSlicePayloadConverter) ToPayload(value any) (*Payload, error) {
	if b, ok := value.([]byte); ok {
		return newPayload(MetadataEncodingBinary, b), nil
	}
	return nil, nil
}

// FromPayload decodes into a pointer to a []byte (or to a type whose
// underlying type is []byte) or to an interface, as Temporal's. A
// *json.RawMessage is the exception: heddle hands values around as their
// JSON in one, and a []byte's JSON is its base64 string.
func (*ByteSlicePayloadConverter) FromPayload(p *Payload, valuePtr any) error {
	if raw, ok := valuePtr.(*json.RawMessage); ok {
		b, err := json.Marshal(p.GetData())
		*raw = b
		return err
	}
	rv := reflect.ValueOf(valuePtr)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("converter: value pointer is a %T, not a non-nil pointer", valuePtr)
	}
	v, data := rv.Elem(), slices.Clone(p.GetData())
	switch {
	case v.Kind() == reflect.Interface && reflect.TypeFor[[]byte]().AssignableTo(v.Type()):
		v.Set(reflect.ValueOf(data))
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8:
		v.SetBytes(data)
	default:
		return fmt.Errorf("converter: a binary/plain payload cannot go into a %T: it needs a []byte", valuePtr)
	}
	return nil
}

// ToString returns the bytes in base64, as Temporal's.
func (*ByteSlicePayloadConverter) ToString(p *Payload) string { return base64Raw(p.GetData()) }
func (*ByteSlicePayloadConverter) Encoding() string           { return MetadataEncodingBinary }
