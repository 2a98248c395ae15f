package storage

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"strconv"
)

// Badger keeps two kinds of append-only log: the write-ahead log of each
// memtable (NNNNN.mem) and the value logs (NNNNNN.vlog) holding values too
// large for the tables. Both are laid out alike:
//
//	header  the id of the encryption key (8 bytes, 0: none) and an IV (12)
//	record* meta(1) userMeta(1) uvarint(len(key)) uvarint(len(value))
//	        uvarint(expiresAt) key value crc32c(all before it, 4 bytes BE)
//
// Keys carry Badger's 8-byte version at their end. In a write-ahead log the
// records of one transaction carry a transaction bit and are followed by an
// end marker whose value is the commit version in decimal; value-log
// records carry neither.
//
// When Badger replays a log at open it reads records until the first that
// is zero, fails its checksum or breaks the transaction structure, keeps
// what the last complete transaction ended with, and truncates the file
// there. That is right for the tail a crash leaves (a record half copied,
// then zeros), and silently wrong when the damage lies before intact
// records: everything after it is dropped. scanLog tells the two apart by
// looking past the point where Badger would stop for any intact record.
const (
	logHeaderBytes = 20
	// logPadBytes is the longest record header; Badger zeroes that much
	// after every record it writes, and preallocates its logs with zeros,
	// so the log of a crashed process ends in zeros.
	logPadBytes = 22
	// maxLogKeyBytes is the longest key Badger writes to a log.
	maxLogKeyBytes = 1 << 16
	// minLogRecordBytes: a five-byte header, a key of at least its 8-byte
	// version plus one byte, and the checksum.
	minLogRecordBytes = 5 + 9 + 4
	// resyncBudgetBytes bounds the bytes scanLog checksums while looking
	// past a bad record, so that a log full of garbage cannot stall Open.
	resyncBudgetBytes = 256 << 20

	metaTxn    = 1 << 6 // the record belongs to a transaction
	metaFinTxn = 1 << 7 // the record ends a transaction
)

// recState classifies the bytes at one offset of a log.
type recState int

const (
	recOK    recState = iota // an intact record
	recEnd                   // a zero header: where the writer would write next
	recBad                   // a record that fails its checksum or is malformed
	recShort                 // a record whose length runs past the end of the file
)

// logRecord is one decoded record; key and val alias the scanned bytes.
type logRecord struct {
	meta     byte
	key, val []byte
	size     int // the bytes the record takes, header and checksum included
}

// decodeLogRecord decodes the record at the start of b.
func decodeLogRecord(b []byte) (logRecord, recState) {
	var r logRecord
	p := 2
	var lens [3]uint64
	for i := range lens {
		if p >= len(b) {
			if allZero(b) {
				return r, recEnd
			}
			return r, recShort
		}
		v, n := binary.Uvarint(b[p:])
		switch {
		case n == 0:
			return r, recShort
		case n < 0:
			return r, recBad
		}
		lens[i] = v
		p += n
	}
	klen, vlen := lens[0], lens[1]
	if klen == 0 {
		if allZero(b[:p]) {
			return r, recEnd
		}
		return r, recBad
	}
	if klen > maxLogKeyBytes {
		return r, recBad
	}
	body := uint64(p) + klen + vlen
	if vlen > uint64(len(b)) || body+crc32.Size > uint64(len(b)) {
		return r, recShort
	}
	want := binary.BigEndian.Uint32(b[body:])
	if crc32.Checksum(b[:body], castagnoli) != want {
		return r, recBad
	}
	r.meta = b[0]
	r.key = b[p : uint64(p)+klen]
	r.val = b[uint64(p)+klen : body]
	r.size = int(body) + crc32.Size
	return r, recOK
}

// logScan is what scanLog found in one log.
type logScan struct {
	// validEnd is where Badger's replay keeps the log to: the end of the
	// last committed transaction (or lone record) before it stops reading.
	validEnd int64
	// pending counts the records between validEnd and where the replay
	// stops: an unfinished transaction, dropped with what follows.
	pending int
	// damage is nil for a log Badger reads without losing anything
	// committed (a clean log, or the torn tail of a crash).
	damage *DamagedError
}

// scanLog checks the log held in data (the whole file), named path in reports.
func scanLog(path string, data []byte) logScan {
	size := int64(len(data))
	damaged := func(kind Damage, off, after int64, reason string) logScan {
		return logScan{validEnd: min(off, size), damage: &DamagedError{File: path, Kind: kind, Offset: off, BytesAfter: after, Reason: reason}}
	}
	if size < logHeaderBytes {
		return damaged(DamageLogHeader, 0, size, fmt.Sprintf("the file has %d bytes, under its %d-byte header", size, logHeaderBytes))
	}
	if id := binary.BigEndian.Uint64(data); id != 0 {
		return damaged(DamageLogHeader, 0, size, fmt.Sprintf("the header names encryption key %d, and heddle never encrypts", id))
	}

	var (
		off      = int64(logHeaderBytes)
		validEnd = off
		open     bool   // records of a transaction were read, its end not yet
		txnTs    uint64 // that transaction's version
		pending  int    // records of that transaction
		stop     = int64(-1)
		reason   string
	)
walk:
	for off < size {
		r, st := decodeLogRecord(data[off:])
		switch st {
		case recEnd:
			stop = off
			break walk
		case recShort:
			if !allZero(data[max(off, size-logPadBytes):]) {
				// A crash leaves zeros after the last record; a log that
				// ends inside one was cut.
				s := damaged(DamageLogCut, off, size-off, "the file ends inside a record: it was cut short")
				s.validEnd, s.pending = validEnd, pending
				return s
			}
			stop, reason = off, "a record's length runs past the end of the file"
			break walk
		case recBad:
			stop, reason = off, "a record fails its checksum"
			break walk
		}
		// The transaction structure, as Badger's replay checks it.
		switch {
		case r.meta&metaTxn != 0:
			ts := keyVersion(r.key)
			if open && ts != txnTs {
				stop, reason = off, "a transaction begins before the one before it ended"
				break walk
			}
			open, txnTs = true, ts
			pending++
		case r.meta&metaFinTxn != 0:
			ts, err := strconv.ParseUint(string(r.val), 10, 64)
			if !open || err != nil || ts != txnTs {
				stop, reason = off, "a transaction's end marker matches no open transaction"
				break walk
			}
			open, pending = false, 0
			validEnd = off + int64(r.size)
		default:
			if open {
				stop, reason = off, "a record lies inside another transaction"
				break walk
			}
			validEnd = off + int64(r.size)
		}
		off += int64(r.size)
	}
	if stop < 0 {
		if open {
			// The file ends right after a record, in the middle of a
			// transaction, with no padding: cut, not crashed.
			s := damaged(DamageLogCut, validEnd, size-validEnd, "the file ends inside a transaction: it was cut short")
			s.pending = pending
			return s
		}
		return logScan{validEnd: validEnd}
	}
	// Badger stops at stop. Anything intact after it is what it would drop.
	budget := int64(resyncBudgetBytes)
	q, exhausted := findLogRecord(data, stop, &budget)
	if exhausted {
		s := damaged(DamageLogCorrupt, stop, size-stop, reasonOr(reason, "unreadable bytes follow the last record")+
			", and what follows it is too irregular to rule out intact records")
		s.validEnd, s.pending = validEnd, pending
		return s
	}
	if q < 0 {
		// A torn tail: only zeros or a broken record follow.
		return logScan{validEnd: validEnd, pending: pending}
	}
	records, txns, lastEnd := countLogRecords(data, q, &budget)
	s := damaged(DamageLogCorrupt, stop, lastEnd-stop, reasonOr(reason, "a run of zeros"))
	s.validEnd, s.pending = validEnd, pending
	s.damage.RecordsAfter, s.damage.TxnsAfter = records, txns
	return s
}

func reasonOr(reason, zero string) string {
	if reason == "" {
		return zero
	}
	return reason
}

// findLogRecord returns the offset of the first intact record at or after
// from, or -1; exhausted reports that it gave up, having checksummed the
// bytes *budget allowed (one budget serves a whole scan).
func findLogRecord(data []byte, from int64, budget *int64) (at int64, exhausted bool) {
	n := int64(len(data))
	for q := from; q+minLogRecordBytes <= n; q++ {
		// A record's key length is never zero, so its third byte is not:
		// skip runs of zeros eight bytes at a time.
		if data[q+2] == 0 {
			if q+10 <= n && binary.LittleEndian.Uint64(data[q+2:]) == 0 {
				q += 7
			}
			continue
		}
		r, st := decodeLogRecord(data[q:])
		if st == recOK && len(r.key) > 8 {
			return q, false
		}
		if st == recBad {
			*budget -= checksummedBytes(data[q:])
			if *budget < 0 {
				return -1, true
			}
		}
	}
	return -1, false
}

// checksummedBytes returns how many bytes decodeLogRecord checksummed for
// the record at the start of b (0 when it stopped before the checksum).
func checksummedBytes(b []byte) int64 {
	p := 2
	var lens [3]uint64
	for i := range lens {
		if p >= len(b) {
			return 0
		}
		v, n := binary.Uvarint(b[p:])
		if n <= 0 {
			return 0
		}
		lens[i] = v
		p += n
	}
	if lens[0] == 0 || lens[0] > maxLogKeyBytes {
		return 0
	}
	body := uint64(p) + lens[0] + lens[1]
	if lens[1] > uint64(len(b)) || body+crc32.Size > uint64(len(b)) {
		return 0
	}
	return int64(body)
}

// countLogRecords walks the intact records from offset q on, skipping over
// damage, and returns how many there are, how many end a transaction, and
// where the last one ends (the end of the file when the budget ran out).
func countLogRecords(data []byte, q int64, budget *int64) (records, txns int, lastEnd int64) {
	n := int64(len(data))
	for q >= 0 && q < n {
		r, st := decodeLogRecord(data[q:])
		if st != recOK {
			next, exhausted := findLogRecord(data, q+1, budget)
			if exhausted {
				return records, txns, n
			}
			q = next
			continue
		}
		records++
		if r.meta&metaFinTxn != 0 {
			txns++
		}
		q += int64(r.size)
		lastEnd = q
	}
	return records, txns, lastEnd
}

// keyVersion returns the version Badger appends to a key (0 when the key
// is too short to carry one).
func keyVersion(key []byte) uint64 {
	if len(key) <= 8 {
		return 0
	}
	return math.MaxUint64 - binary.BigEndian.Uint64(key[len(key)-8:])
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
