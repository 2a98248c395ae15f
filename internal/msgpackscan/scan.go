// Package msgpackscan reads the framing of msgpack bytes without decoding
// them: Check walks a whole value and bounds its nesting, its count of
// values and every length it declares, and ReadHeader reads the type byte
// and length fields of one value.
//
// It exists because github.com/vmihailenco/msgpack/v5 trusts what it reads.
// Its Skip and DecodeInterface recurse once per level of nesting, so 800,000
// nested one-element arrays (800 KB) overflow the goroutine stack, a fatal
// error no recover catches; and its decoders size slices, maps, strings and
// byte slices from the declared length before reading the elements, so five
// bytes declaring four billion elements demand gigabytes. Every decoder of
// outside bytes in heddle runs Check first: Check is a loop over the bytes
// with a stack of at most Limits.MaxDepth counters, allocates nothing else,
// and refuses a declared length that the bytes left cannot hold (every value
// takes at least one byte). After Check accepts b, decoding b allocates in
// proportion to len(b) and recurses at most MaxDepth levels.
package msgpackscan

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Sentinel errors, matched with errors.Is. Every error of Check is an *Error
// wrapping exactly one of them.
var (
	// ErrMalformed: the bytes are not exactly one msgpack value — they end
	// inside it, a length declares more than the bytes left can hold, a
	// type byte is not one msgpack defines (0xc1), or bytes follow it.
	ErrMalformed = errors.New("msgpackscan: not one well-formed msgpack value")
	// ErrTooDeep: the value is well-formed but nests arrays and maps more
	// than Limits.MaxDepth levels deep.
	ErrTooDeep = errors.New("msgpackscan: nested too deep")
	// ErrTooMany: the value is well-formed and within the depth, but holds
	// more than Limits.MaxValues values.
	ErrTooMany = errors.New("msgpackscan: too many values")
)

// ErrorCode is the stable code every *Error carries.
const ErrorCode = "HDL-MSGPACK-0001"

// Error says why Check refused bytes and where.
type Error struct {
	// Offset is the byte of the input where the problem was found.
	Offset int
	// Err is ErrMalformed, ErrTooDeep or ErrTooMany.
	Err error
	// Detail says what was wrong, in words.
	Detail string
}

func (e *Error) Error() string {
	return fmt.Sprintf("msgpack at byte %d: %s [%s]", e.Offset, e.Detail, ErrorCode)
}

// Unwrap makes errors.Is match the sentinel.
func (e *Error) Unwrap() error { return e.Err }

// Code returns ErrorCode.
func (e *Error) Code() string { return ErrorCode }

// DefaultMaxDepth is Limits.MaxDepth when it is zero. heddle's own records
// and request bodies nest a handful of levels; payloads shown to people
// rarely more than ten.
const DefaultMaxDepth = 32

// Limits bound a value Check accepts. The zero value is valid: depth
// DefaultMaxDepth, and no bound on values but the input's length.
type Limits struct {
	// MaxDepth bounds how deep arrays and maps nest: a scalar alone is at
	// depth 0, an array at depth 1, an array in it at depth 2. 0 means
	// DefaultMaxDepth. Check keeps one counter per level, so this is also
	// what it allocates.
	MaxDepth int
	// MaxValues bounds the values in all: every scalar, string, array and
	// map, and every map key. 0 means no bound beyond len(b).
	MaxValues int
}

// Validate reports a negative field.
func (l Limits) Validate() error {
	if l.MaxDepth < 0 || l.MaxValues < 0 {
		return fmt.Errorf("msgpackscan: Limits %+v has a negative field", l)
	}
	return nil
}

func (l Limits) withDefaults() Limits {
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	return l
}

// Stats describes what Check walked.
type Stats struct {
	// Depth is the deepest nesting seen; MaxDepth+1 when the value nests
	// deeper than MaxDepth (how much deeper is not tracked).
	Depth int
	// Values counts the values walked, map keys included.
	Values int
}

// Check walks b, which must hold exactly one msgpack value, without
// decoding it. It reports an *Error wrapping ErrMalformed when b is not
// one well-formed value; else ErrTooDeep or ErrTooMany when the value is
// beyond lim. It always walks the whole input, so a value that is too deep
// is still known to be well-formed. It never panics, runs in time linear in
// len(b) and allocates at most one counter per level up to lim.MaxDepth.
func Check(b []byte, lim Limits) (Stats, error) {
	lim = lim.withDefaults()
	var (
		st Stats
		// open holds, for each array or map being walked, how many of its
		// values are still to come (a map has two per entry).
		open []int64
		// deep counts the values still to come inside containers nested
		// deeper than lim.MaxDepth, which are checked for form only.
		deep int64
		// pending is the sum of open and deep: each of those values takes
		// at least one byte, so pending can never exceed the bytes left.
		pending  int64
		tooDeep  = -1 // offset of the first container too deep
		tooMany  = -1 // offset of the value over MaxValues
		pos      int
		started  bool
		openSize = min(lim.MaxDepth, 64)
	)
	for !started || pending > 0 {
		started = true
		h, err := ReadHeader(b[pos:])
		if err != nil {
			return st, &Error{Offset: pos, Err: ErrMalformed, Detail: err.Error()}
		}
		at := pos
		st.Values++
		if lim.MaxValues > 0 && st.Values > lim.MaxValues && tooMany < 0 {
			tooMany = at
		}
		inDeep := deep > 0
		switch {
		case inDeep:
			deep--
			pending--
		case len(open) > 0:
			open[len(open)-1]--
			pending--
		}
		pos += h.Size
		if n := h.dataBytes(); n > 0 {
			pos += n
		}
		if h.Kind == Array || h.Kind == Map {
			m := int64(h.Len)
			if h.Kind == Map {
				m *= 2
			}
			level := len(open) + 1
			switch {
			case inDeep:
				deep += m
			case level > lim.MaxDepth:
				if tooDeep < 0 {
					tooDeep = at
				}
				st.Depth = lim.MaxDepth + 1
				deep += m
			default:
				st.Depth = max(st.Depth, level)
				if m > 0 {
					if open == nil {
						open = make([]int64, 0, openSize)
					}
					open = append(open, m)
				}
			}
			pending += m
		}
		if left := int64(len(b) - pos); pending > left {
			return st, &Error{Offset: at, Err: ErrMalformed,
				Detail: fmt.Sprintf("%d more values are declared but only %d bytes are left", pending, max(left, 0))}
		}
		for deep == 0 && len(open) > 0 && open[len(open)-1] == 0 {
			open = open[:len(open)-1]
		}
	}
	if pos != len(b) {
		return st, &Error{Offset: pos, Err: ErrMalformed, Detail: fmt.Sprintf("%d trailing bytes after the value", len(b)-pos)}
	}
	if tooDeep >= 0 {
		return st, &Error{Offset: tooDeep, Err: ErrTooDeep, Detail: fmt.Sprintf("nested deeper than %d levels", lim.MaxDepth)}
	}
	if tooMany >= 0 {
		return st, &Error{Offset: tooMany, Err: ErrTooMany, Detail: fmt.Sprintf("%d values, more than %d", st.Values, lim.MaxValues)}
	}
	return st, nil
}

// Kind is the type of a msgpack value.
type Kind uint8

// The kinds of msgpack values.
const (
	Nil Kind = iota + 1
	Bool
	Int   // signed: a negative fixint or int8 to int64
	Uint  // a positive fixint or uint8 to uint64
	Float // float32 or float64
	Str
	Bin
	Ext
	Array
	Map
)

// Header is the framing of one msgpack value: its type byte and length
// fields.
type Header struct {
	Kind Kind
	// Size is the bytes of the header: the type byte, any length field and,
	// for an extension, its type byte.
	Size int
	// Len is, for Str, Bin and Ext, the bytes of data after the header; for
	// Int, Uint and Float the bytes of the number after the type byte (0
	// for a fixint, whose value is in Code); for Array the elements, and
	// for Map the entries (each a key and a value).
	Len int
	// Code is the type byte.
	Code byte
	// ExtType is an extension's type.
	ExtType int8
}

// dataBytes is how many bytes follow the header before the next value
// starts: none for arrays and maps, whose elements are values of their own.
func (h Header) dataBytes() int {
	if h.Kind == Array || h.Kind == Map {
		return 0
	}
	return h.Len
}

// errShort is ReadHeader's error for bytes that end inside the header or
// its data.
var errShort = errors.New("the bytes end inside a value")

// ReadHeader reads the header of the value at the start of b. It checks
// that the header is whole and that the data of a string, binary, number
// or extension fits in b; the elements of an array or map are not read.
func ReadHeader(b []byte) (Header, error) {
	if len(b) == 0 {
		return Header{}, errShort
	}
	c := b[0]
	h := Header{Code: c, Size: 1}
	switch {
	case c <= 0x7f:
		h.Kind = Uint
		return h, nil
	case c >= 0xe0:
		h.Kind = Int
		return h, nil
	case c <= 0x8f:
		h.Kind, h.Len = Map, int(c&0x0f)
		return h, nil
	case c <= 0x9f:
		h.Kind, h.Len = Array, int(c&0x0f)
		return h, nil
	case c <= 0xbf:
		h.Kind, h.Len = Str, int(c&0x1f)
		return h, fits(b, h)
	}
	switch c {
	case 0xc0:
		h.Kind = Nil
		return h, nil
	case 0xc2, 0xc3:
		h.Kind = Bool
		return h, nil
	case 0xc4, 0xc5, 0xc6:
		return sized(b, h, Bin, 1<<(c-0xc4), false)
	case 0xc7, 0xc8, 0xc9:
		return sized(b, h, Ext, 1<<(c-0xc7), true)
	case 0xca:
		h.Kind, h.Len = Float, 4
	case 0xcb:
		h.Kind, h.Len = Float, 8
	case 0xcc, 0xcd, 0xce, 0xcf:
		h.Kind, h.Len = Uint, 1<<(c-0xcc)
	case 0xd0, 0xd1, 0xd2, 0xd3:
		h.Kind, h.Len = Int, 1<<(c-0xd0)
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8:
		if len(b) < 2 {
			return h, errShort
		}
		h.Kind, h.Size, h.Len, h.ExtType = Ext, 2, 1<<(c-0xd4), int8(b[1])
	case 0xd9, 0xda, 0xdb:
		return sized(b, h, Str, 1<<(c-0xd9), false)
	case 0xdc, 0xdd:
		return counted(b, h, Array, 2<<(c-0xdc))
	case 0xde, 0xdf:
		return counted(b, h, Map, 2<<(c-0xde))
	default: // 0xc1, which msgpack never uses
		return h, fmt.Errorf("byte 0x%02x is not a msgpack type", c)
	}
	return h, fits(b, h)
}

// sized reads the length field of a string, binary or extension: width
// bytes, then the extension's type byte when ext.
func sized(b []byte, h Header, k Kind, width int, ext bool) (Header, error) {
	n, ok := readLen(b[1:], width)
	if !ok {
		return h, errShort
	}
	h.Kind, h.Len, h.Size = k, n, 1+width
	if ext {
		if len(b) < h.Size+1 {
			return h, errShort
		}
		h.ExtType = int8(b[h.Size])
		h.Size++
	}
	return h, fits(b, h)
}

// counted reads the count field of an array or map.
func counted(b []byte, h Header, k Kind, width int) (Header, error) {
	n, ok := readLen(b[1:], width)
	if !ok {
		return h, errShort
	}
	h.Kind, h.Len, h.Size = k, n, 1+width
	return h, nil
}

// fits checks that the header's data is within b.
func fits(b []byte, h Header) error {
	if h.Len > len(b)-h.Size {
		return fmt.Errorf("a length of %d bytes is declared but only %d are left", h.Len, max(len(b)-h.Size, 0))
	}
	return nil
}

// readLen reads a big-endian unsigned length of width 1, 2 or 4 bytes. On
// 32-bit platforms a 4-byte length over the largest int is reported as
// that, which no input can hold anyway.
func readLen(b []byte, width int) (int, bool) {
	if len(b) < width {
		return 0, false
	}
	var n uint64
	switch width {
	case 1:
		n = uint64(b[0])
	case 2:
		n = uint64(binary.BigEndian.Uint16(b))
	default:
		n = uint64(binary.BigEndian.Uint32(b))
	}
	if n > uint64(^uint(0)>>1) {
		n = uint64(^uint(0) >> 1)
	}
	return int(n), true
}

// ValueLen returns how many bytes the msgpack value at the start of b
// takes; the bytes after it are not read. It refuses, with an *Error
// wrapping ErrMalformed, bytes that end inside the value or declare more
// than they hold. Like Check it is a loop over the bytes, and it keeps
// only a count of the values still to come, so it bounds no nesting: any
// depth costs it nothing. It lets a reader step over a value it does not
// want (a large payload in a record) without decoding or copying it.
func ValueLen(b []byte) (int, error) {
	pos := 0
	for pending := int64(1); pending > 0; pending-- {
		h, err := ReadHeader(b[pos:])
		if err != nil {
			return 0, &Error{Offset: pos, Err: ErrMalformed, Detail: err.Error()}
		}
		at := pos
		pos += h.Size + h.dataBytes()
		switch h.Kind {
		case Array:
			pending += int64(h.Len)
		case Map:
			pending += 2 * int64(h.Len)
		}
		// Each value still to come takes at least one byte.
		if left := int64(len(b) - pos); pending-1 > left {
			return 0, &Error{Offset: at, Err: ErrMalformed,
				Detail: fmt.Sprintf("%d more values are declared but only %d bytes are left", pending-1, max(left, 0))}
		}
	}
	return pos, nil
}
