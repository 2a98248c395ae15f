package raftfsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// The node log's files. A node log is a directory of segments, numbered
// from 1 and named by their number (segmentName). A segment is an
// append-only file of records, each framed as:
//
//	offset  size  field
//	0       4     length of the body, n (big-endian, like every integer here)
//	4       4     CRC-32C (Castagnoli) of the body
//	8       n     the body: its kind (1 byte), then the kind's fields
//
// The kinds and their fields:
//
//	recHeader  layout version (1 byte), the segment's number (8): the
//	           first record of every segment, and only there
//	recEntry   group (4), index (8), the entry in nodelog_codec.go's layout
//	recDelete  group (4), first and last index removed (8 each)
//	recStable  group (4), key length (2), key, value (the rest)
//	recDrop    group (4): every entry and stable value of the group is gone
//
// A commit appends the records of every write it carries with one write
// and one fdatasync. Replaying the segments in order, record by record,
// gives back each group's entries and stable values.
//
// A segment other than the newest is removed once no entry it holds is
// live: its deletes and drops then concern only segments removed before
// it (segments go oldest first), and its stable values were written again
// at the start of the next segment (see rotate), which begins with every
// group's stable values as they stood. So that a group that stopped
// writing (an idle shard) cannot hold the oldest segment, and every
// segment after it, for ever, a new segment also begins with copies of the
// live entries of the oldest one when they are few (rotate): the copies
// replace them, and the oldest segment empties.
const (
	recHeader byte = 1
	recEntry  byte = 2
	recDelete byte = 3
	recStable byte = 4
	recDrop   byte = 5
)

// walVersion is the layout of the segments, in their header record.
// Layout 1 was the bbolt file of nodelog_migrate.go.
const walVersion = 2

const (
	recFrameBytes = 8
	// recEntryPrefix is the bytes of an entry record before the entry:
	// the frame, the kind, the group and the index.
	recEntryPrefix = recFrameBytes + 1 + 4 + 8
	// maxRecordBytes bounds a record's body, read or written: an entry
	// (maxLogEntryBytes) with its kind, group and index, or a stable
	// value, which Raft keeps to a few bytes.
	maxRecordBytes = maxLogEntryBytes + 64
	// segmentHeaderBytes is the size of a segment's header record.
	segmentHeaderBytes = recFrameBytes + 1 + 1 + 8
)

// defaultSegmentBytes is the size past which the node log starts a new
// segment. A segment's file is removed only whole, so smaller segments
// give space back sooner, and larger ones cost fewer files and fewer
// copies of the stable values.
const defaultSegmentBytes = 64 << 20

// walRecord is one record, decoded.
type walRecord struct {
	kind     byte
	group    uint32
	index    uint64 // recEntry
	entry    []byte // recEntry: the encoded entry
	min, max uint64 // recDelete
	key, val []byte // recStable
	seq      uint64 // recHeader
}

// appendRecord appends r, framed, to buf.
func appendRecord(buf []byte, r *walRecord) []byte {
	at := len(buf)
	buf = append(buf, make([]byte, recFrameBytes)...)
	buf = append(buf, r.kind)
	switch r.kind {
	case recHeader:
		buf = append(buf, walVersion)
		buf = binary.BigEndian.AppendUint64(buf, r.seq)
	case recEntry:
		buf = binary.BigEndian.AppendUint32(buf, r.group)
		buf = binary.BigEndian.AppendUint64(buf, r.index)
		buf = append(buf, r.entry...)
	case recDelete:
		buf = binary.BigEndian.AppendUint32(buf, r.group)
		buf = binary.BigEndian.AppendUint64(buf, r.min)
		buf = binary.BigEndian.AppendUint64(buf, r.max)
	case recStable:
		buf = binary.BigEndian.AppendUint32(buf, r.group)
		buf = binary.BigEndian.AppendUint16(buf, uint16(len(r.key)))
		buf = append(buf, r.key...)
		buf = append(buf, r.val...)
	case recDrop:
		buf = binary.BigEndian.AppendUint32(buf, r.group)
	}
	body := buf[at+recFrameBytes:]
	binary.BigEndian.PutUint32(buf[at:], uint32(len(body)))
	binary.BigEndian.PutUint32(buf[at+4:], crc32.Checksum(body, castagnoli))
	return buf
}

// RecordError is a record of a node log's segment that cannot be read: it
// names the segment, the offset and what is wrong.
type RecordError struct {
	Segment string
	Offset  int64
	Reason  string
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("raftfsm: node log segment %s, record at offset %d: %s", e.Segment, e.Offset, e.Reason)
}

// Is makes a RecordError match ErrBadEntry: a damaged record is a damaged
// log, as a damaged entry is.
func (e *RecordError) Is(target error) bool { return target == ErrBadEntry }

// parseSegment walks the records of one segment's bytes, checking each
// before fn sees it: its frame, its checksum, its kind and the lengths of
// its fields; the first must be the header of segment seq, and no other
// may be a header. fn receives each record after the header, with the
// offset of its entry's bytes (recEntry). The records fn receives alias b.
//
// It returns the offset past the last good record, and a *RecordError for
// the first bad one (nil when every byte was read). The caller decides
// what a bad record means: at the end of the newest segment, a write that
// a crash cut short.
func parseSegment(b []byte, seq uint64, fn func(r *walRecord, entryOff int64) error) (good int64, err error) {
	off := int64(0)
	bad := func(reason string, args ...any) (int64, error) {
		return off, &RecordError{Offset: off, Reason: fmt.Sprintf(reason, args...)}
	}
	for off < int64(len(b)) {
		rest := b[off:]
		if len(rest) < recFrameBytes {
			return bad("%d bytes, less than a record's frame", len(rest))
		}
		n := binary.BigEndian.Uint32(rest)
		if n == 0 || n > maxRecordBytes {
			return bad("a body of %d bytes (a record's body is 1 to %d bytes)", n, maxRecordBytes)
		}
		if int64(n) > int64(len(rest)-recFrameBytes) {
			return bad("a body of %d bytes, past the segment's end (%d bytes left)", n, len(rest)-recFrameBytes)
		}
		body := rest[recFrameBytes : recFrameBytes+int(n)]
		if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(rest[4:]) {
			return bad("its checksum does not match its bytes")
		}
		r := walRecord{kind: body[0]}
		f := body[1:]
		var reason string
		switch r.kind {
		case recHeader:
			switch {
			case off != 0:
				reason = "a header record after the segment's start"
			case len(f) != 9:
				reason = fmt.Sprintf("a header of %d bytes, not 9", len(f))
			case f[0] != walVersion:
				reason = fmt.Sprintf("layout version %d, this node reads %d", f[0], walVersion)
			case binary.BigEndian.Uint64(f[1:]) != seq:
				reason = fmt.Sprintf("the header of segment %d, in the file of segment %d", binary.BigEndian.Uint64(f[1:]), seq)
			}
		case recEntry:
			if len(f) < 12+logEntryHeaderBytes {
				reason = fmt.Sprintf("an entry record of %d bytes, too short for an entry", len(f))
				break
			}
			r.group, r.index, r.entry = binary.BigEndian.Uint32(f), binary.BigEndian.Uint64(f[4:]), f[12:]
			if at := binary.BigEndian.Uint64(r.entry[4:]); at != r.index {
				reason = fmt.Sprintf("the entry of index %d, recorded at index %d", at, r.index)
			}
		case recDelete:
			if len(f) != 20 {
				reason = fmt.Sprintf("a delete record of %d bytes, not 20", len(f))
				break
			}
			r.group, r.min, r.max = binary.BigEndian.Uint32(f), binary.BigEndian.Uint64(f[4:]), binary.BigEndian.Uint64(f[12:])
		case recStable:
			if len(f) < 6 || len(f) < 6+int(binary.BigEndian.Uint16(f[4:])) {
				reason = fmt.Sprintf("a stable record of %d bytes, shorter than its key", len(f))
				break
			}
			r.group = binary.BigEndian.Uint32(f)
			k := int(binary.BigEndian.Uint16(f[4:]))
			r.key, r.val = f[6:6+k], f[6+k:]
		case recDrop:
			if len(f) != 4 {
				reason = fmt.Sprintf("a drop record of %d bytes, not 4", len(f))
				break
			}
			r.group = binary.BigEndian.Uint32(f)
		default:
			reason = fmt.Sprintf("unknown kind %d", r.kind)
		}
		if reason == "" && off == 0 && r.kind != recHeader {
			reason = "the segment does not start with its header"
		}
		if reason != "" {
			return bad("%s", reason)
		}
		if r.kind != recHeader {
			if err := fn(&r, off+recFrameBytes+1+4+8); err != nil {
				return off, err
			}
		}
		off += recFrameBytes + int64(n)
	}
	if off == 0 {
		return bad("an empty segment, without its header")
	}
	return off, nil
}

// segment is one file of the node log.
type segment struct {
	seq  uint64
	path string
	f    *os.File
	// size is the offset of the next record: what was written and synced.
	size int64
	// live counts the entries it holds that no delete, drop or later copy
	// removed since, and liveBytes their bytes; at 0 it holds nothing a
	// replay needs (see the layout above).
	live      int
	liveBytes int64
}

func segmentName(seq uint64) string { return fmt.Sprintf("%016x.seg", seq) }

// listSegments returns the numbers of the segments in dir, in order.
func listSegments(dir string) ([]uint64, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.seg"))
	if err != nil {
		return nil, err
	}
	var seqs []uint64
	for _, p := range names {
		base := filepath.Base(p)
		seq, err := strconv.ParseUint(strings.TrimSuffix(base, ".seg"), 16, 64)
		if err != nil || segmentName(seq) != base || seq == 0 {
			return nil, fmt.Errorf("%w: %s is not a node log segment's name", ErrConfig, p)
		}
		seqs = append(seqs, seq)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			return nil, fmt.Errorf("%w: node log %s: segment %d follows segment %d, and the segments between are missing",
				ErrBadEntry, dir, seqs[i], seqs[i-1])
		}
	}
	return seqs, nil
}

// createSegment creates segment seq in dir holding its header and the
// records of first. The segment appears whole or not at all: it is
// written and synced under a name listSegments does not read
// (segmentNewSuffix), then renamed, and dir is synced, so that a crash
// never leaves a segment whose first records (a rotation's stable values
// and copied entries) are cut, and its name is durable before anything in
// it is acknowledged.
func createSegment(dir string, seq uint64, first []byte) (*segment, error) {
	path := filepath.Join(dir, segmentName(seq))
	tmp := path + segmentNewSuffix
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	buf := appendRecord(nil, &walRecord{kind: recHeader, seq: seq})
	buf = append(buf, first...)
	if _, err := f.WriteAt(buf, 0); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	if err := datasync(f); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	if err := syncDir(dir); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return &segment{seq: seq, path: path, f: f, size: int64(len(buf))}, nil
}

// segmentNewSuffix marks a segment being created (createSegment); one
// left by a crash is removed at open.
const segmentNewSuffix = ".new"

// syncDir makes the names in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
