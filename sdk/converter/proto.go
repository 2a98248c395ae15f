package converter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// maxProtoDepth bounds how deeply the messages of a protobuf payload may
// nest when it is decoded, so that a hostile payload (a google.protobuf.Value
// of lists within lists) cannot recurse without end; real messages stay far
// below it.
const maxProtoDepth = 1000

var protoMessageType = reflect.TypeFor[proto.Message]()

// protoByValue caches, per struct type, whether a pointer to it is a
// protobuf message, so that Encode asks reflect once per type.
var protoByValue sync.Map // reflect.Type → bool

// protoMessageOf returns value as a protobuf message: value itself when it
// is one (a pointer to a generated struct), or a pointer to a copy of it
// when value is such a struct passed by value, as Temporal's converters
// accept.
func protoMessageOf(value any) (proto.Message, bool) {
	if m, ok := value.(proto.Message); ok {
		return m, true
	}
	t := reflect.TypeOf(value)
	if t == nil || t.Kind() != reflect.Struct || !isProtoStruct(t) {
		return nil, false
	}
	p := reflect.New(t)
	p.Elem().Set(reflect.ValueOf(value))
	return p.Interface().(proto.Message), true
}

// isProtoStruct reports whether a pointer to the struct type t is a
// protobuf message.
func isProtoStruct(t reflect.Type) bool {
	if v, ok := protoByValue.Load(t); ok {
		return v.(bool)
	}
	is := reflect.PointerTo(t).Implements(protoMessageType)
	protoByValue.Store(t, is)
	return is
}

// isNilValue reports whether value is nil or a nil pointer.
func isNilValue(value any) bool {
	if value == nil {
		return true
	}
	v := reflect.ValueOf(value)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// protoTarget returns the message that valuePtr points to, ready to be
// filled: a nil *T it points to is set to a new T first, and a T held by
// value is filled in place.
func protoTarget(valuePtr any) (proto.Message, error) {
	rv := reflect.ValueOf(valuePtr)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return nil, fmt.Errorf("converter: value pointer is a %T, not a non-nil pointer", valuePtr)
	}
	elem := rv.Elem()
	switch {
	case elem.Kind() == reflect.Interface:
		return nil, fmt.Errorf("converter: a protobuf payload needs a pointer to a concrete message type, not a %T", valuePtr)
	case elem.Kind() == reflect.Pointer && elem.Type().Implements(protoMessageType):
		if elem.IsNil() {
			elem.Set(reflect.New(elem.Type().Elem()))
		}
		return elem.Interface().(proto.Message), nil
	case elem.Kind() == reflect.Struct && isProtoStruct(elem.Type()):
		return elem.Addr().Interface().(proto.Message), nil
	}
	return nil, fmt.Errorf("converter: a protobuf payload cannot go into a %T: not a protobuf message", valuePtr)
}

// newProtoPayload returns a payload of encoding enc holding data, naming
// m's message type unless exclude.
func newProtoPayload(enc string, data []byte, m proto.Message, exclude bool) *Payload {
	p := newPayload(enc, data)
	if !exclude {
		p.Metadata[MetadataMessageType] = []byte(m.ProtoReflect().Descriptor().FullName())
	}
	return p
}

// checkProtoSize refuses a protobuf payload larger than a payload may
// inflate to, before the decoder allocates for it.
func checkProtoSize(p *Payload) error {
	if n := len(p.GetData()); n > maxDecodeBytes {
		return fmt.Errorf("converter: a %d-byte protobuf payload is over the %d-byte limit", n, maxDecodeBytes)
	}
	return nil
}

var jsonNull = []byte("null")

// ProtoJSONPayloadConverterOptions configure
// NewProtoJSONPayloadConverterWithOptions, as Temporal's (without its
// options for gogo/protobuf messages, which heddle does not support).
type ProtoJSONPayloadConverterOptions struct {
	// ExcludeProtobufMessageTypes leaves the message type out of the
	// payload's metadata.
	ExcludeProtobufMessageTypes bool
	// AllowUnknownFields ignores fields the message does not have when
	// decoding, instead of failing.
	AllowUnknownFields bool
	// UseProtoNames writes the proto field names (snake_case) instead of
	// the lowerCamelCase JSON names.
	UseProtoNames bool
	// UseEnumNumbers writes enum values as numbers.
	UseEnumNumbers bool
	// EmitUnpopulated writes fields that hold their zero value.
	EmitUnpopulated bool
}

// ProtoJSONPayloadConverter writes a protobuf message (of
// google.golang.org/protobuf) as its protobuf JSON
// (MetadataEncodingProtoJSON), as Temporal's.
type ProtoJSONPayloadConverter struct {
	options   ProtoJSONPayloadConverterOptions
	marshal   protojson.MarshalOptions
	unmarshal protojson.UnmarshalOptions
}

// NewProtoJSONPayloadConverter returns the protobuf JSON payload converter.
func NewProtoJSONPayloadConverter() *ProtoJSONPayloadConverter {
	return NewProtoJSONPayloadConverterWithOptions(ProtoJSONPayloadConverterOptions{})
}

// NewProtoJSONPayloadConverterWithOptions returns the protobuf JSON payload
// converter configured by options.
func NewProtoJSONPayloadConverterWithOptions(options ProtoJSONPayloadConverterOptions) *ProtoJSONPayloadConverter {
	return &ProtoJSONPayloadConverter{
		options: options,
		marshal: protojson.MarshalOptions{UseProtoNames: options.UseProtoNames, UseEnumNumbers: options.UseEnumNumbers,
			EmitUnpopulated: options.EmitUnpopulated},
		unmarshal: protojson.UnmarshalOptions{DiscardUnknown: options.AllowUnknownFields, RecursionLimit: maxProtoDepth},
	}
}

// ToPayload encodes a protobuf message; it returns nil, nil for any other
// value. A nil message pointer is written as JSON null.
func (c *ProtoJSONPayloadConverter) ToPayload(value any) (*Payload, error) {
	m, ok := protoMessageOf(value)
	if !ok {
		return nil, nil
	}
	if isNilValue(value) {
		return newProtoPayload(MetadataEncodingProtoJSON, jsonNull, m, c.options.ExcludeProtobufMessageTypes), nil
	}
	b, err := c.marshal.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("converter: encode %T as protobuf JSON: %w", value, err)
	}
	return newProtoPayload(MetadataEncodingProtoJSON, b, m, c.options.ExcludeProtobufMessageTypes), nil
}

// FromPayload decodes into a pointer to a message (or to a message
// pointer, which gets a new message when nil). JSON null sets the value to
// its zero value. A *json.RawMessage gets the payload's JSON as it is,
// which is how heddle hands values around as JSON.
func (c *ProtoJSONPayloadConverter) FromPayload(p *Payload, valuePtr any) error {
	if err := checkProtoSize(p); err != nil {
		return err
	}
	if raw, ok := valuePtr.(*json.RawMessage); ok {
		*raw = bytes.Clone(p.GetData())
		return nil
	}
	if bytes.Equal(bytes.TrimSpace(p.GetData()), jsonNull) {
		return zeroValue(valuePtr)
	}
	m, err := protoTarget(valuePtr)
	if err != nil {
		return err
	}
	if err := c.unmarshal.Unmarshal(p.GetData(), m); err != nil {
		return fmt.Errorf("converter: decode protobuf JSON into %T: %w", valuePtr, err)
	}
	return nil
}

// ToString returns the payload's JSON.
func (c *ProtoJSONPayloadConverter) ToString(p *Payload) string { return string(p.GetData()) }

// Encoding returns MetadataEncodingProtoJSON.
func (c *ProtoJSONPayloadConverter) Encoding() string { return MetadataEncodingProtoJSON }

// ExcludeProtobufMessageTypes reports whether payloads leave out the
// message type.
func (c *ProtoJSONPayloadConverter) ExcludeProtobufMessageTypes() bool {
	return c.options.ExcludeProtobufMessageTypes
}

// ProtoPayloadConverterOptions configure NewProtoPayloadConverterWithOptions.
type ProtoPayloadConverterOptions struct {
	// ExcludeProtobufMessageTypes leaves the message type out of the
	// payload's metadata.
	ExcludeProtobufMessageTypes bool
}

// ProtoPayloadConverter writes a protobuf message as its wire bytes
// (MetadataEncodingProto), as Temporal's. Maps are written in a
// deterministic order, so the same message always makes the same payload.
type ProtoPayloadConverter struct {
	options   ProtoPayloadConverterOptions
	marshal   proto.MarshalOptions
	unmarshal proto.UnmarshalOptions
}

// NewProtoPayloadConverter returns the binary protobuf payload converter.
func NewProtoPayloadConverter() *ProtoPayloadConverter {
	return NewProtoPayloadConverterWithOptions(ProtoPayloadConverterOptions{})
}

// NewProtoPayloadConverterWithOptions returns the binary protobuf payload
// converter configured by options.
func NewProtoPayloadConverterWithOptions(options ProtoPayloadConverterOptions) *ProtoPayloadConverter {
	return &ProtoPayloadConverter{options: options, marshal: proto.MarshalOptions{Deterministic: true},
		unmarshal: proto.UnmarshalOptions{RecursionLimit: maxProtoDepth}}
}

// ToPayload encodes a protobuf message; it returns nil, nil for any other
// value.
func (c *ProtoPayloadConverter) ToPayload(value any) (*Payload, error) {
	m, ok := protoMessageOf(value)
	if !ok {
		return nil, nil
	}
	b, err := c.marshal.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("converter: encode %T as protobuf: %w", value, err)
	}
	return newProtoPayload(MetadataEncodingProto, b, m, c.options.ExcludeProtobufMessageTypes), nil
}

// FromPayload decodes into a pointer to a message (or to a message
// pointer, which gets a new message when nil).
func (c *ProtoPayloadConverter) FromPayload(p *Payload, valuePtr any) error {
	if err := checkProtoSize(p); err != nil {
		return err
	}
	m, err := protoTarget(valuePtr)
	if err != nil {
		return err
	}
	if err := c.unmarshal.Unmarshal(p.GetData(), m); err != nil {
		return fmt.Errorf("converter: decode protobuf into %T: %w", valuePtr, err)
	}
	return nil
}

// ToString returns the payload's bytes in base64, as Temporal's: they
// cannot be read without the message type.
func (c *ProtoPayloadConverter) ToString(p *Payload) string {
	return base64Raw(p.GetData())
}

// Encoding returns MetadataEncodingProto.
func (c *ProtoPayloadConverter) Encoding() string { return MetadataEncodingProto }

// ExcludeProtobufMessageTypes reports whether payloads leave out the
// message type.
func (c *ProtoPayloadConverter) ExcludeProtobufMessageTypes() bool {
	return c.options.ExcludeProtobufMessageTypes
}
