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

var defaultDataConverter = NewCompositeDataConverter(NewNilPayloadConverter(), NewByteSlicePayloadConverter(), NewJSONPayloadConverter())

// GetDefaultDataConverter returns the data converter used when none is
// set: nil, []byte and JSON, as Temporal's without protobuf. Payloads it
// writes are stored exactly as heddle always stored them (Encode's JSON).
func GetDefaultDataConverter() DataConverter { return defaultDataConverter }

func (dc *CompositeDataConverter) ToPayload(value any) (*Payload, error) {
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

func (dc *CompositeDataConverter) FromPayload(p *Payload, valuePtr any) error {
	if p == nil {
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

// setValue points valuePtr at v's value.
func setValue(valuePtr any, v reflect.Value) error {
	rv := reflect.ValueOf(valuePtr)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("converter: value pointer is a %T, not a non-nil pointer", valuePtr)
	}
	if !v.Type().AssignableTo(rv.Elem().Type()) {
		return fmt.Errorf("converter: a %s cannot go into a %T", v.Type(), valuePtr)
	}
	rv.Elem().Set(v)
	return nil
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
func (*NilPayloadConverter) FromPayload(_ *Payload, valuePtr any) error {
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

func (*ByteSlicePayloadConverter) FromPayload(p *Payload, valuePtr any) error {
	return setValue(valuePtr, reflect.ValueOf(slices.Clone(p.Data)))
}

func (*ByteSlicePayloadConverter) ToString(p *Payload) string {
	return fmt.Sprintf("%d bytes", len(p.Data))
}
func (*ByteSlicePayloadConverter) Encoding() string { return MetadataEncodingBinary }
