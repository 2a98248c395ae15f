package converter_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/sdk/converter"
)

// aesCodec is the codec of Temporal's encryption sample, in heddle's
// types: each payload, marshalled, is sealed with AES-GCM; Decode leaves
// payloads that are not its own.
type aesCodec struct{ key []byte }

const encodingEncrypted = "binary/encrypted"

func (c aesCodec) gcm() cipher.AEAD {
	block, err := aes.NewCipher(c.key)
	if err != nil {
		panic(err)
	}
	g, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return g
}

func (c aesCodec) Encode(ps []*converter.Payload) ([]*converter.Payload, error) {
	out := make([]*converter.Payload, len(ps))
	for i, p := range ps {
		raw, err := p.Marshal()
		if err != nil {
			return nil, err
		}
		g := c.gcm()
		nonce := make([]byte, g.NonceSize()) // a fixed nonce keeps the test deterministic; real code draws one
		out[i] = &converter.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(encodingEncrypted)},
			Data: g.Seal(nonce, nonce, raw, nil)}
	}
	return out, nil
}

func (c aesCodec) Decode(ps []*converter.Payload) ([]*converter.Payload, error) {
	out := make([]*converter.Payload, len(ps))
	for i, p := range ps {
		if string(p.Metadata[converter.MetadataEncoding]) != encodingEncrypted {
			out[i] = p
			continue
		}
		g := c.gcm()
		n := g.NonceSize()
		if len(p.Data) < n {
			return nil, errors.New("short ciphertext")
		}
		raw, err := g.Open(nil, p.Data[:n], p.Data[n:], nil)
		if err != nil {
			return nil, err
		}
		out[i] = &converter.Payload{}
		if err := out[i].Unmarshal(raw); err != nil {
			return nil, err
		}
	}
	return out, nil
}

type order struct {
	ID    string
	Items []string
}

// The default converter stores exactly what heddle always stored.
func TestDefaultDataConverterKeepsHeddlesBytes(t *testing.T) {
	dc := converter.GetDefaultDataConverter()
	plain, _ := converter.Encode("a", 1, order{ID: "x"})
	got, err := converter.EncodeWith(dc, "a", 1, order{ID: "x"})
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("EncodeWith(default) = %s, %v; want %s", got, err, plain)
	}
	if got, _ := converter.EncodeData(nil, plain); !bytes.Equal(got, plain) {
		t.Fatalf("EncodeData(nil) changed the bytes: %s", got)
	}
}

// Payload converters of the default data converter, value by value.
func TestDefaultPayloadConverters(t *testing.T) {
	dc := converter.GetDefaultDataConverter()
	for _, tc := range []struct {
		value    any
		encoding string
		data     string
	}{
		{nil, converter.MetadataEncodingNil, ""},
		{[]byte("raw"), converter.MetadataEncodingBinary, "raw"},
		{"s", converter.MetadataEncodingJSON, `"s"`},
		{order{ID: "x", Items: []string{"a"}}, converter.MetadataEncodingJSON, `{"ID":"x","Items":["a"]}`},
	} {
		p, err := dc.ToPayload(tc.value)
		if err != nil || string(p.Metadata[converter.MetadataEncoding]) != tc.encoding || string(p.Data) != tc.data {
			t.Errorf("ToPayload(%v) = %v, %v; want %s %q", tc.value, p, err, tc.encoding, tc.data)
		}
	}
	var b []byte
	p, _ := dc.ToPayload([]byte("raw"))
	if err := dc.FromPayload(p, &b); err != nil || string(b) != "raw" {
		t.Fatalf("[]byte back: %q, %v", b, err)
	}
	s := "was set"
	p, _ = dc.ToPayload(nil)
	if err := dc.FromPayload(p, &s); err != nil || s != "" {
		t.Fatalf("nil into a string: %q, %v", s, err)
	}
	ps, _ := dc.ToPayloads(1, "two")
	if got := dc.ToStrings(ps); fmt.Sprint(got) != `[1 "two"]` {
		t.Fatalf("ToStrings = %q", got)
	}
	p = &converter.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte("binary/secret")}, Data: []byte{1}}
	if err := dc.FromPayload(p, &s); !errors.Is(err, converter.ErrUnknownEncoding) {
		t.Fatalf("an unknown encoding: %v", err)
	}
}

// Codecs encode last to first and decode first to last, as Temporal's;
// the stored bytes hold no plaintext, and a reader without the codec gets
// ErrUnknownEncoding, not wrong values.
func TestCodecDataConverterRoundTrip(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	dc := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), aesCodec{key}, converter.NewZlibCodec(converter.ZlibCodecOptions{AlwaysEncode: true}))
	in := order{ID: "secret-order", Items: []string{"caviar", "champagne"}}
	data, err := converter.EncodeWith(dc, in, "note", nil, 42)
	if err != nil {
		t.Fatal(err)
	}
	if !converter.IsEnvelope(data) || strings.Contains(string(data), "caviar") || strings.Contains(string(data), "note") {
		t.Fatalf("stored bytes show the plaintext or are no envelope: %s", data)
	}
	var (
		out  order
		note string
		n    int
		zero = "untouched"
	)
	if err := converter.DecodeWith(dc, data, &out, &note, &zero, &n); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(out) != fmt.Sprint(in) || note != "note" || n != 42 || zero != "untouched" {
		// nil was encoded as JSON null (one JSON array element), which
		// leaves a string as it is, as Decode does.
		t.Fatalf("decoded %v %q %q %d", out, note, zero, n)
	}
	// The outer codec is the first: the stored payloads are AES's.
	ps, _ := dc.ToPayloads("x")
	if enc := string(ps.Payloads[0].Metadata[converter.MetadataEncoding]); enc != encodingEncrypted {
		t.Fatalf("outermost encoding %q, want the first codec's", enc)
	}
	if err := converter.Decode(data, &out); !errors.Is(err, converter.ErrUnknownEncoding) {
		t.Fatalf("Decode without the codec: %v", err)
	}
	other := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), aesCodec{[]byte("fedcba9876543210fedcba9876543210")})
	if err := converter.DecodeWith(other, data, &out); err == nil {
		t.Fatal("another key decoded the payload")
	}
	// Plain payloads stay readable by a converter with codecs (a history
	// written before the codec was set).
	plain, _ := converter.Encode("old")
	if err := converter.DecodeWith(dc, plain, &note); err != nil || note != "old" {
		t.Fatalf("plain payload through the codec converter: %q, %v", note, err)
	}
	// Bytes that are not a value list (a failure, a marker) pass as they are.
	obj := []byte(`{"message":"boom"}`)
	if got, err := converter.EncodeData(dc, obj); err != nil || !bytes.Equal(got, obj) {
		t.Fatalf("EncodeData of an object = %s, %v", got, err)
	}
}

// An envelope with no codec is readable by anyone.
func TestEnvelopeWithoutCodec(t *testing.T) {
	dc := converter.NewCodecDataConverter(converter.GetDefaultDataConverter())
	data, err := converter.EncodeWith(dc, "a", []int{1, 2})
	if err != nil || !converter.IsEnvelope(data) {
		t.Fatalf("%s, %v", data, err)
	}
	var (
		s  string
		xs []int
	)
	if err := converter.Decode(data, &s, &xs); err != nil || s != "a" || fmt.Sprint(xs) != "[1 2]" {
		t.Fatalf("Decode of an envelope: %q %v %v", s, xs, err)
	}
}

// The zlib codec leaves payloads that would not shrink, unless told.
func TestZlibCodecSkipsWhatWouldGrow(t *testing.T) {
	z := converter.NewZlibCodec(converter.ZlibCodecOptions{})
	small := &converter.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte("json/plain")}, Data: []byte("1")}
	big := &converter.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte("json/plain")}, Data: bytes.Repeat([]byte("a"), 4096)}
	out, err := z.Encode([]*converter.Payload{small, big})
	if err != nil {
		t.Fatal(err)
	}
	if out[0] != small || string(out[1].Metadata[converter.MetadataEncoding]) != converter.MetadataEncodingZlib || len(out[1].Data) >= 4096 {
		t.Fatalf("encoded %v / %s %d bytes", out[0], out[1].Metadata, len(out[1].Data))
	}
	back, err := z.Decode(out)
	if err != nil || back[0] != small || !bytes.Equal(back[1].Data, big.Data) {
		t.Fatalf("decode: %v", err)
	}
}
