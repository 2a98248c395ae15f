package storage

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"

	"github.com/dgraph-io/badger/v4"
)

// A snapshot is the whole keyspace as of one read transaction, laid out as
//
//	magic   "HDLSNAP1"
//	record* uvarint(len(key)) key uvarint(len(val)) val, in ascending key order
//	end     uvarint(0)
//	trailer uvarint(record count) crc32c(magic through count, 4 bytes big-endian)
//
// Keys are never empty, so a zero key length can only be the end marker. The
// format carries no Badger versions or metadata: a snapshot restores the
// logical contents of the database, not its files.
const snapshotMagic = "HDLSNAP1"

// Limits that LoadSnapshot enforces before allocating, so that a corrupt
// length cannot make it reserve gigabytes. No database heddle writes can
// exceed them: Badger itself refuses keys over 65000 bytes, and heddle's
// records are far smaller than the value limit.
const (
	maxSnapshotKey   = 65000
	maxSnapshotValue = 64 << 20
)

// castagnoli is the CRC-32C table: it has hardware support on common CPUs
// and better error detection than the IEEE polynomial.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// SnapshotInfo describes a snapshot that was written or loaded.
type SnapshotInfo struct {
	// Keys is the number of key/value records in the snapshot.
	Keys int64
	// Bytes is the size of the snapshot, magic and trailer included.
	Bytes int64
	// AppliedIndex is the log index the snapshot covers (0 when the database
	// records none), so a replica knows where to resume the log.
	AppliedIndex uint64
}

// WriteSnapshot streams every key and value, as of a single read transaction,
// to w. Writes that commit while it runs are not included, so the snapshot is
// exactly the state at SnapshotInfo.AppliedIndex.
func (db *DB) WriteSnapshot(w io.Writer) (SnapshotInfo, error) {
	s := db.OpenSnapshot()
	defer s.Close()
	return s.Stream(w)
}

// Snapshot is a point-in-time view of the whole database, fixed when
// OpenSnapshot returns: a Raft state machine opens one on its apply
// goroutine (so it holds exactly the applied state) and streams it out on
// another while applies go on. Close releases it.
type Snapshot struct {
	db  *DB
	txn *badger.Txn
}

// OpenSnapshot fixes the current state for Stream.
func (db *DB) OpenSnapshot() *Snapshot {
	return &Snapshot{db: db, txn: db.bdb.NewTransaction(false)}
}

// Close releases the snapshot; it may be called more than once.
func (s *Snapshot) Close() {
	if s.txn != nil {
		s.txn.Discard()
		s.txn = nil
	}
}

// Stream writes the snapshot to w in the format LoadSnapshot reads.
//
// Badger's Stream and Backup are not used: outside managed mode each of their
// goroutines opens its own read transaction, so they do not read at one
// timestamp.
func (s *Snapshot) Stream(w io.Writer) (SnapshotInfo, error) {
	var info SnapshotInfo
	if s.txn == nil {
		return info, errors.New("storage: write snapshot: snapshot is closed")
	}
	txn := s.txn
	// Badger's iterators end at a block whose checksum fails, without an
	// error: a snapshot of a table damaged since Open would silently lack
	// keys. So the tables are verified whole first.
	if err := s.db.VerifyTables(); err != nil {
		return info, fmt.Errorf("storage: write snapshot: %w", err)
	}
	applied, err := AppliedIndex(&Reader{txn: txn, ks: s.db.ks})
	if err != nil {
		return info, fmt.Errorf("storage: write snapshot: %w", err)
	}
	info.AppliedIndex = applied

	sw := &snapshotWriter{w: bufio.NewWriterSize(w, 64<<10)}
	sw.write([]byte(snapshotMagic))

	// A keyspace's snapshot holds its keys without the prefix, so that it
	// loads into any keyspace, or a database of its own.
	ks := s.db.ks
	opts := badger.DefaultIteratorOptions
	opts.AllVersions = false
	opts.Prefix = ks
	it := txn.NewIterator(opts)
	defer it.Close()
	for it.Rewind(); it.ValidForPrefix(ks) && sw.err == nil; it.Next() {
		item := it.Item()
		sw.writeBytes(item.Key()[len(ks):])
		if err := item.Value(func(v []byte) error {
			if len(v) == 0 && item.ValueSize() > 0 {
				return errValueLost // see valueCopy
			}
			sw.writeBytes(v)
			return nil
		}); err != nil {
			return info, fmt.Errorf("storage: write snapshot: reading %q: %w", item.Key()[len(ks):], err)
		}
		info.Keys++
	}
	sw.writeUvarint(0)
	sw.writeUvarint(uint64(info.Keys))
	sw.writeTrailer()
	if sw.err == nil {
		sw.err = sw.w.Flush()
	}
	info.Bytes = sw.n
	if sw.err != nil {
		return info, fmt.Errorf("storage: write snapshot: %w", sw.err)
	}
	return info, nil
}

// snapshotWriter keeps the running checksum and size of a snapshot and
// remembers the first write error, so the encoding loop stays linear.
type snapshotWriter struct {
	w       *bufio.Writer
	crc     uint32
	n       int64
	err     error
	scratch [binary.MaxVarintLen64]byte
}

func (s *snapshotWriter) write(p []byte) {
	if s.err != nil {
		return
	}
	s.crc = crc32.Update(s.crc, castagnoli, p)
	n, err := s.w.Write(p)
	s.n += int64(n)
	s.err = err
}

func (s *snapshotWriter) writeUvarint(v uint64) {
	s.write(binary.AppendUvarint(s.scratch[:0], v))
}

func (s *snapshotWriter) writeBytes(p []byte) {
	s.writeUvarint(uint64(len(p)))
	s.write(p)
}

// writeTrailer appends the checksum, which does not cover itself.
func (s *snapshotWriter) writeTrailer() {
	if s.err != nil {
		return
	}
	sum := binary.BigEndian.AppendUint32(s.scratch[:0], s.crc)
	n, err := s.w.Write(sum)
	s.n += int64(n)
	s.err = err
}

// LoadSnapshot fills db (a database or a keyspace), which must be empty,
// with a snapshot written by
// WriteSnapshot. Malformed input (a bad magic, truncation, an oversized or
// out-of-order key, a count or checksum mismatch, bytes after the trailer)
// is reported as a *CorruptError.
//
// The checksum can only be verified after every record has been written, so
// on any error db holds part of the snapshot and must be discarded: load into
// a fresh directory (or keyspace) and swap it in only after LoadSnapshot
// succeeds.
func (db *DB) LoadSnapshot(r io.Reader) (info SnapshotInfo, err error) {
	err = db.View(func(rd *Reader) error {
		_, err := rd.First(nil)
		return err
	})
	switch {
	case err == nil:
		return info, fmt.Errorf("storage: load snapshot: database is not empty")
	case err != ErrNotFound:
		return info, fmt.Errorf("storage: load snapshot: %w", err)
	}

	sr := &snapshotReader{r: bufio.NewReaderSize(r, 64<<10)}
	magic, err := sr.readN(len(snapshotMagic), "magic")
	if err != nil {
		return info, err
	}
	if string(magic) != snapshotMagic {
		return info, snapshotCorrupt("bad magic %q", magic)
	}

	wb := db.bdb.NewWriteBatch()
	flushed := false
	defer func() {
		if !flushed {
			wb.Cancel()
		}
	}()

	var prev []byte
	for {
		klen, err := sr.readUvarint("key length")
		if err != nil {
			return info, err
		}
		if klen == 0 {
			break
		}
		if klen > maxSnapshotKey {
			return info, snapshotCorrupt("record %d has a key of %d bytes, over the limit of %d", info.Keys, klen, maxSnapshotKey)
		}
		key, err := sr.readN(int(klen), "key")
		if err != nil {
			return info, err
		}
		if bytes.Compare(prev, key) >= 0 {
			return info, snapshotCorrupt("record %d key %q does not sort after the previous key", info.Keys, key)
		}
		vlen, err := sr.readUvarint("value length")
		if err != nil {
			return info, err
		}
		if vlen > maxSnapshotValue {
			return info, snapshotCorrupt("record %d has a value of %d bytes, over the limit of %d", info.Keys, vlen, maxSnapshotValue)
		}
		val, err := sr.readN(int(vlen), "value")
		if err != nil {
			return info, err
		}
		if bytes.Equal(key, KeyAppliedIndex) {
			if info.AppliedIndex, err = ParseU64(val); err != nil {
				var ce *CorruptError
				if errors.As(err, &ce) {
					ce.Key = key
				}
				return info, err
			}
		}
		// The write batch keeps key and val until it commits, which is why
		// readN returns fresh slices (and a keyspace's key is a new one).
		if err := wb.Set(db.full(key), val); err != nil {
			return info, fmt.Errorf("storage: load snapshot: writing %q: %w", key, err)
		}
		prev = key
		info.Keys++
	}

	count, err := sr.readUvarint("record count")
	if err != nil {
		return info, err
	}
	want := sr.crc
	sum, err := sr.readN(4, "checksum")
	if err != nil {
		return info, err
	}
	if got := binary.BigEndian.Uint32(sum); got != want {
		return info, snapshotCorrupt("checksum is %08x, content sums to %08x", got, want)
	}
	if count != uint64(info.Keys) {
		return info, snapshotCorrupt("trailer counts %d records, found %d", count, info.Keys)
	}
	switch _, err := sr.r.ReadByte(); {
	case err == nil:
		return info, snapshotCorrupt("trailing bytes after the trailer")
	case err != io.EOF:
		return info, fmt.Errorf("storage: load snapshot: %w", err)
	}
	info.Bytes = sr.n

	flushed = true
	if err := wb.Flush(); err != nil {
		return info, fmt.Errorf("storage: load snapshot: %w", err)
	}
	return info, nil
}

// snapshotReader keeps the running checksum and size of what has been read,
// and tells truncation, which is corruption, apart from errors of the
// underlying reader, which are not.
type snapshotReader struct {
	r     *bufio.Reader
	crc   uint32
	n     int64
	ioErr error // first error from r other than io.EOF
	one   [1]byte
}

// ReadByte lets binary.ReadUvarint read through the checksum.
func (s *snapshotReader) ReadByte() (byte, error) {
	b, err := s.r.ReadByte()
	if err != nil {
		if err != io.EOF && s.ioErr == nil {
			s.ioErr = err
		}
		return 0, err
	}
	s.one[0] = b
	s.crc = crc32.Update(s.crc, castagnoli, s.one[:])
	s.n++
	return b, nil
}

func (s *snapshotReader) readUvarint(what string) (uint64, error) {
	v, err := binary.ReadUvarint(s)
	if err != nil {
		return 0, s.fail(err, what)
	}
	return v, nil
}

// readN returns the next n bytes in a new slice. It grows the slice as data
// arrives rather than trusting n up front, so a corrupt length in a short
// input costs at most one step of memory.
func (s *snapshotReader) readN(n int, what string) ([]byte, error) {
	const step = 1 << 20
	buf := make([]byte, 0, min(n, step))
	for len(buf) < n {
		m := min(n-len(buf), step)
		buf = slices.Grow(buf, m)
		k, err := io.ReadFull(s.r, buf[len(buf):len(buf)+m])
		buf = buf[:len(buf)+k]
		s.n += int64(k)
		if err != nil {
			if err != io.EOF && err != io.ErrUnexpectedEOF {
				s.ioErr = err
			}
			return nil, s.fail(err, what)
		}
	}
	s.crc = crc32.Update(s.crc, castagnoli, buf)
	return buf, nil
}

// fail classifies a read error: running out of input is corruption, an error
// from the underlying reader is passed on, and anything else is a malformed
// varint.
func (s *snapshotReader) fail(err error, what string) error {
	switch {
	case s.ioErr != nil:
		return fmt.Errorf("storage: load snapshot: reading %s: %w", what, s.ioErr)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return snapshotCorrupt("truncated at byte %d, reading %s", s.n, what)
	default:
		return snapshotCorrupt("malformed %s at byte %d: %v", what, s.n, err)
	}
}

func snapshotCorrupt(format string, args ...any) error {
	return &CorruptError{Kind: KindMeta, Reason: "snapshot: " + fmt.Sprintf(format, args...)}
}
