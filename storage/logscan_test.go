package storage

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math"
	"strconv"
	"testing"
)

// logBuilder writes logs in Badger's record format (see logscan.go), so the
// scanner's cases can be laid out byte for byte.
type logBuilder struct {
	b    []byte
	offs []int // where each record starts
}

func newLog() *logBuilder { return &logBuilder{b: make([]byte, logHeaderBytes)} }

func (l *logBuilder) record(meta byte, key, val []byte) *logBuilder {
	l.offs = append(l.offs, len(l.b))
	start := len(l.b)
	l.b = append(l.b, meta, 0)
	l.b = binary.AppendUvarint(l.b, uint64(len(key)))
	l.b = binary.AppendUvarint(l.b, uint64(len(val)))
	l.b = binary.AppendUvarint(l.b, 0)
	l.b = append(l.b, key...)
	l.b = append(l.b, val...)
	l.b = binary.BigEndian.AppendUint32(l.b, crc32.Checksum(l.b[start:], castagnoli))
	return l
}

// versioned appends Badger's version suffix to a key.
func versioned(key string, ts uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte(key), math.MaxUint64-ts)
}

// txn writes a transaction of n records at version ts and its end marker.
func (l *logBuilder) txn(ts uint64, n int) *logBuilder {
	l.open(ts, n)
	return l.record(metaFinTxn, versioned("!badger!txn", ts), []byte(strconv.FormatUint(ts, 10)))
}

// open writes the records of a transaction without its end marker.
func (l *logBuilder) open(ts uint64, n int) *logBuilder {
	for i := range n {
		l.record(metaTxn, versioned("key"+strconv.Itoa(i), ts), bytes.Repeat([]byte{'v'}, 30+i))
	}
	return l
}

func (l *logBuilder) zeros(n int) *logBuilder { l.b = append(l.b, make([]byte, n)...); return l }

func TestScanLog(t *testing.T) {
	three := func() *logBuilder { return newLog().txn(1, 2).txn(2, 3).txn(3, 1) }
	endOf3 := len(three().b)
	rows := []struct {
		name   string
		build  func() []byte
		kind   Damage // "" when sound
		end    int    // validEnd (sound logs)
		offset int    // Damage.Offset
		recs   int    // RecordsAfter
		txns   int    // TxnsAfter
	}{
		{"three transactions, then zeros", func() []byte { return three().zeros(4096).b }, "", endOf3, 0, 0, 0},
		{"three transactions to the end of the file", func() []byte { return three().b }, "", endOf3, 0, 0, 0},
		{"an empty log", func() []byte { return newLog().zeros(100).b }, "", logHeaderBytes, 0, 0, 0},
		{"a torn last record", func() []byte {
			l := three().txn(4, 2).zeros(4096)
			copy(l.b[l.offs[len(l.offs)-1]+6:], make([]byte, 20)) // the end marker half written
			return l.b
		}, "", endOf3, 0, 0, 0},
		{"a transaction without its end", func() []byte { return three().open(4, 2).zeros(4096).b }, "", endOf3, 0, 0, 0},
		{"a next header half written", func() []byte {
			return append(three().b, 0x40, 0, 0x8a, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
		}, "", endOf3, 0, 0, 0},
		{"a byte flipped in the second transaction", func() []byte {
			l := newLog().txn(1, 2).txn(2, 3).txn(3, 1).zeros(4096)
			l.b[l.offs[4]+9] ^= 1 // the second record of transaction 2
			return l.b
		}, DamageLogCorrupt, 0, -4, 4, 2},
		{"zeros over the second transaction", func() []byte {
			l := newLog().txn(1, 2).txn(2, 3).txn(3, 1).zeros(4096)
			copy(l.b[l.offs[3]:], make([]byte, l.offs[6]-l.offs[3]))
			return l.b
		}, DamageLogCorrupt, 0, -3, 3, 2}, // transaction 2's end marker survives: it was committed
		{"a transaction begins inside another", func() []byte {
			return newLog().txn(1, 1).open(2, 2).txn(3, 2).zeros(4096).b
		}, DamageLogCorrupt, 0, -5, 3, 1},
		{"cut inside a record", func() []byte { b := three().b; return b[:len(b)-5] }, DamageLogCut, 0, -1, 0, 0},
		{"cut inside a transaction", func() []byte { return three().open(4, 2).b }, DamageLogCut, 0, endOf3, 0, 0},
		{"a header naming a key", func() []byte { l := three().zeros(64); l.b[7] = 3; return l.b }, DamageLogHeader, 0, 0, 0, 0},
		{"shorter than its header", func() []byte { return make([]byte, 7) }, DamageLogHeader, 0, 0, 0, 0},
		{"value-log records, then zeros", func() []byte {
			return newLog().record(0, versioned("a", 1), []byte("x")).record(0, versioned("b", 2), []byte("y")).zeros(64).b
		}, "", logHeaderBytes + 2*(5+9+1+4), 0, 0, 0},
		{"value-log records with one flipped", func() []byte {
			l := newLog().record(0, versioned("a", 1), []byte("x")).record(0, versioned("b", 2), []byte("y")).record(0, versioned("c", 3), []byte("z"))
			l.b[l.offs[1]+7] ^= 1
			return l.b
		}, DamageLogCorrupt, 0, -2, 1, 0},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			b := row.build()
			s := scanLog("x.mem", b)
			if row.kind == "" {
				if s.damage != nil {
					t.Fatalf("damage %v in a sound log", s.damage)
				}
				if s.validEnd != int64(row.end) {
					t.Fatalf("validEnd %d, want %d", s.validEnd, row.end)
				}
				return
			}
			d := s.damage
			if d == nil || d.Kind != row.kind || d.File != "x.mem" {
				t.Fatalf("damage %+v, want %s", d, row.kind)
			}
			t.Logf("%v", d)
			if d.RecordsAfter != row.recs || d.TxnsAfter != row.txns {
				t.Errorf("%d records and %d transactions after the damage, want %d and %d", d.RecordsAfter, d.TxnsAfter, row.recs, row.txns)
			}
			if d.Offset < 0 || d.Offset+d.BytesAfter > int64(len(b)) || s.validEnd > max(d.Offset, logHeaderBytes) {
				t.Errorf("offset %d, %d bytes after, valid end %d in a file of %d", d.Offset, d.BytesAfter, s.validEnd, len(b))
			}
			if row.offset > 0 && d.Offset != int64(row.offset) {
				t.Errorf("offset %d, want %d", d.Offset, row.offset)
			}
		})
	}
}

// scanLog never panics, reports places inside the file, and a sound log
// stays sound, with the same end, when zeros follow it (a crash's tail).
func FuzzScanLog(f *testing.F) {
	f.Add(newLog().txn(1, 2).txn(2, 3).zeros(64).b)
	f.Add(newLog().txn(1, 1).open(2, 2).b)
	f.Add(newLog().record(0, versioned("a", 1), []byte("x")).b)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := scanLog("f", data)
		n := int64(len(data))
		if s.validEnd < 0 || s.validEnd > max(n, 0) {
			t.Fatalf("validEnd %d in %d bytes", s.validEnd, n)
		}
		if d := s.damage; d != nil {
			if d.Offset < 0 || d.Offset > n || d.BytesAfter < 0 || d.Offset+d.BytesAfter > n {
				t.Fatalf("damage at %d with %d bytes after, in %d bytes", d.Offset, d.BytesAfter, n)
			}
			return
		}
		padded := scanLog("f", append(append([]byte(nil), data...), make([]byte, 64)...))
		if padded.damage != nil || padded.validEnd != s.validEnd {
			t.Fatalf("zeros after a sound log: %v, end %d (was %d)", padded.damage, padded.validEnd, s.validEnd)
		}
	})
}
