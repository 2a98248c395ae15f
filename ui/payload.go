package ui

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"
)

// maxPayloadShown bounds how much of one payload a page prints: a history
// may hold megabytes, and a person reads the start.
const maxPayloadShown = 64 << 10

// payloadView is a payload as a page shows it.
type payloadView struct {
	// Kind is what the bytes were read as: json, msgpack, text or binary.
	Kind string
	// Text is the payload for people: indented JSON (msgpack as JSON), a
	// quoted string, or base64.
	Text string
	// Size is the payload's length in bytes.
	Size int
	// Cut: Text holds only the start.
	Cut bool
}

// viewPayload reads a payload as a person wants to see it. The SDK writes
// JSON (package converter: a JSON array of the values); other clients may
// write msgpack, text or bytes, each shown as what it is.
func viewPayload(b []byte) *payloadView {
	if len(b) == 0 {
		return nil
	}
	v := &payloadView{Size: len(b)}
	var indented bytes.Buffer
	if json.Valid(b) && json.Indent(&indented, b, "", "  ") == nil {
		v.Kind, v.Text = "json", indented.String()
	} else if doc, ok := decodeMsgpackDoc(b); ok {
		v.Kind, v.Text = "msgpack", msgpackAsJSON(doc, b)
	} else if utf8.Valid(b) {
		v.Kind, v.Text = "text", strconv.Quote(string(b))
	} else {
		v.Kind, v.Text = "binary", base64.StdEncoding.EncodeToString(b)
	}
	if len(v.Text) > maxPayloadShown {
		cut := maxPayloadShown
		for cut > 0 && !utf8.RuneStart(v.Text[cut]) {
			cut--
		}
		v.Text, v.Cut = v.Text[:cut]+"\n…", true
	}
	return v
}

// decodeMsgpackDoc decodes b when it is one msgpack map or array and
// nothing more. Other msgpack values are not tried: most bytes decode as
// some msgpack scalar (every byte below 0x80 is an integer), so text would
// be misread.
func decodeMsgpackDoc(b []byte) (v any, ok bool) {
	// The msgpack decoder panics on a map used as a map key (unhashable
	// in Go); such bytes are simply not a document this page can show.
	defer func() {
		if recover() != nil {
			v, ok = nil, false
		}
	}()
	switch c := b[0]; {
	case c >= 0x80 && c <= 0x9f, c == 0xdc, c == 0xdd, c == 0xde, c == 0xdf:
	default:
		return nil, false
	}
	// Walk the document first without building it: the untyped decoder
	// allocates whatever length a header declares (four billion elements
	// from five bytes), while skipping reads element by element and fails
	// at the end of the bytes. Once the walk has succeeded, every declared
	// length is backed by bytes, so decoding allocates in proportion to
	// len(b).
	skip := bytes.NewReader(b)
	if err := msgpack.NewDecoder(skip).Skip(); err != nil || skip.Len() != 0 {
		return nil, false
	}
	r := bytes.NewReader(b)
	dec := msgpack.NewDecoder(r)
	// Maps may be keyed by anything, not only by strings.
	dec.SetMapDecoder(func(d *msgpack.Decoder) (any, error) { return d.DecodeUntypedMap() })
	v, err := dec.DecodeInterface()
	if err != nil || r.Len() != 0 {
		return nil, false
	}
	return v, true
}

// msgpackAsJSON writes a decoded msgpack document as indented JSON; map
// keys that are not strings are written as text. What JSON cannot hold
// (a NaN) leaves the bytes in base64.
func msgpackAsJSON(v any, b []byte) string {
	out, err := json.MarshalIndent(jsonable(v), "", "  ")
	if err != nil {
		return base64.StdEncoding.EncodeToString(b)
	}
	return string(out)
}

// jsonable turns what msgpack decodes into what encoding/json writes:
// maps with any keys become maps with string keys.
func jsonable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonable(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = jsonable(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = jsonable(e)
		}
		return x
	}
	return v
}
