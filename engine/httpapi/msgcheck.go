package httpapi

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// maxMsgpackDepth bounds the nesting of a msgpack body. The engine's types
// nest a few levels deep; anything deeper is an attack or a mistake.
const maxMsgpackDepth = 32

var errMsgpackTruncated = errors.New("truncated")

// checkMsgpack reports whether b is exactly one well-formed msgpack value
// whose nesting is at most maxMsgpackDepth and whose declared lengths all fit
// in b. Every container element takes at least one byte, so a declared count
// larger than the bytes left is a lie; refusing it up front keeps the
// decoder from preallocating for it.
func checkMsgpack(b []byte) error {
	rest, err := skipMsgpack(b, 0)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("%d bytes follow the value", len(rest))
	}
	return nil
}

// skipMsgpack skips one value at the start of b and returns what follows.
func skipMsgpack(b []byte, depth int) ([]byte, error) {
	if depth > maxMsgpackDepth {
		return nil, fmt.Errorf("nested deeper than %d levels", maxMsgpackDepth)
	}
	if len(b) == 0 {
		return nil, errMsgpackTruncated
	}
	c, b := b[0], b[1:]
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		return b, nil // fixint, nil, bool
	case c <= 0x8f:
		return skipItems(b, 2*int(c&0x0f), depth)
	case c <= 0x9f:
		return skipItems(b, int(c&0x0f), depth)
	case c <= 0xbf:
		return skipBytes(b, int(c&0x1f))
	}
	switch c {
	case 0xc4, 0xd9: // bin8, str8
		return skipSized(b, 1, 0)
	case 0xc5, 0xda: // bin16, str16
		return skipSized(b, 2, 0)
	case 0xc6, 0xdb: // bin32, str32
		return skipSized(b, 4, 0)
	case 0xc7, 0xc8, 0xc9: // ext8/16/32: a length, a type byte, the data
		return skipSized(b, 1<<(c-0xc7), 1)
	case 0xca, 0xce, 0xd2: // float32, uint32, int32
		return skipBytes(b, 4)
	case 0xcb, 0xcf, 0xd3: // float64, uint64, int64
		return skipBytes(b, 8)
	case 0xcc, 0xd0: // uint8, int8
		return skipBytes(b, 1)
	case 0xcd, 0xd1: // uint16, int16
		return skipBytes(b, 2)
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1..16 and its type byte
		return skipBytes(b, 1+1<<(c-0xd4))
	case 0xdc, 0xde: // array16, map16
		n, rest, err := readLen(b, 2)
		if err != nil {
			return nil, err
		}
		return skipItems(rest, n*itemsPer(c), depth)
	case 0xdd, 0xdf: // array32, map32
		n, rest, err := readLen(b, 4)
		if err != nil {
			return nil, err
		}
		return skipItems(rest, n*itemsPer(c), depth)
	}
	return nil, fmt.Errorf("byte 0x%02x is not a msgpack type", c)
}

// itemsPer is how many values one entry of a container holds.
func itemsPer(c byte) int {
	if c == 0xde || c == 0xdf {
		return 2
	}
	return 1
}

// skipItems skips n values, each nested one level deeper.
func skipItems(b []byte, n, depth int) ([]byte, error) {
	if n > len(b) {
		return nil, fmt.Errorf("a container claims %d values but only %d bytes are left", n, len(b))
	}
	var err error
	for range n {
		if b, err = skipMsgpack(b, depth+1); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// skipSized skips a big-endian length of width bytes, extra bytes, and
// that many bytes of data.
func skipSized(b []byte, width, extra int) ([]byte, error) {
	n, rest, err := readLen(b, width)
	if err != nil {
		return nil, err
	}
	return skipBytes(rest, extra+n)
}

func skipBytes(b []byte, n int) ([]byte, error) {
	if n > len(b) {
		return nil, errMsgpackTruncated
	}
	return b[n:], nil
}

// readLen reads a big-endian unsigned length of width 1, 2 or 4 bytes.
func readLen(b []byte, width int) (int, []byte, error) {
	if len(b) < width {
		return 0, nil, errMsgpackTruncated
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
	return int(n), b[width:], nil
}
