package converter

import (
	"encoding/base64"
	"errors"
	"fmt"
)

// RawValue is a payload carried as it is, as Temporal's: a RawValue given
// as a value (an argument, a result) is stored as its payload, and a
// *RawValue given as a value pointer receives the payload without
// decoding it. A CompositeDataConverter (and a codec converter over one)
// passes it through; Encode and Decode do too. It has no JSON form:
// marshalling it as JSON is an error, so it is never stored as "{}" by
// mistake.
type RawValue struct {
	payload *Payload
}

// NewRawValue returns a RawValue carrying payload.
func NewRawValue(payload *Payload) RawValue { return RawValue{payload: payload} }

// Payload returns the payload the value carries.
func (v RawValue) Payload() *Payload { return v.payload }

// String describes the payload: its encoding and size.
func (v RawValue) String() string {
	return fmt.Sprintf("RawValue(%s, %d bytes)", v.payload.GetMetadata()[MetadataEncoding], len(v.payload.GetData()))
}

var errRawValueJSON = errors.New("converter: a RawValue has no JSON form")

// MarshalJSON refuses: a RawValue is a payload, not a JSON value.
func (v RawValue) MarshalJSON() ([]byte, error) { return nil, errRawValueJSON }

// UnmarshalJSON refuses: a RawValue is a payload, not a JSON value.
func (v *RawValue) UnmarshalJSON([]byte) error { return errRawValueJSON }

// base64Raw returns b in standard base64 without padding, as Temporal's
// ToString of binary payloads writes it.
func base64Raw(b []byte) string { return base64.RawStdEncoding.EncodeToString(b) }
