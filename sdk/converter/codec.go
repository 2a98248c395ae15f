package converter

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
)

// CodecDataConverter is a DataConverter whose payloads go through codecs
// after its parent made them (NewCodecDataConverter).
type CodecDataConverter struct {
	parent DataConverter
	codecs []PayloadCodec
}

// NewCodecDataConverter returns parent with codecs applied to its
// payloads, as Temporal's: encoding runs the codecs last to first, so the
// first codec's output is what is stored; decoding runs them first to
// last.
func NewCodecDataConverter(parent DataConverter, codecs ...PayloadCodec) *CodecDataConverter {
	return &CodecDataConverter{parent: parent, codecs: append([]PayloadCodec(nil), codecs...)}
}

func (c *CodecDataConverter) encode(ps []*Payload) ([]*Payload, error) {
	var err error
	for i := len(c.codecs) - 1; i >= 0; i-- {
		if ps, err = c.codecs[i].Encode(ps); err != nil {
			return nil, fmt.Errorf("converter: codec %d (%T) encode: %w", i, c.codecs[i], err)
		}
	}
	return ps, nil
}

func (c *CodecDataConverter) decode(ps []*Payload) ([]*Payload, error) {
	var err error
	for i, codec := range c.codecs {
		if ps, err = codec.Decode(ps); err != nil {
			return nil, fmt.Errorf("converter: codec %d (%T) decode: %w", i, codec, err)
		}
	}
	return ps, nil
}

func (c *CodecDataConverter) ToPayload(value any) (*Payload, error) {
	p, err := c.parent.ToPayload(value)
	if err != nil {
		return nil, err
	}
	ps, err := c.encode([]*Payload{p})
	if err != nil {
		return nil, err
	}
	if len(ps) != 1 {
		return nil, fmt.Errorf("converter: codecs turned 1 payload into %d", len(ps))
	}
	return ps[0], nil
}

func (c *CodecDataConverter) FromPayload(p *Payload, valuePtr any) error {
	ps, err := c.decode([]*Payload{p})
	if err != nil {
		return err
	}
	if len(ps) != 1 {
		return fmt.Errorf("converter: codecs turned 1 payload into %d", len(ps))
	}
	return c.parent.FromPayload(ps[0], valuePtr)
}

func (c *CodecDataConverter) ToPayloads(values ...any) (*Payloads, error) {
	ps, err := c.parent.ToPayloads(values...)
	if err != nil {
		return nil, err
	}
	out, err := c.encode(ps.GetPayloads())
	if err != nil {
		return nil, err
	}
	return &Payloads{Payloads: out}, nil
}

func (c *CodecDataConverter) FromPayloads(ps *Payloads, valuePtrs ...any) error {
	dec, err := c.decode(ps.GetPayloads())
	if err != nil {
		return err
	}
	return c.parent.FromPayloads(&Payloads{Payloads: dec}, valuePtrs...)
}

// ToString decodes p first; a payload the codecs refuse shows the error.
func (c *CodecDataConverter) ToString(p *Payload) string {
	ps, err := c.decode([]*Payload{p})
	if err != nil || len(ps) != 1 {
		return fmt.Sprintf("undecodable payload: %v", err)
	}
	return c.parent.ToString(ps[0])
}

func (c *CodecDataConverter) ToStrings(ps *Payloads) []string {
	var out []string
	for _, p := range ps.GetPayloads() {
		out = append(out, c.ToString(p))
	}
	return out
}

// MetadataEncodingZlib marks a payload compressed by the zlib codec; the
// original payload, marshalled, is the compressed data.
const MetadataEncodingZlib = "binary/zlib"

// ZlibCodecOptions configure NewZlibCodec.
type ZlibCodecOptions struct {
	// AlwaysEncode compresses even when the result is not smaller.
	AlwaysEncode bool
}

// NewZlibCodec returns a codec compressing each payload with zlib, as
// Temporal's: a payload whose compressed form is not smaller is left as it
// is unless AlwaysEncode. Decode leaves payloads it did not compress.
func NewZlibCodec(options ZlibCodecOptions) PayloadCodec { return zlibCodec{options} }

type zlibCodec struct{ o ZlibCodecOptions }

func (z zlibCodec) Encode(ps []*Payload) ([]*Payload, error) {
	out := make([]*Payload, len(ps))
	for i, p := range ps {
		raw, err := p.Marshal()
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		w := zlib.NewWriter(&buf)
		if _, err := w.Write(raw); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		if !z.o.AlwaysEncode && buf.Len() >= len(raw) {
			out[i] = p
			continue
		}
		out[i] = newPayload(MetadataEncodingZlib, buf.Bytes())
	}
	return out, nil
}

func (zlibCodec) Decode(ps []*Payload) ([]*Payload, error) {
	out := make([]*Payload, len(ps))
	for i, p := range ps {
		if string(p.GetMetadata()[MetadataEncoding]) != MetadataEncodingZlib {
			out[i] = p
			continue
		}
		r, err := zlib.NewReader(bytes.NewReader(p.Data))
		if err != nil {
			return nil, fmt.Errorf("converter: zlib payload %d: %w", i, err)
		}
		raw, err := io.ReadAll(io.LimitReader(r, maxInflatedBytes+1))
		if err != nil {
			return nil, fmt.Errorf("converter: zlib payload %d: %w", i, err)
		}
		if len(raw) > maxInflatedBytes {
			return nil, fmt.Errorf("converter: zlib payload %d inflates past %d bytes", i, maxInflatedBytes)
		}
		out[i] = &Payload{}
		if err := out[i].Unmarshal(raw); err != nil {
			return nil, fmt.Errorf("converter: zlib payload %d: %w", i, err)
		}
	}
	return out, nil
}

// maxInflatedBytes bounds what one compressed payload may inflate to, so a
// hostile payload cannot exhaust memory: well above heddle's 1 MiB payload
// limit.
const maxInflatedBytes = 64 << 20
