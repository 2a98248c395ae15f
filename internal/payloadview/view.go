// Package payloadview renders a payload — bytes a client stored, which the
// engine never reads — as text for people, within fixed bounds whatever the
// bytes hold.
//
// A payload is read as JSON when it is JSON, as msgpack when it is one
// msgpack array or map and nothing more, else as text or binary, and each
// is written as text: JSON and msgpack as (indented or compact) JSON, text
// quoted, binary in base64. Rendering never builds the decoded value and
// never recurses: a JSON payload is re-spaced byte by byte and a msgpack one
// walked header by header (package msgpackscan) with a stack of at most
// Limits.MaxDepth entries. So whatever the payload, one rendering takes time
// linear in its size and memory bounded by Limits: the text it writes stops
// at MaxTextBytes and MaxValues (View.Cut), and a payload nested deeper than
// MaxDepth is not written at all (View.Hidden), since indenting it would
// cost a line per level. The caller shows such a payload as a placeholder
// with its size and a way to fetch its bytes.
package payloadview

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/heddlewf/heddle/internal/msgpackscan"
)

// Kind is what a payload's bytes were read as.
type Kind string

// The kinds of payload.
const (
	JSON    Kind = "json"
	Msgpack Kind = "msgpack"
	Text    Kind = "text"
	Binary  Kind = "binary"
)

// Style is how JSON (and msgpack shown as JSON) is spaced.
type Style int

const (
	// Indented puts each value on a line of its own, two spaces a level,
	// as json.Indent does: for a page.
	Indented Style = iota
	// Compact writes everything on one line, as json.Compact does: for a
	// table cell or a line of a terminal.
	Compact
)

// Defaults of Limits' zero fields.
const (
	// DefaultMaxDepth is how deep a payload may nest and still be shown.
	// Payloads people write nest a few levels; one indented level costs
	// two bytes on every line within it.
	DefaultMaxDepth = 32
	// DefaultMaxTextBytes is how much text one payload is rendered to: a
	// history may hold megabytes, and a person reads the start.
	DefaultMaxTextBytes = 64 << 10
	// DefaultMaxValues is how many values one payload is rendered with.
	DefaultMaxValues = 10_000
)

// Limits bound one rendering. The zero value is valid: every zero field
// takes its default.
type Limits struct {
	// MaxDepth: a JSON or msgpack payload nested deeper than this many
	// levels of arrays and maps is not rendered (View.Hidden). 0 means
	// DefaultMaxDepth.
	MaxDepth int
	// MaxTextBytes bounds View.Text; a rendering that would be longer is
	// cut (View.Cut). 0 means DefaultMaxTextBytes.
	MaxTextBytes int
	// MaxValues bounds the values (map keys included) a JSON or msgpack
	// rendering writes; more are cut (View.Cut). 0 means DefaultMaxValues.
	MaxValues int
}

// Validate reports a negative field.
func (l Limits) Validate() error {
	if l.MaxDepth < 0 || l.MaxTextBytes < 0 || l.MaxValues < 0 {
		return fmt.Errorf("payloadview: Limits %+v has a negative field", l)
	}
	return nil
}

func (l Limits) withDefaults() Limits {
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxTextBytes <= 0 {
		l.MaxTextBytes = DefaultMaxTextBytes
	}
	if l.MaxValues <= 0 {
		l.MaxValues = DefaultMaxValues
	}
	return l
}

// View is a payload as a person is shown it.
type View struct {
	// Kind is what the bytes were read as.
	Kind Kind
	// Text is the payload for people: JSON (msgpack as JSON), a quoted
	// string, or base64. Empty when Hidden is set.
	Text string
	// Size is the payload's length in bytes.
	Size int
	// Cut: Text holds only the start, ended by an ellipsis.
	Cut bool
	// Hidden, when not empty, says why the payload is not rendered at all
	// (it nests deeper than Limits.MaxDepth); show its size and a way to
	// fetch its bytes instead.
	Hidden string
}

// Render reads b as a person wants to see it, within lim. It returns nil
// for an empty payload. It never panics.
func Render(b []byte, style Style, lim Limits) *View {
	if len(b) == 0 {
		return nil
	}
	lim = lim.withDefaults()
	v := &View{Size: len(b)}
	w := &writer{max: lim.MaxTextBytes, indent: style == Indented, values: lim.MaxValues}
	switch {
	case json.Valid(b):
		v.Kind = JSON
		if d := JSONDepth(b); d > lim.MaxDepth {
			v.Hidden = fmt.Sprintf("nested %d levels deep, more than the %d shown", d, lim.MaxDepth)
			return v
		}
		w.json(b)
	case isMsgpackDoc(b):
		_, err := msgpackscan.Check(b, msgpackscan.Limits{MaxDepth: lim.MaxDepth})
		switch {
		case errors.Is(err, msgpackscan.ErrTooDeep):
			v.Kind = Msgpack
			v.Hidden = fmt.Sprintf("nested more than the %d levels shown", lim.MaxDepth)
			return v
		case err == nil && w.msgpack(b, lim.MaxDepth):
			v.Kind = Msgpack
		default:
			// Not msgpack after all (or not one that reads as JSON: a
			// map keyed by a map): text or binary below.
			w = &writer{max: lim.MaxTextBytes, indent: style == Indented, values: lim.MaxValues}
			v.Kind = textOrBinary(b, w)
		}
	default:
		v.Kind = textOrBinary(b, w)
	}
	v.Text, v.Cut = w.finish(style)
	return v
}

// isMsgpackDoc reports whether b starts as a msgpack map or array. Other
// msgpack values are not tried: most bytes decode as some msgpack scalar
// (every byte below 0x80 is an integer), so text would be misread.
func isMsgpackDoc(b []byte) bool {
	c := b[0]
	return c >= 0x80 && c <= 0x9f || c >= 0xdc && c <= 0xdf
}

// textOrBinary writes b quoted when it is UTF-8 text, else in base64.
// Either way only as much of b is read as the text can show.
func textOrBinary(b []byte, w *writer) Kind {
	if utf8.Valid(b) {
		// Quoted a piece at a time: quoting may take four bytes a byte
		// (\x01), and the text shows no more than the budget.
		var scratch [4 << 10]byte
		w.writeByte('"')
		for rest := b; len(rest) > 0 && !w.full(); {
			n := min(len(rest), 1<<10)
			for n < len(rest) && !utf8.RuneStart(rest[n]) {
				n++
			}
			q := strconv.AppendQuote(scratch[:0], string(rest[:n]))
			w.write(q[1 : len(q)-1])
			rest = rest[n:]
		}
		w.writeByte('"')
		return Text
	}
	n := min(len(b), w.max/4*3+3)
	w.writeString(base64.StdEncoding.EncodeToString(b[:n]))
	w.cut = w.cut || n < len(b)
	return Binary
}

// JSONDepth is how deep arrays and objects nest in b, which must be valid
// JSON: 0 for a scalar, 1 for [1], 2 for [[1]]. It reads b once and
// allocates nothing.
func JSONDepth(b []byte) int {
	depth, deepest := 0, 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			i = stringEnd(b, i)
		case '[', '{':
			depth++
			deepest = max(deepest, depth)
		case ']', '}':
			depth--
		}
	}
	return deepest
}

// stringEnd returns the index of the quote closing the JSON string that
// opens at b[i] (len(b)-1 if it is not closed).
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return len(b) - 1
}

// writer collects the text of one rendering, up to max bytes and values.
type writer struct {
	buf    []byte
	max    int
	values int
	indent bool
	// cut: the rendering stopped before its end.
	cut bool
}

// full reports whether nothing more may be written.
func (w *writer) full() bool { return w.cut }

// write appends p, or as much of it as the budget holds.
func (w *writer) write(p []byte) {
	if w.cut {
		return
	}
	if room := w.max - len(w.buf); len(p) > room {
		w.buf, w.cut = append(w.buf, p[:room]...), true
		return
	}
	w.buf = append(w.buf, p...)
}

func (w *writer) writeByte(c byte) {
	if w.cut {
		return
	}
	if len(w.buf) >= w.max {
		w.cut = true
		return
	}
	w.buf = append(w.buf, c)
}

func (w *writer) writeString(s string) {
	if w.cut {
		return
	}
	if room := w.max - len(w.buf); len(s) > room {
		w.buf, w.cut = append(w.buf, s[:room]...), true
		return
	}
	w.buf = append(w.buf, s...)
}

// newline starts a line at depth, when indenting.
func (w *writer) newline(depth int) {
	if !w.indent {
		return
	}
	w.writeByte('\n')
	for range depth {
		w.writeString("  ")
	}
}

// value counts one value written, and cuts the rendering after the last
// one allowed.
func (w *writer) value() bool {
	if w.values == 0 {
		w.cut = true
		return false
	}
	w.values--
	return !w.cut
}

// finish returns the text, cut at a character boundary and marked with an
// ellipsis when the rendering stopped early.
func (w *writer) finish(style Style) (string, bool) {
	if !w.cut {
		return string(w.buf), false
	}
	b := w.buf
	end := len(b)
	// Back to the start of the last character, unless it is whole.
	start := end
	for start > 0 && end-start < utf8.UTFMax && !utf8.RuneStart(b[start-1]) {
		start--
	}
	if start > 0 && !utf8.FullRune(b[start-1:end]) {
		end = start - 1
	}
	b = bytes.TrimRight(b[:end], " \n")
	end = len(b)
	mark := "…"
	if style == Indented {
		mark = "\n…"
	}
	return string(b[:end]) + mark, true
}

// json re-spaces b, which is valid JSON, as json.Indent or json.Compact
// would, without their output growing past the budget: a JSON payload of
// 20 KB nested 10,000 levels deep indents to 200 MB.
func (w *writer) json(b []byte) {
	depth := 0
	// open: a container was just opened; its first line is written once
	// it is known not to be empty, which stays "[]" or "{}".
	open := false
	for i := 0; i < len(b) && !w.full(); i++ {
		c := b[i]
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '}', ']':
			depth--
			if !open {
				w.newline(depth)
			}
			open = false
			w.writeByte(c)
			continue
		case ',':
			w.writeByte(',')
			w.newline(depth)
			continue
		case ':':
			w.writeByte(':')
			if w.indent {
				w.writeByte(' ')
			}
			continue
		}
		if open {
			w.newline(depth)
			open = false
		}
		switch c {
		case '{', '[':
			if !w.value() {
				return
			}
			w.writeByte(c)
			depth++
			open = true
		case '"':
			end := stringEnd(b, i)
			if !w.value() {
				return
			}
			w.validUTF8(b[i : end+1])
			i = end
		default: // a number, true, false or null
			if !w.value() {
				return
			}
			j := i
			for j < len(b) && !isJSONDelim(b[j]) {
				j++
			}
			w.write(b[i:j])
			i = j - 1
		}
	}
}

// validUTF8 writes a JSON string as it is, except that a byte that is not
// UTF-8 (encoding/json accepts them in strings) is written as the escape
// \ufffd, as encoding/json writes it: the text is for a page.
func (w *writer) validUTF8(s []byte) {
	if utf8.Valid(s) {
		w.write(s)
		return
	}
	for len(s) > 0 && !w.full() {
		r, size := utf8.DecodeRune(s)
		if r == utf8.RuneError && size == 1 {
			w.writeString(`\ufffd`)
		} else {
			w.write(s[:size])
		}
		s = s[size:]
	}
}

func isJSONDelim(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', ':', ']', '}':
		return true
	}
	return false
}

// mpFrame is an array or map being written.
type mpFrame struct {
	isMap bool
	// left counts the values still to come (two per map entry), done
	// those written.
	left, done int64
}

// msgpack writes b, which msgpackscan.Check accepted within maxDepth, as
// JSON. It reports false for a document JSON cannot show (a map keyed by
// an array or a map); nothing it wrote is then used.
func (w *writer) msgpack(b []byte, maxDepth int) bool {
	stack := make([]mpFrame, 0, min(maxDepth, 64))
	pos := 0
	for !w.full() {
		h, err := msgpackscan.ReadHeader(b[pos:])
		if err != nil {
			return false // not after Check; never trusted to go on
		}
		isKey := false
		if n := len(stack); n > 0 {
			top := &stack[n-1]
			isKey = top.isMap && top.done%2 == 0
			if !top.isMap || isKey {
				if top.done > 0 {
					w.writeByte(',')
				}
				w.newline(n)
			}
			top.done++
			top.left--
		}
		if !w.value() {
			return true
		}
		data := b[pos+h.Size : pos+h.Size+dataLen(h)]
		pos += h.Size + dataLen(h)
		switch {
		case isKey && (h.Kind == msgpackscan.Array || h.Kind == msgpackscan.Map):
			return false
		case isKey:
			w.key(h, data)
		case h.Kind == msgpackscan.Array || h.Kind == msgpackscan.Map:
			isMap := h.Kind == msgpackscan.Map
			n := int64(h.Len)
			if isMap {
				n *= 2
			}
			switch {
			case n == 0 && isMap:
				w.writeString("{}")
			case n == 0:
				w.writeString("[]")
			case len(stack) >= maxDepth:
				return false // not after Check
			default:
				if isMap {
					w.writeByte('{')
				} else {
					w.writeByte('[')
				}
				stack = append(stack, mpFrame{isMap: isMap, left: n})
				continue
			}
		default:
			w.scalar(h, data)
		}
		for len(stack) > 0 && stack[len(stack)-1].left == 0 {
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			w.newline(len(stack))
			if top.isMap {
				w.writeByte('}')
			} else {
				w.writeByte(']')
			}
		}
		if len(stack) == 0 {
			return true
		}
	}
	return true
}

// dataLen is the bytes of a value after its header (none for a container,
// whose elements are values of their own).
func dataLen(h msgpackscan.Header) int {
	if h.Kind == msgpackscan.Array || h.Kind == msgpackscan.Map {
		return 0
	}
	return h.Len
}

// key writes a map key: a string as it is, any other scalar as its JSON
// text in a string, as encoding/json writes a map keyed by numbers.
func (w *writer) key(h msgpackscan.Header, data []byte) {
	if h.Kind == msgpackscan.Str {
		w.quote(data)
	} else {
		var s writer
		s.max, s.values = 256, 1
		s.scalar(h, data)
		text := s.buf
		if len(text) > 1 && text[0] == '"' {
			text = text[1 : len(text)-1]
		}
		w.quote(text)
	}
	w.writeByte(':')
	if w.indent {
		w.writeByte(' ')
	}
}

// scalar writes a value that is neither an array nor a map as JSON.
func (w *writer) scalar(h msgpackscan.Header, data []byte) {
	var num [64]byte
	switch h.Kind {
	case msgpackscan.Nil:
		w.writeString("null")
	case msgpackscan.Bool:
		w.writeString(strconv.FormatBool(h.Code == 0xc3))
	case msgpackscan.Uint:
		w.write(strconv.AppendUint(num[:0], readUint(h, data), 10))
	case msgpackscan.Int:
		w.write(strconv.AppendInt(num[:0], readInt(h, data), 10))
	case msgpackscan.Float:
		w.float(h, data)
	case msgpackscan.Str:
		w.quote(data)
	case msgpackscan.Bin:
		// As encoding/json writes a []byte: base64 in a string. Only as
		// much is encoded as the budget can hold.
		n := min(len(data), (w.max-len(w.buf))/4*3+3)
		w.writeByte('"')
		w.writeString(base64.StdEncoding.EncodeToString(data[:n]))
		w.writeByte('"')
	case msgpackscan.Ext:
		if t, ok := readTimestamp(h, data); ok {
			w.quote(t.UTC().AppendFormat(num[:0], time.RFC3339Nano))
			return
		}
		w.quote(fmt.Appendf(num[:0], "msgpack extension %d, %d bytes", h.ExtType, len(data)))
	}
}

func readUint(h msgpackscan.Header, data []byte) uint64 {
	switch h.Len {
	case 0:
		return uint64(h.Code)
	case 1:
		return uint64(data[0])
	case 2:
		return uint64(binary.BigEndian.Uint16(data))
	case 4:
		return uint64(binary.BigEndian.Uint32(data))
	}
	return binary.BigEndian.Uint64(data)
}

func readInt(h msgpackscan.Header, data []byte) int64 {
	switch h.Len {
	case 0:
		return int64(int8(h.Code))
	case 1:
		return int64(int8(data[0]))
	case 2:
		return int64(int16(binary.BigEndian.Uint16(data)))
	case 4:
		return int64(int32(binary.BigEndian.Uint32(data)))
	}
	return int64(binary.BigEndian.Uint64(data))
}

// float writes a float as encoding/json does; NaN and the infinities,
// which JSON has no number for, as strings.
func (w *writer) float(h msgpackscan.Header, data []byte) {
	bits := 64
	var f float64
	if h.Len == 4 {
		bits, f = 32, float64(math.Float32frombits(binary.BigEndian.Uint32(data)))
	} else {
		f = math.Float64frombits(binary.BigEndian.Uint64(data))
	}
	switch {
	case math.IsNaN(f):
		w.writeString(`"NaN"`)
		return
	case math.IsInf(f, 1):
		w.writeString(`"+Inf"`)
		return
	case math.IsInf(f, -1):
		w.writeString(`"-Inf"`)
		return
	}
	var num [64]byte
	format := byte('f')
	if a := math.Abs(f); a != 0 && (bits == 64 && (a < 1e-6 || a >= 1e21) || bits == 32 && (float32(a) < 1e-6 || float32(a) >= 1e21)) {
		format = 'e'
	}
	out := strconv.AppendFloat(num[:0], f, format, -1, bits)
	if format == 'e' {
		// clean up e-09 to e-9, as encoding/json does
		if n := len(out); n >= 4 && out[n-4] == 'e' && out[n-3] == '-' && out[n-2] == '0' {
			out[n-2] = out[n-1]
			out = out[:n-1]
		}
	}
	w.write(out)
}

// readTimestamp reads msgpack's timestamp extension (type -1).
func readTimestamp(h msgpackscan.Header, data []byte) (time.Time, bool) {
	if h.ExtType != -1 {
		return time.Time{}, false
	}
	switch len(data) {
	case 4:
		return time.Unix(int64(binary.BigEndian.Uint32(data)), 0), true
	case 8:
		v := binary.BigEndian.Uint64(data)
		return time.Unix(int64(v&(1<<34-1)), int64(v>>34)), true
	case 12:
		return time.Unix(int64(binary.BigEndian.Uint64(data[4:])), int64(binary.BigEndian.Uint32(data))), true
	}
	return time.Time{}, false
}

// quote writes s as a JSON string, as encoding/json would without its
// HTML escapes, stopping as soon as the budget is spent: a string of a
// megabyte costs no more than the text shown of it.
func (w *writer) quote(s []byte) {
	w.writeByte('"')
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(s) && !w.full(); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			w.write(s[start:i])
			switch c {
			case '"', '\\':
				w.write([]byte{'\\', c})
			case '\n':
				w.writeString(`\n`)
			case '\r':
				w.writeString(`\r`)
			case '\t':
				w.writeString(`\t`)
			default:
				w.write([]byte{'\\', 'u', '0', '0', hex[c>>4], hex[c&0xf]})
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			w.write(s[start:i])
			switch r {
			case utf8.RuneError:
				w.writeString(`\ufffd`)
			case '\u2028':
				w.writeString(`\u2028`)
			default:
				w.writeString(`\u2029`)
			}
			i += size
			start = i
			continue
		}
		i += size
		// Long runs of plain text are copied in pieces, so that the budget
		// is checked as they go.
		if i-start >= 4096 {
			w.write(s[start:i])
			start = i
		}
	}
	w.write(s[start:])
	w.writeByte('"')
}
