package converter

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// How payloads are stored. Encode's JSON array of values is what heddle
// stores with the default data converter, unchanged. With any other data
// converter (a codec's, say) the client and its workers store a value list
// as an envelope instead: a JSON object whose one key, envelopeKey, holds
// the converter's payloads (metadata and data, base64 in JSON). Both forms
// can sit in one history; the envelope's first bytes tell them apart.

const envelopeKey = "heddle_payloads"

var envelopePrefix = []byte(`{"` + envelopeKey + `":`)

type envelope struct {
	Payloads []*Payload `json:"heddle_payloads"`
}

// IsEnvelope reports whether data is a value list stored by a data
// converter other than the default (EncodeData's envelope).
func IsEnvelope(data []byte) bool { return bytes.HasPrefix(data, envelopePrefix) }

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

// EncodeData returns payload bytes as dc stores them: a value list
// (Encode's JSON array) becomes an envelope of dc's payloads, one per
// value, each value given to dc as its JSON (a json.RawMessage, which the
// JSON payload converter writes as is) and then through dc's codecs. With
// the default converter, and for bytes that are not a value list, data is
// returned as it is.
func EncodeData(dc DataConverter, data []byte) ([]byte, error) {
	if isDefault(dc) || !isValueList(data) {
		return data, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, fmt.Errorf("converter: payload is not a JSON array of values: %w", err)
	}
	values := make([]any, len(raws))
	for i, r := range raws {
		values[i] = r
	}
	ps, err := dc.ToPayloads(values...)
	if err != nil {
		return nil, err
	}
	return json.Marshal(envelope{Payloads: ps.GetPayloads()})
}

// DecodeData reverses EncodeData: an envelope is decoded by dc (the
// default when nil) back into Encode's JSON array; other bytes are
// returned as they are. A payload dc cannot read (its codec is not in dc)
// is an error matching ErrUnknownEncoding.
func DecodeData(dc DataConverter, data []byte) ([]byte, error) {
	if !IsEnvelope(data) {
		return data, nil
	}
	if dc == nil {
		dc = defaultDataConverter
	}
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, fmt.Errorf("converter: bad payload envelope: %w", err)
	}
	raws := make([]json.RawMessage, len(env.Payloads))
	ptrs := make([]any, len(raws))
	for i := range raws {
		ptrs[i] = &raws[i]
	}
	if err := dc.FromPayloads(&Payloads{Payloads: env.Payloads}, ptrs...); err != nil {
		return nil, err
	}
	for i, r := range raws {
		if len(r) == 0 { // a nil payload decodes to no bytes
			raws[i] = json.RawMessage("null")
		}
	}
	return json.Marshal(raws)
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
