package main

// This file converts payloads between the command line and the engine. The
// engine keeps payloads as opaque bytes; the SDK writes them as a JSON array
// of values (package converter). So --input takes one JSON value per
// argument and the CLI wraps them the way the SDK does, and a payload is
// shown as JSON when it is JSON: a workflow's result unwrapped from its
// one-value array, history payloads as recorded.
//
// A payload is whatever a client stored. JSON nested deeper than
// payloadview.DefaultMaxDepth levels is not embedded in a JSON document
// (each level would indent every line within it: 20 KB nested 10,000 deep
// indents to 200 MB) but given in base64, and a line for people says so.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/heddlewf/heddle/internal/payloadview"
	"github.com/heddlewf/heddle/sdk/converter"
)

// wfJSONValues is a flag holding JSON values, each given as one flag use.
type wfJSONValues struct {
	vals []json.RawMessage
	// repeat allows more than one value (a workflow's arguments); a signal
	// carries one.
	repeat bool
}

func (v *wfJSONValues) String() string { return "" }
func (v *wfJSONValues) Type() string   { return "JSON" }

func (v *wfJSONValues) Set(s string) error {
	if len(v.vals) > 0 && !v.repeat {
		return errors.New("given more than once (a signal carries one value)")
	}
	var x any
	if err := json.Unmarshal([]byte(s), &x); err != nil {
		msg := fmt.Sprintf("not JSON: %v", err)
		if t := strings.TrimSpace(s); t != "" && !strings.ContainsAny(t[:1], `{["-0123456789`) {
			msg += ` (a string must be quoted: '"text"')`
		}
		return errors.New(msg)
	}
	var buf bytes.Buffer
	_ = json.Compact(&buf, []byte(s)) // valid: Unmarshal accepted it
	v.vals = append(v.vals, json.RawMessage(buf.Bytes()))
	return nil
}

// payload encodes the values as the SDK's converter does: a JSON array of
// the arguments, nil for none.
func (v *wfJSONValues) payload() ([]byte, error) {
	args := make([]any, len(v.vals))
	for i, r := range v.vals {
		args[i] = r
	}
	return converter.Encode(args...)
}

// wfResultJSON returns a workflow result payload as one JSON value: the
// converter's one-value array unwrapped, any other JSON as it is, and nil
// when the payload is empty or not JSON.
func wfResultJSON(p []byte) json.RawMessage {
	if !wfEmbeddable(p) {
		return nil
	}
	var vals []json.RawMessage
	if json.Unmarshal(p, &vals) == nil && len(vals) == 1 {
		return wfCompact(vals[0])
	}
	return wfCompact(p)
}

func wfCompact(p []byte) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, p) != nil {
		return json.RawMessage(p)
	}
	return json.RawMessage(buf.Bytes())
}

// wfEmbeddable reports whether a payload goes into a JSON document as
// JSON: it is JSON nested at most payloadview.DefaultMaxDepth levels.
func wfEmbeddable(p []byte) bool {
	return len(p) > 0 && json.Valid(p) && payloadview.JSONDepth(p) <= payloadview.DefaultMaxDepth
}

// wfPayloadFields splits a payload for a JSON document: JSON as it is, other
// bytes (and JSON nested too deep) for base64.
func wfPayloadFields(p []byte) (json.RawMessage, []byte) {
	switch {
	case len(p) == 0:
		return nil, nil
	case wfEmbeddable(p):
		return wfCompact(p), nil
	}
	return nil, p
}

// wfPayloadText renders a payload for people: compact JSON when it is JSON,
// else a quoted string, else only its size (binary is not read by eye; -o json
// has it in base64); cut to max runes (max <= 0: no cut). JSON nested too
// deep to embed is shown by its size too.
func wfPayloadText(p []byte, max int) string {
	var s string
	switch {
	case json.Valid(p) && !wfEmbeddable(p):
		return fmt.Sprintf("<%d bytes of JSON nested deeper than %d levels; see -o json>", len(p), payloadview.DefaultMaxDepth)
	case json.Valid(p):
		s = string(wfCompact(p))
	case utf8.Valid(p):
		s = strconv.Quote(string(p))
	default:
		return fmt.Sprintf("<%d bytes, not text; see -o json>", len(p))
	}
	return wfTruncate(s, max)
}

// wfTruncate cuts s to at most max runes, marking the cut with an ellipsis;
// max <= 0 keeps s whole.
func wfTruncate(s string, max int) string {
	if max <= 0 || utf8.RuneCountInString(s) <= max {
		return s
	}
	if max == 1 {
		return "…"
	}
	i, n := 0, 0
	for i = range s {
		if n == max-1 {
			break
		}
		n++
	}
	return s[:i] + "…"
}

// wfCell makes s safe for one table cell: control characters (a tab would
// break the alignment, a newline the row) are escaped.
func wfCell(s string) string {
	if strings.IndexFunc(s, unicode.IsControl) < 0 {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}
