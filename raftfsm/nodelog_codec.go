package raftfsm

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/hashicorp/raft"
)

// A Raft log entry in a node log (nodelog.go) is stored in a layout of
// heddle's own, fixed and versioned, so that the bytes on disk do not
// depend on a serialization library's choices (raft-boltdb stores msgpack
// of raft.Log, whose time format changed between its versions). All
// integers are big-endian:
//
//	offset  size  field
//	0       1     layout version (logEntryVersion)
//	1       1     raft.LogType
//	2       1     flags: bit 0 set when AppendedAt is set; the others 0
//	3       1     reserved, 0
//	4       8     Index
//	12      8     Term
//	20      8     AppendedAt, seconds since the Unix epoch (0 when unset)
//	28      4     AppendedAt, nanoseconds in the second, below 1e9
//	32      4     length of Data, n
//	36      4     length of Extensions, m
//	40      n     Data
//	40+n    m     Extensions
//	40+n+m  4     CRC-32C (Castagnoli) of every byte before it
//
// bbolt keeps no checksum of the values it stores; the CRC makes a
// damaged entry an error at read rather than a wrong entry applied.

// logEntryVersion is the first byte of an encoded log entry.
const logEntryVersion = 1

const (
	logEntryHeaderBytes = 40
	logEntryCRCBytes    = 4
	// logFlagAppendedAt marks an entry whose AppendedAt is set.
	logFlagAppendedAt = 1
)

// maxLogEntryBytes bounds an encoded entry, in both directions: the
// largest entry a node proposes is Config.MaxEntryBytes (at most 64 MiB),
// and a follower stores what its leader sent, so the bound leaves room
// above that for the entry's framing and a leader configured differently.
const maxLogEntryBytes = 80 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeLogEntry returns l in the layout above.
func encodeLogEntry(l *raft.Log) ([]byte, error) {
	size := logEntryHeaderBytes + len(l.Data) + len(l.Extensions) + logEntryCRCBytes
	if size > maxLogEntryBytes {
		return nil, fmt.Errorf("%w: entry %d is %d bytes encoded, more than the node log's %d", ErrBadEntry, l.Index, size, maxLogEntryBytes)
	}
	b := make([]byte, size)
	b[0] = logEntryVersion
	b[1] = byte(l.Type)
	binary.BigEndian.PutUint64(b[4:], l.Index)
	binary.BigEndian.PutUint64(b[12:], l.Term)
	if !l.AppendedAt.IsZero() {
		b[2] = logFlagAppendedAt
		binary.BigEndian.PutUint64(b[20:], uint64(l.AppendedAt.Unix()))
		binary.BigEndian.PutUint32(b[28:], uint32(l.AppendedAt.Nanosecond()))
	}
	binary.BigEndian.PutUint32(b[32:], uint32(len(l.Data)))
	binary.BigEndian.PutUint32(b[36:], uint32(len(l.Extensions)))
	n := copy(b[logEntryHeaderBytes:], l.Data)
	copy(b[logEntryHeaderBytes+n:], l.Extensions)
	crcAt := size - logEntryCRCBytes
	binary.BigEndian.PutUint32(b[crcAt:], crc32.Checksum(b[:crcAt], castagnoli))
	return b, nil
}

// decodeLogEntry parses an entry encoded by encodeLogEntry into l. Every
// length is checked against the buffer before it is used, and the buffer
// against maxLogEntryBytes, so it allocates at most len(b) bytes (Data and
// Extensions are copied: b may be bbolt's memory, valid only in its
// transaction). Empty Data or Extensions decode as nil.
func decodeLogEntry(b []byte, l *raft.Log) error {
	fail := func(format string, args ...any) error {
		return &EntryError{Reason: "node log entry: " + fmt.Sprintf(format, args...)}
	}
	switch {
	case len(b) < logEntryHeaderBytes+logEntryCRCBytes || len(b) > maxLogEntryBytes:
		return fail("%d bytes, not in [%d, %d]", len(b), logEntryHeaderBytes+logEntryCRCBytes, maxLogEntryBytes)
	case b[0] != logEntryVersion:
		return fail("layout version %d, this node reads %d", b[0], logEntryVersion)
	case b[2]&^logFlagAppendedAt != 0 || b[3] != 0:
		return fail("unknown flags %#x %#x", b[2], b[3])
	}
	dataLen := uint64(binary.BigEndian.Uint32(b[32:]))
	extLen := uint64(binary.BigEndian.Uint32(b[36:]))
	if want := logEntryHeaderBytes + dataLen + extLen + logEntryCRCBytes; want != uint64(len(b)) {
		return fail("lengths %d and %d make %d bytes, the entry has %d", dataLen, extLen, want, len(b))
	}
	crcAt := len(b) - logEntryCRCBytes
	if got, want := crc32.Checksum(b[:crcAt], castagnoli), binary.BigEndian.Uint32(b[crcAt:]); got != want {
		return fail("checksum %08x, the entry says %08x", got, want)
	}
	sec := int64(binary.BigEndian.Uint64(b[20:]))
	nsec := binary.BigEndian.Uint32(b[28:])
	if nsec >= 1e9 {
		return fail("AppendedAt nanoseconds %d", nsec)
	}
	*l = raft.Log{
		Index: binary.BigEndian.Uint64(b[4:]),
		Term:  binary.BigEndian.Uint64(b[12:]),
		Type:  raft.LogType(b[1]),
	}
	if b[2]&logFlagAppendedAt != 0 {
		// The zero time is written unflagged: flagged, it would have two
		// encodings.
		if l.AppendedAt = time.Unix(sec, int64(nsec)); l.AppendedAt.IsZero() {
			return fail("AppendedAt flagged but zero")
		}
	} else if sec != 0 || nsec != 0 {
		return fail("AppendedAt given but not flagged")
	}
	payload := b[logEntryHeaderBytes:crcAt]
	if len(payload) > 0 {
		own := make([]byte, len(payload))
		copy(own, payload)
		if dataLen > 0 {
			l.Data = own[:dataLen:dataLen]
		}
		if extLen > 0 {
			l.Extensions = own[dataLen:]
		}
	}
	return nil
}
