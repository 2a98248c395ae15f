package temporalhistory

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/heddlewf/heddle/sdk/converter"
)

// payload is one Temporal payload as protojson writes it: bytes fields
// (the data and every metadata value) in base64.
type payload struct {
	Metadata map[string]string `json:"metadata"`
	Data     string            `json:"data"`
}

// payloads is Temporal's Payloads message: the encoded arguments or
// results of one call.
type payloads struct {
	Payloads []payload `json:"payloads"`
}

// The payload encodings of Temporal's default data converter: the first
// three map onto heddle's JSON payloads; a protobuf payload is kept as it
// is, in an envelope of payloads, which heddle's default converter reads.
const (
	encodingJSON      = "json/plain"
	encodingNull      = "binary/null"
	encodingBinary    = "binary/plain"
	encodingProtoJSON = "json/protobuf"
	encodingProto     = "binary/protobuf"
)

// decodeBytes reads a protojson bytes field, which may be standard or
// URL-safe base64, padded or not.
func decodeBytes(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, fmt.Errorf("%q is not base64", truncate(s))
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// encodingOf returns a payload's encoding. protojson writes the metadata
// value in base64; hand-written histories may give the name itself.
func encodingOf(p payload) (string, error) {
	raw, ok := p.Metadata["encoding"]
	if !ok {
		return "", fmt.Errorf("a payload has no encoding in its metadata")
	}
	switch raw {
	case encodingJSON, encodingNull, encodingBinary, encodingProtoJSON, encodingProto:
		return raw, nil
	}
	b, err := decodeBytes(raw)
	if err != nil {
		return "", fmt.Errorf("payload encoding: %w", err)
	}
	return string(b), nil
}

// toJSONArray turns Temporal payloads into heddle's payload: one JSON array
// holding each value (converter.Encode's form). No payloads is a nil
// payload, as heddle records no value. json/plain values are taken as they
// are, binary/null is null, binary/plain is the JSON string Go writes for a
// []byte (which decodes into a []byte). A list holding a protobuf payload
// is kept as Temporal's payloads instead, in converter.Encode's envelope,
// so that the message decodes by protobuf's rules. Any other encoding (a
// codec's) is an error.
func toJSONArray(ps *payloads) ([]byte, error) {
	if ps == nil || len(ps.Payloads) == 0 {
		return nil, nil
	}
	for _, p := range ps.Payloads {
		if enc, err := encodingOf(p); err == nil && (enc == encodingProtoJSON || enc == encodingProto) {
			return toEnvelope(ps)
		}
	}
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, p := range ps.Payloads {
		v, err := toJSONValue(p)
		if err != nil {
			return nil, fmt.Errorf("payload %d: %w", i, err)
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(v)
	}
	buf.WriteByte(']')
	return buf.Bytes(), nil
}

func toJSONValue(p payload) ([]byte, error) {
	enc, err := encodingOf(p)
	if err != nil {
		return nil, err
	}
	data, err := decodeBytes(p.Data)
	if err != nil {
		return nil, fmt.Errorf("payload data: %w", err)
	}
	switch enc {
	case encodingNull:
		return []byte("null"), nil
	case encodingBinary:
		return json.Marshal(data)
	case encodingJSON:
		var c bytes.Buffer
		if err := json.Compact(&c, data); err != nil {
			return nil, fmt.Errorf("json/plain payload is not JSON: %w", err)
		}
		return c.Bytes(), nil
	}
	return nil, fmt.Errorf("payload encoding %q has no heddle equivalent (heddle payloads are JSON)", strings.ToValidUTF8(enc, "?"))
}

// toEnvelope keeps Temporal payloads of the default converter's encodings
// as converter payloads: their metadata (encoding, message type) and data.
func toEnvelope(ps *payloads) ([]byte, error) {
	vals := make([]any, len(ps.Payloads))
	for i, p := range ps.Payloads {
		enc, err := encodingOf(p)
		if err != nil {
			return nil, fmt.Errorf("payload %d: %w", i, err)
		}
		switch enc {
		case encodingJSON, encodingNull, encodingBinary, encodingProtoJSON, encodingProto:
		default:
			return nil, fmt.Errorf("payload %d: payload encoding %q has no heddle equivalent", i, strings.ToValidUTF8(enc, "?"))
		}
		data, err := decodeBytes(p.Data)
		if err != nil {
			return nil, fmt.Errorf("payload %d data: %w", i, err)
		}
		cp := &converter.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(enc)}, Data: data}
		if t, ok := p.Metadata[converter.MetadataMessageType]; ok {
			// protojson writes it in base64; a hand-written history may
			// give the name itself, which is never valid base64 (it has dots).
			name, err := decodeBytes(t)
			if err != nil {
				name = []byte(t)
			}
			cp.Metadata[converter.MetadataMessageType] = name
		}
		vals[i] = converter.NewRawValue(cp)
	}
	return converter.Encode(vals...)
}

// oneValue decodes the only value of payloads into v (a GetVersion's
// version, a marker's change id).
func oneValue(ps *payloads, v any) error {
	arr, err := toJSONArray(ps)
	if err != nil {
		return err
	}
	var vals []json.RawMessage
	if err := json.Unmarshal(arr, &vals); err != nil || len(vals) != 1 {
		return fmt.Errorf("want one value, have %d", len(vals))
	}
	return json.Unmarshal(vals[0], v)
}
