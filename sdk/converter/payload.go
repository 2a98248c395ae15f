package converter

import (
	"encoding/json"
	"fmt"
)

// Metadata keys and encodings of the payloads this package makes, as
// Temporal's.
const (
	// MetadataEncoding is the metadata key naming a payload's encoding.
	MetadataEncoding = "encoding"
	// MetadataEncodingJSON: Data is the value's JSON.
	MetadataEncodingJSON = "json/plain"
	// MetadataEncodingNil: the value is nil; Data is empty.
	MetadataEncodingNil = "binary/null"
	// MetadataEncodingBinary: the value is a []byte, Data its bytes.
	MetadataEncodingBinary = "binary/plain"
	// MetadataEncodingProtoJSON: the value is a protobuf message, Data its
	// protobuf JSON (protojson).
	MetadataEncodingProtoJSON = "json/protobuf"
	// MetadataEncodingProto: the value is a protobuf message, Data its
	// protobuf wire bytes.
	MetadataEncodingProto = "binary/protobuf"
	// MetadataMessageType is the metadata key naming a protobuf payload's
	// message type ("my.package.MyMessage").
	MetadataMessageType = "messageType"
)

// Payload is one encoded value with metadata saying how to read it: what
// Temporal's go.temporal.io/api/common/v1.Payload holds, so a converter or
// codec written for Temporal ports by swapping commonpb.Payload for this
// type. Marshal and Unmarshal give a codec the whole payload as bytes (as
// protobuf's do; the format here is JSON, not protobuf).
type Payload struct {
	Metadata map[string][]byte `json:"metadata,omitempty"`
	Data     []byte            `json:"data,omitempty"`
}

// Payloads is a list of payloads: the arguments of a call, or a result.
type Payloads struct {
	Payloads []*Payload `json:"payloads"`
}

// Marshal returns p as bytes that Unmarshal reads back.
func (p *Payload) Marshal() ([]byte, error) { return json.Marshal(p) }

// Unmarshal replaces p with the payload b holds (Marshal's bytes).
func (p *Payload) Unmarshal(b []byte) error {
	*p = Payload{}
	if err := json.Unmarshal(b, p); err != nil {
		return fmt.Errorf("converter: not a marshalled payload: %w", err)
	}
	return nil
}

// GetMetadata returns p's metadata (nil for a nil p), as protobuf's getter.
func (p *Payload) GetMetadata() map[string][]byte {
	if p == nil {
		return nil
	}
	return p.Metadata
}

// GetData returns p's data (nil for a nil p), as protobuf's getter.
func (p *Payload) GetData() []byte {
	if p == nil {
		return nil
	}
	return p.Data
}

// GetPayloads returns ps's list (nil for a nil ps).
func (ps *Payloads) GetPayloads() []*Payload {
	if ps == nil {
		return nil
	}
	return ps.Payloads
}

// PayloadConverter turns one value of the kinds it knows into a payload
// and back, as Temporal's. ToPayload returns nil, nil for a value it does
// not handle, so a composite converter can try the next one. Encoding
// names the encoding it writes in MetadataEncoding. Implementations must be
// deterministic (workflow code replays through them) and safe for
// concurrent use.
type PayloadConverter interface {
	ToPayload(value any) (*Payload, error)
	FromPayload(payload *Payload, valuePtr any) error
	ToString(payload *Payload) string
	Encoding() string
}

// DataConverter turns the values crossing a workflow's boundary into
// payloads and back, as Temporal's. It is set on client.Options and used
// by the client and by every worker made from it; it must be
// deterministic and safe for concurrent use.
type DataConverter interface {
	ToPayload(value any) (*Payload, error)
	FromPayload(payload *Payload, valuePtr any) error
	ToPayloads(value ...any) (*Payloads, error)
	FromPayloads(payloads *Payloads, valuePtrs ...any) error
	ToString(input *Payload) string
	ToStrings(input *Payloads) []string
}

// PayloadCodec transforms encoded payloads as bytes (encryption,
// compression), as Temporal's: Decode must reverse Encode, and both must
// be safe for concurrent use. A codec is given every payload the client
// and its workers send, and must leave alone (pass through) payloads it
// did not encode when decoding, as Temporal's samples do.
type PayloadCodec interface {
	Encode(payloads []*Payload) ([]*Payload, error)
	Decode(payloads []*Payload) ([]*Payload, error)
}
