package converter_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/heddlewf/heddle/sdk/converter"
)

// envelopeOf returns the payloads of an envelope, failing the test when
// data is not one.
func envelopeOf(t *testing.T, data []byte) []*converter.Payload {
	t.Helper()
	if !converter.IsEnvelope(data) {
		t.Fatalf("%s is not a payload envelope", data)
	}
	var env struct {
		Payloads []*converter.Payload `json:"heddle_payloads"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		t.Fatal(err)
	}
	return env.Payloads
}

func encodings(ps []*converter.Payload) []string {
	var out []string
	for _, p := range ps {
		out = append(out, string(p.Metadata[converter.MetadataEncoding]))
	}
	return out
}

// A []byte is stored as a binary/plain payload holding its bytes, as
// Temporal's default data converter stores it, not as JSON base64 text;
// the other values of its list are json/plain and nil is binary/null.
func TestByteSliceIsStoredAsBinaryPlain(t *testing.T) {
	blob := []byte{0, 1, 2, 0xff}
	data, err := converter.Encode("a", blob, nil, 3)
	if err != nil {
		t.Fatal(err)
	}
	ps := envelopeOf(t, data)
	want := []string{converter.MetadataEncodingJSON, converter.MetadataEncodingBinary, converter.MetadataEncodingNil, converter.MetadataEncodingJSON}
	if got := encodings(ps); !reflect.DeepEqual(got, want) {
		t.Fatalf("encodings %v, want %v", got, want)
	}
	if !bytes.Equal(ps[1].Data, blob) {
		t.Fatalf("binary/plain data %v, want the bytes %v", ps[1].Data, blob)
	}
	var (
		s    string
		b    []byte
		nilp *int
		n    int
	)
	if err := converter.Decode(data, &s, &b, &nilp, &n); err != nil {
		t.Fatal(err)
	}
	if s != "a" || !bytes.Equal(b, blob) || nilp != nil || n != 3 {
		t.Fatalf("decoded %q %v %v %d", s, b, nilp, n)
	}
	// Into an interface, as Temporal's: the []byte itself.
	var a any
	if err := converter.Decode(data, nil, &a); err != nil || !reflect.DeepEqual(a, blob) {
		t.Fatalf("into any: %#v, %v", a, err)
	}
	// A named byte slice type takes it too; a string does not.
	type blobType []byte
	var named blobType
	if err := converter.Decode(data, nil, &named); err != nil || !bytes.Equal(named, blob) {
		t.Fatalf("into a named []byte: %v, %v", named, err)
	}
	if err := converter.Decode(data, nil, &s); err == nil || !strings.Contains(err.Error(), "needs a []byte") {
		t.Fatalf("into a string: %v, want an error saying it needs a []byte", err)
	}
	// A json.RawMessage holds a value's JSON: the bytes' base64 string.
	var raw json.RawMessage
	if err := converter.Decode(data, nil, &raw); err != nil || string(raw) != `"AAEC/w=="` {
		t.Fatalf("into a json.RawMessage: %s, %v", raw, err)
	}
}

// Histories written before []byte was binary/plain hold it as JSON base64
// text; it still decodes into a []byte, as encoding/json reads it.
func TestOldBase64ByteSliceStillDecodes(t *testing.T) {
	old := []byte(`["AAEC/w==","x"]`) // what Encode([]byte{0,1,2,0xff}, "x") wrote before
	var (
		b []byte
		s string
	)
	if err := converter.Decode(old, &b, &s); err != nil || !bytes.Equal(b, []byte{0, 1, 2, 0xff}) || s != "x" {
		t.Fatalf("old payload decoded to %v %q (%v)", b, s, err)
	}
	if err := converter.NewEncodedValue(old).Get(&b); err != nil || len(b) != 4 {
		t.Fatalf("EncodedValue of the old payload: %v %v", b, err)
	}
	// A list of JSON values alone is stored as before, byte for byte.
	data, err := converter.Encode("x", 1, json.RawMessage(`{"a":1}`), (*int)(nil))
	if err != nil || string(data) != `["x",1,{"a":1},null]` {
		t.Fatalf("JSON values encoded as %s (%v), want the JSON array", data, err)
	}
}

// A protobuf message is stored as json/protobuf, named by its message type,
// and decoded with protobuf's JSON rules (a Timestamp as RFC 3339, field
// names in lowerCamelCase), into a message pointer or a message.
func TestProtoMessagesAreJSONProtobuf(t *testing.T) {
	at := time.Date(2026, 1, 31, 9, 0, 0, 0, time.UTC)
	st, err := structpb.NewStruct(map[string]any{"user_name": "ada", "n": 2.0})
	if err != nil {
		t.Fatal(err)
	}
	data, err := converter.Encode(timestamppb.New(at), st, wrapperspb.String("x"))
	if err != nil {
		t.Fatal(err)
	}
	ps := envelopeOf(t, data)
	for i, typ := range []string{"google.protobuf.Timestamp", "google.protobuf.Struct", "google.protobuf.StringValue"} {
		if enc := string(ps[i].Metadata[converter.MetadataEncoding]); enc != converter.MetadataEncodingProtoJSON {
			t.Fatalf("payload %d encoding %q, want json/protobuf", i, enc)
		}
		if got := string(ps[i].Metadata[converter.MetadataMessageType]); got != typ {
			t.Fatalf("payload %d message type %q, want %q", i, got, typ)
		}
	}
	if string(ps[0].Data) != `"2026-01-31T09:00:00Z"` {
		t.Fatalf("Timestamp written as %s, want protobuf JSON", ps[0].Data)
	}
	var (
		ts  *timestamppb.Timestamp
		got structpb.Struct
		sv  *wrapperspb.StringValue
	)
	if err := converter.Decode(data, &ts, &got, &sv); err != nil {
		t.Fatal(err)
	}
	if !ts.AsTime().Equal(at) || !proto.Equal(&got, st) || sv.GetValue() != "x" {
		t.Fatalf("decoded %v %v %v", ts, &got, sv)
	}
	var anything any
	if err := converter.Decode(data, &anything); err == nil || !strings.Contains(err.Error(), "concrete message type") {
		t.Fatalf("into any: %v, want an error asking for a concrete type", err)
	}
	var notProto struct{ A int }
	if err := converter.Decode(data, &notProto); err == nil || !strings.Contains(err.Error(), "not a protobuf message") {
		t.Fatalf("into a plain struct: %v, want an error saying it is not a protobuf message", err)
	}
	// A nil message pointer is null, in the JSON array as before.
	if data, err := converter.Encode((*wrapperspb.StringValue)(nil)); err != nil || string(data) != `[null]` {
		t.Fatalf("a nil message encoded as %s (%v)", data, err)
	}
}

// The binary protobuf converter, and the JSON one's options, as Temporal's.
func TestProtoPayloadConverters(t *testing.T) {
	msg := durationpb.New(90 * time.Second)
	bin := converter.NewProtoPayloadConverter()
	p, err := bin.ToPayload(msg)
	if err != nil || string(p.Metadata[converter.MetadataEncoding]) != converter.MetadataEncodingProto ||
		string(p.Metadata[converter.MetadataMessageType]) != "google.protobuf.Duration" {
		t.Fatalf("ToPayload = %+v, %v", p, err)
	}
	want, _ := proto.Marshal(msg)
	if !bytes.Equal(p.Data, want) {
		t.Fatalf("binary data %x, want the message's wire bytes %x", p.Data, want)
	}
	var back durationpb.Duration
	if err := bin.FromPayload(p, &back); err != nil || back.AsDuration() != 90*time.Second {
		t.Fatalf("FromPayload = %v, %v", back.AsDuration(), err)
	}
	if p, err := bin.ToPayload("not a message"); p != nil || err != nil {
		t.Fatalf("ToPayload of a string = %v, %v; want nil, nil", p, err)
	}
	if p, _ := converter.NewProtoPayloadConverterWithOptions(converter.ProtoPayloadConverterOptions{ExcludeProtobufMessageTypes: true}).ToPayload(msg); p.Metadata[converter.MetadataMessageType] != nil {
		t.Fatalf("ExcludeProtobufMessageTypes left %q", p.Metadata[converter.MetadataMessageType])
	}
	// The default data converter reads binary/protobuf though it writes
	// json/protobuf, so payloads of either kind decode.
	stored, err := converter.Encode(converter.NewRawValue(p))
	if err != nil {
		t.Fatal(err)
	}
	var viaDefault *durationpb.Duration
	if err := converter.Decode(stored, &viaDefault); err != nil || viaDefault.AsDuration() != 90*time.Second {
		t.Fatalf("default Decode of binary/protobuf = %v, %v", viaDefault, err)
	}

	st, _ := structpb.NewStruct(map[string]any{"a": 1.0})
	pj := converter.NewProtoJSONPayloadConverterWithOptions(converter.ProtoJSONPayloadConverterOptions{EmitUnpopulated: true, UseEnumNumbers: true})
	p, err = pj.ToPayload(structpb.NewNullValue())
	if err != nil || string(p.Data) != `null` {
		t.Fatalf("a NullValue written as %s (%v)", p.Data, err)
	}
	strict := converter.NewProtoJSONPayloadConverter()
	unknown := &converter.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(converter.MetadataEncodingProtoJSON)}, Data: []byte(`{"seconds":1,"extra":2}`)}
	var d durationpb.Duration
	if err := strict.FromPayload(unknown, &d); err == nil {
		t.Fatal("an unknown field was accepted without AllowUnknownFields")
	}
	lenient := converter.NewProtoJSONPayloadConverterWithOptions(converter.ProtoJSONPayloadConverterOptions{AllowUnknownFields: true})
	if p, err = lenient.ToPayload(st); err != nil {
		t.Fatal(err)
	}
	var back2 structpb.Struct
	if err := lenient.FromPayload(p, &back2); err != nil || !proto.Equal(&back2, st) {
		t.Fatalf("round trip through the lenient converter: %v, %v", &back2, err)
	}
}

// A RawValue is a payload carried as it is: encoded as its payload,
// received by a *RawValue without decoding, and never written as JSON.
func TestRawValuePassesPayloadsThrough(t *testing.T) {
	custom := &converter.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte("binary/custom")}, Data: []byte{7}}
	data, err := converter.Encode(converter.NewRawValue(custom), "x")
	if err != nil {
		t.Fatal(err)
	}
	ps := envelopeOf(t, data)
	if !reflect.DeepEqual(ps[0], custom) {
		t.Fatalf("payload %+v, want %+v", ps[0], custom)
	}
	var rv, rs converter.RawValue
	if err := converter.Decode(data, &rv, &rs); err != nil || !reflect.DeepEqual(rv.Payload(), custom) ||
		string(rs.Payload().Metadata[converter.MetadataEncoding]) != converter.MetadataEncodingJSON {
		t.Fatalf("decoded %v %v (%v)", rv, rs, err)
	}
	// Of a JSON array, a *RawValue gets the value's json/plain payload, and
	// a RawValue of JSON goes back into a JSON array.
	var fromJSON converter.RawValue
	if err := converter.Decode([]byte(`[{"a":1}]`), &fromJSON); err != nil || string(fromJSON.Payload().Data) != `{"a":1}` {
		t.Fatalf("from a JSON array: %v, %v", fromJSON, err)
	}
	if again, err := converter.Encode(fromJSON); err != nil || string(again) != `[{"a":1}]` {
		t.Fatalf("re-encoded as %s (%v)", again, err)
	}
	if _, err := json.Marshal(rv); err == nil {
		t.Fatal("a RawValue was written as JSON")
	}
	// RawValues splits a stored list of either form.
	for _, stored := range [][]byte{data, []byte(`["x",null,2]`)} {
		vals, err := converter.RawValues(stored)
		if err != nil {
			t.Fatal(err)
		}
		args := make([]any, len(vals))
		for i, v := range vals {
			args[i] = v
		}
		again, err := converter.Encode(args...)
		if err != nil || !bytes.Equal(again, stored) {
			t.Fatalf("RawValues then Encode of %s gave %s (%v)", stored, again, err)
		}
	}
}

// A codec converter stores a []byte's binary/plain payload through its
// codecs, and DecodeData gives back what Encode wrote.
func TestByteSliceThroughACodec(t *testing.T) {
	dc := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), aesCodec{key: bytes.Repeat([]byte{1}, 32)})
	blob := []byte("secret bytes")
	stored, err := converter.EncodeWith(dc, blob, "plain", wrapperspb.Int64(5))
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range envelopeOf(t, stored) {
		if string(p.Metadata[converter.MetadataEncoding]) != encodingEncrypted || bytes.Contains(p.Data, blob) {
			t.Fatalf("payload %d is not sealed: %+v", i, p)
		}
	}
	var (
		b []byte
		s string
		n wrapperspb.Int64Value
	)
	if err := converter.Decode(stored, &b); !errors.Is(err, converter.ErrUnknownEncoding) {
		t.Fatalf("Decode without the codec: %v, want ErrUnknownEncoding", err)
	}
	if err := converter.DecodeWith(dc, stored, &b, &s, &n); err != nil || !bytes.Equal(b, blob) || s != "plain" || n.GetValue() != 5 {
		t.Fatalf("DecodeWith = %q %q %v (%v)", b, s, &n, err)
	}
	plain, err := converter.Encode(blob, "plain", wrapperspb.Int64(5))
	if err != nil {
		t.Fatal(err)
	}
	back, err := converter.DecodeData(dc, stored)
	if err != nil || !bytes.Equal(back, plain) {
		t.Fatalf("DecodeData = %s (%v), want what Encode writes: %s", back, err, plain)
	}
	if again, err := converter.EncodeData(dc, stored); err != nil || !bytes.Equal(again, stored) {
		t.Fatalf("EncodeData of encoded payloads changed them: %s (%v)", again, err)
	}
}

// jsonUpperConverter is a payload converter of its own encoding whose
// payloads are JSON: DecodeData asks it for the JSON of its payloads.
type jsonUpperConverter struct{}

func (jsonUpperConverter) ToPayload(v any) (*converter.Payload, error) {
	b, err := json.Marshal(v)
	return &converter.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte("json/upper")}, Data: bytes.ToUpper(b)}, err
}
func (jsonUpperConverter) FromPayload(p *converter.Payload, ptr any) error {
	return json.Unmarshal(bytes.ToLower(p.Data), ptr)
}
func (jsonUpperConverter) ToString(p *converter.Payload) string { return string(p.Data) }
func (jsonUpperConverter) Encoding() string                     { return "json/upper" }

func TestCustomPayloadConverterBesideBinary(t *testing.T) {
	dc := converter.NewCompositeDataConverter(converter.NewNilPayloadConverter(), converter.NewByteSlicePayloadConverter(), jsonUpperConverter{})
	stored, err := converter.EncodeWith(dc, "abc", []byte{9})
	if err != nil {
		t.Fatal(err)
	}
	if got := encodings(envelopeOf(t, stored)); !reflect.DeepEqual(got, []string{"json/upper", converter.MetadataEncodingBinary}) {
		t.Fatalf("encodings %v", got)
	}
	var (
		s string
		b []byte
	)
	if err := converter.DecodeWith(dc, stored, &s, &b); err != nil || s != "abc" || !bytes.Equal(b, []byte{9}) {
		t.Fatalf("DecodeWith = %q %v (%v)", s, b, err)
	}
}

// Envelopes are bytes from outside: one with more payloads than a list
// may hold is refused before they are made, and a deeply nested protobuf
// value is refused, not recursed into without end.
func TestEnvelopeAndProtoBounds(t *testing.T) {
	many := []byte(`{"heddle_payloads":[` + strings.Repeat(`{},`, 1<<15) + `{}]}`)
	var v any
	if err := converter.Decode(many, &v); err == nil || !strings.Contains(err.Error(), "over the") {
		t.Fatalf("Decode of %d empty payloads: %v, want a bound error", 1<<15, err)
	}
	if _, err := converter.RawValues(many); err == nil {
		t.Fatal("RawValues accepted the oversized envelope")
	}
	deep := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
	p := &converter.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(converter.MetadataEncodingProtoJSON)}, Data: []byte(deep)}
	var val structpb.Value
	if err := converter.NewProtoJSONPayloadConverter().FromPayload(p, &val); err == nil {
		t.Fatal("a protobuf JSON value nested 5,000 deep was accepted")
	}
	args := make([]any, 1<<14+1)
	args[0] = []byte{1}
	if _, err := converter.Encode(args...); err == nil {
		t.Fatal("Encode wrote an envelope that Decode would refuse")
	}
}
