package converter

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// How payloads are stored. Encode's JSON array of values is what heddle
// stores with the default data converter for values JSON carries as they
// are. With any other data converter (a codec's, say) the client and its
// workers store a value list as an envelope instead: a JSON object whose one
// key, envelopeKey, holds the converter's payloads (metadata and data,
// base64 in JSON). Encode writes the default converter's envelope too, for
// a list holding a []byte or a protobuf message. All forms can sit in one
// history; the envelope's first bytes tell them apart.

const envelopeKey = "heddle_payloads"

var envelopePrefix = []byte(`{"` + envelopeKey + `":`)

type envelope struct {
	Payloads []*Payload `json:"heddle_payloads"`
}

// Bounds on the envelopes decoded here, which are bytes from outside (a
// stored history, a request): their size, and the payloads they may hold,
// so that a small envelope of many empty payloads cannot make many
// allocations. A value list is a call's arguments; no real one comes near.
const (
	maxDecodeBytes      = maxInflatedBytes
	maxEnvelopePayloads = 1 << 14
)

// IsEnvelope reports whether data is a value list stored as payloads (an
// envelope of EncodeData, or Encode's for values JSON cannot carry).
func IsEnvelope(data []byte) bool { return bytes.HasPrefix(data, envelopePrefix) }

// parseEnvelope decodes an envelope within the bounds above. Every object
// of an envelope opens with a brace (the envelope, each payload, each
// metadata map), so counting them bounds the payloads before any is made.
func parseEnvelope(data []byte) (*envelope, error) {
	if len(data) > maxDecodeBytes {
		return nil, fmt.Errorf("converter: a %d-byte payload envelope is over the %d-byte limit", len(data), maxDecodeBytes)
	}
	if n := bytes.Count(data, []byte("{")); n > 2*maxEnvelopePayloads+1 {
		return nil, fmt.Errorf("converter: payload envelope opens %d objects, over the %d of %d payloads", n, 2*maxEnvelopePayloads+1, maxEnvelopePayloads)
	}
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, fmt.Errorf("converter: bad payload envelope: %w", err)
	}
	return &env, nil
}

// isValueList reports whether data is Encode's JSON array (heddle's own
// payloads of other shapes, such as failures and markers, are objects).
func isValueList(data []byte) bool {
	data = bytes.TrimLeft(data, " \t\r\n")
	return len(data) > 0 && data[0] == '['
}

// isDefault reports whether dc stores value lists as Encode writes them.
func isDefault(dc DataConverter) bool {
	return dc == nil || dc == DataConverter(defaultDataConverter)
}

// isDefaultEncoding reports whether the default data converter reads
// payloads of encoding enc.
func isDefaultEncoding(enc string) bool {
	switch enc {
	case MetadataEncodingNil, MetadataEncodingBinary, MetadataEncodingJSON, MetadataEncodingProtoJSON, MetadataEncodingProto:
		return true
	}
	return false
}

// EncodeData returns payload bytes as dc stores them: a value list becomes
// an envelope of dc's payloads, one per value, after dc's codecs. Each JSON
// value is given to dc as its JSON (a json.RawMessage, which the JSON
// payload converter writes as is); of an envelope Encode wrote, a
// binary/plain value is given as its []byte, a nil as nil, and a protobuf
// payload as a RawValue (which a CompositeDataConverter passes through).
// With the default converter, and for bytes that are not a value list (or
// an envelope already encoded by a converter), data is returned as it is.
func EncodeData(dc DataConverter, data []byte) ([]byte, error) {
	if isDefault(dc) {
		return data, nil
	}
	var values []any
	switch {
	case isValueList(data):
		var raws []json.RawMessage
		if err := json.Unmarshal(data, &raws); err != nil {
			return nil, fmt.Errorf("converter: payload is not a JSON array of values: %w", err)
		}
		values = make([]any, len(raws))
		for i, r := range raws {
			values[i] = r
		}
	case IsEnvelope(data):
		env, err := parseEnvelope(data)
		if err != nil {
			return nil, err
		}
		values = make([]any, len(env.Payloads))
		for i, p := range env.Payloads {
			switch enc := string(p.GetMetadata()[MetadataEncoding]); {
			case !isDefaultEncoding(enc):
				return data, nil // encoded already
			case enc == MetadataEncodingJSON:
				values[i] = json.RawMessage(p.GetData())
			case enc == MetadataEncodingBinary:
				values[i] = p.GetData()
			case enc == MetadataEncodingNil:
				values[i] = nil
			default:
				values[i] = NewRawValue(p)
			}
		}
	default:
		return data, nil
	}
	ps, err := dc.ToPayloads(values...)
	if err != nil {
		return nil, err
	}
	return json.Marshal(envelope{Payloads: ps.GetPayloads()})
}

// DecodeData reverses EncodeData: an envelope is decoded by dc (the
// default when nil) back into what Encode writes: a JSON array when every
// value is JSON, else an envelope of the default converter's payloads.
// dc's codecs are undone first; a payload of an encoding the default
// converter does not read is then decoded by the converter under the
// codecs into its JSON. Other bytes are returned as they are. A payload dc
// cannot read (its codec is not in dc) is an error matching
// ErrUnknownEncoding.
func DecodeData(dc DataConverter, data []byte) ([]byte, error) {
	if !IsEnvelope(data) {
		return data, nil
	}
	if dc == nil {
		dc = defaultDataConverter
	}
	env, err := parseEnvelope(data)
	if err != nil {
		return nil, err
	}
	inner, ps, err := withoutCodecs(dc, env.Payloads)
	if err != nil {
		return nil, err
	}
	allJSON := true
	for i, p := range ps {
		enc := string(p.GetMetadata()[MetadataEncoding])
		if p == nil || !isDefaultEncoding(enc) {
			var raw json.RawMessage
			if err := inner.FromPayload(p, &raw); err != nil {
				return nil, fmt.Errorf("converter: payload %d: %w", i, err)
			}
			ps[i] = jsonPayload(raw)
			if len(raw) == 0 { // a nil payload decodes to no bytes
				ps[i] = newPayload(MetadataEncodingNil, nil)
			}
			continue
		}
		allJSON = allJSON && isJSONPayload(p)
	}
	if !allJSON {
		return json.Marshal(envelope{Payloads: ps})
	}
	raws := make([]json.RawMessage, len(ps))
	for i, p := range ps {
		raws[i] = json.RawMessage("null")
		if string(p.GetMetadata()[MetadataEncoding]) == MetadataEncodingJSON {
			raws[i] = p.GetData()
		}
	}
	return json.Marshal(raws)
}

// withoutCodecs undoes the codecs of dc, a codec converter or a chain of
// them, and returns the payloads and the converter under the codecs. Any
// other converter is returned as it is, with the payloads.
func withoutCodecs(dc DataConverter, ps []*Payload) (DataConverter, []*Payload, error) {
	out := make([]*Payload, len(ps))
	copy(out, ps)
	for {
		c, ok := dc.(*CodecDataConverter)
		if !ok {
			return dc, out, nil
		}
		var err error
		if out, err = c.decode(out); err != nil {
			return nil, nil, err
		}
		dc = c.parent
	}
}

// EncodeWith is Encode followed by EncodeData with dc.
func EncodeWith(dc DataConverter, values ...any) ([]byte, error) {
	data, err := Encode(values...)
	if err != nil {
		return nil, err
	}
	return EncodeData(dc, data)
}

// DecodeWith is DecodeData with dc followed by Decode.
func DecodeWith(dc DataConverter, data []byte, valuePtrs ...any) error {
	data, err := DecodeData(dc, data)
	if err != nil {
		return err
	}
	return Decode(data, valuePtrs...)
}
