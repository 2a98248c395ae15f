package httpapi

import "github.com/heddlewf/heddle/internal/msgpackscan"

// maxMsgpackDepth bounds the nesting of a msgpack body. The engine's types
// nest a few levels deep; anything deeper is an attack or a mistake.
const maxMsgpackDepth = 32

// checkMsgpack reports whether b is exactly one well-formed msgpack value
// whose nesting is at most maxMsgpackDepth and whose declared lengths all fit
// in b. Every container element takes at least one byte, so a declared count
// larger than the bytes left is a lie; refusing it up front keeps the
// decoder from preallocating for it. The walk is a loop, not a recursion
// (package msgpackscan), and its error names the byte where b went wrong.
func checkMsgpack(b []byte) error {
	_, err := msgpackscan.Check(b, msgpackscan.Limits{MaxDepth: maxMsgpackDepth})
	return err
}
