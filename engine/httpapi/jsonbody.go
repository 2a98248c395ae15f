package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/heddlewf/heddle/engine"
)

// streamJSONMax is the largest JSON body decodeStrictJSON decodes alone.
// A larger one is decoded in place by decodeLargeJSON, which allocates
// little more than the values it decodes (a payload's bytes) instead of
// about five times the body.
const streamJSONMax = 64 << 10

// blankStringsOver is the length beyond which decodeLargeJSON's skeleton
// leaves a string value out: payloads and long names, never the names of
// statuses or policies.
const blankStringsOver = 256

// decodeLargeJSON decodes b into v as decodeStrictJSON would, without the
// json.Decoder's copy of the whole body. json.Unmarshal decodes b where it
// lies, refusing what is not one well-formed value of v's type; then a
// skeleton of b (its keys and structure, with the string values longer
// than blankOver left empty) goes through a strict json.Decoder into a
// value thrown away, which refuses the unknown fields. Should the skeleton
// fail for another reason (a type that takes a long string but not an
// empty one), b goes through decodeStrictJSON after all: the answer is
// always decodeStrictJSON's, only the memory it takes differs.
func decodeLargeJSON(b []byte, v any, what string, blankOver int) error {
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: the request body is not a valid JSON %s: %v", engine.ErrInvalidCommand, what, err)
	}
	dec := json.NewDecoder(bytes.NewReader(jsonSkeleton(b, blankOver)))
	dec.DisallowUnknownFields()
	err := dec.Decode(reflect.New(reflect.TypeOf(v).Elem()).Interface())
	switch {
	case err == nil:
		return nil
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return fmt.Errorf("%w: the request body is not a valid JSON %s: %v", engine.ErrInvalidCommand, what, err)
	}
	return decodeStrictJSON(b, v, what)
}

// jsonSkeleton returns b, which must be valid JSON, without its
// whitespace and with every string value longer than blankOver bytes
// (quotes excluded) written as "". Object keys are kept whole, so the
// skeleton has b's structure and names.
func jsonSkeleton(b []byte, blankOver int) []byte {
	out := make([]byte, 0, min(len(b), 4<<10))
	var inObject []bool // the open containers, innermost last: true for an object
	key := false        // the next string is an object's key
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '{', '[':
			inObject = append(inObject, c == '{')
			key = c == '{'
			out = append(out, c)
		case '}', ']':
			inObject = inObject[:len(inObject)-1]
			key = false
			out = append(out, c)
		case ':':
			key = false
			out = append(out, c)
		case ',':
			key = len(inObject) > 0 && inObject[len(inObject)-1]
			out = append(out, c)
		case '"':
			end := i + 1
			for b[end] != '"' {
				if b[end] == '\\' {
					end++ // the escaped byte cannot end the string
				}
				end++
			}
			if !key && end-i-1 > blankOver {
				out = append(out, '"', '"')
			} else {
				out = append(out, b[i:end+1]...)
			}
			i = end
		case ' ', '\t', '\n', '\r':
		default:
			out = append(out, c)
		}
	}
	return out
}
