package storage

import (
	"bytes"
	"fmt"

	"github.com/heddlewf/heddle/internal/msgpackscan"
	"github.com/vmihailenco/msgpack/v5"
)

// Kind is the leading type byte of every encoded record, so a value read from
// the wrong key, or garbage, is refused instead of decoded into nonsense.
type Kind byte

// Record kinds. The numbers are stored on disk and must never be reused.
const (
	KindKey      Kind = 0 // not a record: used in errors about keys
	KindJob      Kind = 1
	KindEvent    Kind = 2
	KindEffect   Kind = 3
	KindResult   Kind = 4
	KindCommand  Kind = 5
	KindMeta     Kind = 6
	KindSchedule Kind = 7
	// KindStep is a step record: the engine-held state of one activity
	// execution that took an explicit step lease, a resource or a person.
	KindStep Kind = 8
	// KindResource is a resource record: a named pool member with its
	// capabilities, labels, capacity and the units leased.
	KindResource Kind = 9
	// KindBatch is a batch operation's record.
	KindBatch Kind = 18
)

var kindNames = map[Kind]string{
	KindKey: "key", KindJob: "job", KindEvent: "event", KindEffect: "effect",
	KindResult: "result", KindCommand: "command", KindMeta: "meta",
	KindStep: "step", KindResource: "resource", KindSchedule: "schedule",
	KindBatch:  "batch",
	KindReview: "task", KindReviewEvent: "task event",
	KindOutboxEntry: "outbox entry", KindDelivered: "delivered", KindRemoteChild: "remote child", KindRemoteUnit: "remote unit",
	KindRemoteReview: "remote review",
}

func (k Kind) String() string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return fmt.Sprintf("kind(%d)", byte(k))
}

// Encode returns kind, version and the msgpack encoding of v.
func Encode(kind Kind, version byte, v any) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(64)
	buf.WriteByte(byte(kind))
	buf.WriteByte(version)
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(&buf)
	enc.UseCompactInts(true)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("storage: encode %s: %w", kind, err)
	}
	return buf.Bytes(), nil
}

// MustEncode is Encode for values whose types always encode (heddle's own
// record structs); a failure is a programming error.
func MustEncode(kind Kind, version byte, v any) []byte {
	b, err := Encode(kind, version, v)
	if err != nil {
		panic(err)
	}
	return b
}

// maxRecordDepth bounds how deeply a record nests arrays and maps. heddle's
// record types nest a handful of levels; payloads are kept as opaque bytes,
// whose content is not nesting.
const maxRecordDepth = 32

// Decode checks that b holds a record of kind with a version in
// [1, maxVersion] and decodes it into v. It returns the version found. Every
// failure is a *CorruptError.
func Decode(b []byte, kind Kind, maxVersion byte, v any) (byte, error) {
	if len(b) < 2 {
		return 0, &CorruptError{Kind: kind, Reason: fmt.Sprintf("%d bytes is too short for a header", len(b))}
	}
	if Kind(b[0]) != kind {
		return 0, &CorruptError{Kind: kind, Reason: fmt.Sprintf("type byte is %s", Kind(b[0]))}
	}
	if b[1] == 0 || b[1] > maxVersion {
		return 0, &CorruptError{Kind: kind, Reason: fmt.Sprintf("version %d is not in [1, %d]", b[1], maxVersion)}
	}
	// Walk the encoding once before decoding it: the decoder pre-sizes
	// maps, slices and strings from the lengths the input claims, so a few
	// corrupt bytes could otherwise demand gigabytes, and it recurses once
	// per level of nesting, so a deeply nested record could exhaust the
	// stack. The walk is a loop that refuses a length the bytes left cannot
	// hold and nesting deeper than any record type has.
	if _, err := msgpackscan.Check(b[2:], msgpackscan.Limits{MaxDepth: maxRecordDepth}); err != nil {
		return 0, &CorruptError{Kind: kind, Reason: err.Error()}
	}
	// A fresh decoder per call: msgpack's pooled decoders keep the buffer a
	// failed decode grew to fit a corrupt length, so pooling them lets
	// repeated reads of one bad record grow memory without bound.
	r := bytes.NewReader(b[2:])
	dec := msgpack.NewDecoder(r)
	if err := dec.Decode(v); err != nil {
		return 0, &CorruptError{Kind: kind, Reason: err.Error()}
	}
	if r.Len() != 0 {
		return 0, &CorruptError{Kind: kind, Reason: fmt.Sprintf("%d trailing bytes", r.Len())}
	}
	return b[1], nil
}

// DecodeAt is Decode that names the key the bytes came from in its error.
func DecodeAt(key, b []byte, kind Kind, maxVersion byte, v any) (byte, error) {
	ver, err := Decode(b, kind, maxVersion, v)
	if ce, ok := err.(*CorruptError); ok {
		ce.Key = append([]byte(nil), key...)
	}
	return ver, err
}
