package storage

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// Reader reads through one Badger transaction. It is not safe for concurrent
// use, and a read-write transaction allows only one open iterator at a time,
// so a Scan callback must not start another Scan on the same Reader.
type Reader struct {
	txn *badger.Txn
	// pending is the writes of the batch this Reader reads through, which
	// its transaction does not hold yet (see pending); nil outside a batch.
	// Its keys are without ks.
	pending *pending
	// ks is the keyspace's prefix (see DB.Keyspace), nil for a whole
	// database; keyBuf holds the last key Get looked up under it.
	ks, keyBuf []byte
}

// NewReader wraps a Badger transaction, for callers that manage their own.
func NewReader(txn *badger.Txn) *Reader { return &Reader{txn: txn} }

// Get returns a copy of the value at key, or ErrNotFound.
func (r *Reader) Get(key []byte) (_ []byte, err error) {
	if r.pending != nil {
		if w, ok := r.pending.get(key); ok {
			if w.deleted {
				return nil, ErrNotFound
			}
			return append([]byte(nil), w.val...), nil
		}
	}
	if len(key) == 0 {
		return nil, badger.ErrEmptyKey // the caller's mistake, in a keyspace too
	}
	defer recoverRead(&err, "reading key", key, nil)
	// Badger keeps the key only in the item, which lives no longer than
	// this call, so one buffer serves every Get.
	stored := key
	if r.ks != nil {
		r.keyBuf = append(append(r.keyBuf[:0], r.ks...), key...)
		stored = r.keyBuf
	}
	item, err := r.txn.Get(stored)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, ErrNotFound
	}
	if errors.Is(err, badger.ErrEmptyKey) {
		return nil, err // the caller's mistake, not the database's
	}
	if err != nil {
		return nil, readError("reading key", key, err)
	}
	v, err := valueCopy(item)
	if err != nil {
		return nil, readError("reading the value of key", key, err)
	}
	return v, nil
}

// errValueLost: see valueCopy.
var errValueLost = errors.New("the value log did not yield the value (Badger logged why)")

// valueCopy returns a copy of item's value. Badger logs a value it cannot
// read from the value log (its checksum fails, its bytes were cut away)
// and yields it as empty, with no error. A value the log holds is never
// empty (it is at least the value threshold), so an empty value where the
// item says the log holds one is a failed read.
func valueCopy(item *badger.Item) ([]byte, error) {
	v, err := item.ValueCopy(nil)
	if err == nil && len(v) == 0 && item.ValueSize() > 0 {
		err = errValueLost
	}
	return v, err
}

// readError wraps a failure of Badger itself (never a missing key) in ErrRead,
// keeping Badger's error matchable too.
func readError(what string, key []byte, err error) error {
	return fmt.Errorf("%w: %s %q: %w", ErrRead, what, key, err)
}

// Scan calls fn for every key with the given prefix, in key order, starting at
// the first key >= start (start nil means the beginning of the prefix). When
// withValues is false fn receives a nil value, and Badger does not fetch the
// values at all (index ranges hold empty values). fn returns false to stop.
// The key and value passed to fn are copies the callee may keep.
func (r *Reader) Scan(prefix, start []byte, withValues bool, fn func(key, val []byte) (bool, error)) (err error) {
	// A panic inside Badger (a damaged block) becomes an ErrRead; one in
	// fn is the caller's and is passed on.
	var inFn bool
	defer recoverRead(&err, "scanning prefix", prefix, &inFn)
	opts := badger.DefaultIteratorOptions
	opts.PrefetchValues = withValues
	if withValues {
		opts.PrefetchSize = 16
	}
	it, pc, stored := r.forward(opts, prefix, start)
	defer it.Close()
	defer pc.release()
	call := tracked(fn, &inFn)
	return merge(it, len(r.ks), func() bool { return it.ValidForPrefix(stored) }, pc,
		func(item *badger.Item) (bool, error) {
			key := item.KeyCopy(nil)[len(r.ks):]
			var val []byte
			if withValues {
				v, err := valueCopy(item)
				if err != nil {
					return false, readError("reading the value of key", key, err)
				}
				val = v
			}
			return call(key, val)
		},
		func(w pendingWrite) (bool, error) {
			var val []byte
			if withValues {
				val = append([]byte(nil), w.val...)
			}
			return call([]byte(w.key), val)
		})
}

// forward opens an iterator with opts over prefix, at the first key at or
// after start (start nil: the prefix's first), and a cursor over the
// batch's pending writes of the same range. The caller closes both.
// stored is the prefix as Badger stores it (with the keyspace's).
func (r *Reader) forward(opts badger.IteratorOptions, prefix, start []byte) (it *badger.Iterator, pc *pendingCursor, stored []byte) {
	stored = r.full(prefix)
	opts.Prefix = stored
	it = r.txn.NewIterator(opts)
	seek := prefix
	if start != nil && bytes.Compare(start, prefix) > 0 {
		seek = start
	}
	it.Seek(r.full(seek))
	return it, r.pending.cursor(prefix, seek, false), stored
}

// full returns key as Badger stores it: with the keyspace's prefix, in a
// new slice, or key itself outside a keyspace.
func (r *Reader) full(key []byte) []byte {
	if r.ks == nil {
		return key
	}
	return append(append(make([]byte, 0, len(r.ks)+len(key)), r.ks...), key...)
}

// tracked returns fn, setting *inFn while it runs. Not deferred: a panic
// in fn must leave *inFn set, for recoverRead to pass it on as the
// caller's.
func tracked(fn func(key, val []byte) (bool, error), inFn *bool) func(key, val []byte) (bool, error) {
	return func(key, val []byte) (bool, error) {
		*inFn = true
		more, err := fn(key, val)
		*inFn = false
		return more, err
	}
}

// merge walks the stored keys and a batch's pending writes together, in
// the walk's order: it (positioned at the walk's first key) while
// storeValid holds, and pc. The stored keys are compared without their
// first strip bytes (a keyspace's prefix). A pending write replaces the stored value of
// its key, or hides the key when it deletes it. onStored is called for a
// stored key no write replaces, onPending for a write that does not
// delete; either returns false to stop the walk.
func merge(it *badger.Iterator, strip int, storeValid func() bool, pc *pendingCursor,
	onStored func(item *badger.Item) (bool, error), onPending func(w pendingWrite) (bool, error)) error {
	for {
		var k []byte
		if storeValid() {
			k = it.Item().Key()[strip:]
		}
		if first, same := pc.comesFirst(k); first {
			w := pc.item()
			pc.next()
			if same {
				it.Next()
			}
			if w.deleted {
				continue
			}
			if more, err := onPending(w); err != nil || !more {
				return err
			}
			continue
		}
		if k == nil {
			return nil
		}
		if more, err := onStored(it.Item()); err != nil || !more {
			return err
		}
		it.Next()
	}
}

// ScanReverse calls fn for every key with the given prefix that sorts
// below before (before nil: every key of the prefix), in descending key
// order, without values: it is for walking an index from its newest entry
// back. fn returns false to stop; the key passed to fn is a copy the
// callee may keep.
func (r *Reader) ScanReverse(prefix, before []byte, fn func(key []byte) (bool, error)) (err error) {
	var inFn bool
	defer recoverRead(&err, "scanning back prefix", prefix, &inFn)
	// No opts.Prefix: with one, Badger's Valid is false on the first key
	// outside the prefix, which a reverse seek to the bound may land on.
	opts := badger.DefaultIteratorOptions
	opts.PrefetchValues = false
	opts.Reverse = true
	it := r.txn.NewIterator(opts)
	defer it.Close()
	// A reverse Seek lands on the largest key at or below its argument.
	// The bound is exclusive, so a key equal to it (or, with no bound, the
	// first key past the prefix) is stepped over below.
	upper := before
	if upper == nil || !bytes.HasPrefix(upper, prefix) && bytes.Compare(upper, prefix) > 0 {
		upper = PrefixEnd(prefix)
	}
	if upper != nil && bytes.Compare(upper, prefix) <= 0 {
		return nil // nothing of the prefix sorts below before
	}
	// Badger's keys carry the keyspace's prefix; upper and the walk's keys
	// here do not. With no bound the walk starts past the prefix's range.
	switch {
	case upper != nil:
		it.Seek(r.full(upper))
	case r.ks != nil:
		// The prefix is all 0xff bytes, but the keyspace's range ends.
		if end := PrefixEnd(r.ks); end != nil {
			it.Seek(end)
		} else {
			it.Rewind()
		}
	default:
		it.Rewind() // the prefix is all 0xff bytes: start from the last key
	}
	pc := r.pending.cursor(prefix, upper, true)
	defer pc.release()
	strip := len(r.ks)
	storeValid := func() bool {
		for ; it.Valid(); it.Next() {
			k := it.Item().Key()
			if !bytes.HasPrefix(k, r.ks) {
				if bytes.Compare(k, r.ks) < 0 {
					return false // below the keyspace: the walk is over
				}
				continue // the keyspace's end, where a walk without a bound starts
			}
			if upper == nil || bytes.Compare(k[strip:], upper) < 0 {
				break
			}
		}
		// A key below the prefix's range ends the walk.
		return it.Valid() && bytes.HasPrefix(it.Item().Key()[strip:], prefix)
	}
	call := tracked(func(key, _ []byte) (bool, error) { return fn(key) }, &inFn)
	return merge(it, strip, storeValid, pc,
		func(item *badger.Item) (bool, error) { return call(item.KeyCopy(nil)[strip:], nil) },
		func(w pendingWrite) (bool, error) { return call([]byte(w.key), nil) })
}

// ScanValues is Scan with values, without copying them: fn's val is
// Badger's own buffer (a mapped value log, or the item's buffer), valid
// only until fn returns, and fn must keep neither it nor any slice of it.
// It is for reads that keep a small part of large values: a history shown
// without its payloads would otherwise copy every payload to drop it. The
// key is a copy fn may keep.
func (r *Reader) ScanValues(prefix, start []byte, fn func(key, val []byte) (bool, error)) (err error) {
	var inFn bool
	defer recoverRead(&err, "scanning prefix", prefix, &inFn)
	opts := badger.DefaultIteratorOptions
	// Prefetching would copy every value ahead of fn.
	opts.PrefetchValues = false
	it, pc, stored := r.forward(opts, prefix, start)
	defer it.Close()
	defer pc.release()
	call := tracked(fn, &inFn)
	return merge(it, len(r.ks), func() bool { return it.ValidForPrefix(stored) }, pc,
		func(item *badger.Item) (bool, error) {
			key := item.KeyCopy(nil)[len(r.ks):]
			var more bool
			var fnErr error
			err := item.Value(func(v []byte) error {
				if len(v) == 0 && item.ValueSize() > 0 {
					return errValueLost // as valueCopy
				}
				more, fnErr = call(key, v)
				return nil
			})
			if err != nil {
				return false, readError("reading the value of key", key, err)
			}
			return more, fnErr
		},
		func(w pendingWrite) (bool, error) { return call([]byte(w.key), w.val) })
}

// recoverRead, deferred around reads through Badger, turns a panic of
// Badger's (it panics on some damaged bytes instead of failing) into an
// ErrRead naming what was read. A panic while *inCaller is true came from
// the caller's code and is passed on.
func recoverRead(err *error, what string, key []byte, inCaller *bool) {
	r := recover()
	if r == nil {
		return
	}
	if inCaller != nil && *inCaller {
		panic(r)
	}
	*err = readError(what, key, fmt.Errorf("badger panicked: %s", firstLine(fmt.Sprint(r))))
}

// First returns the first key with the given prefix, or ErrNotFound.
func (r *Reader) First(prefix []byte) ([]byte, error) {
	var first []byte
	err := r.Scan(prefix, nil, false, func(k, _ []byte) (bool, error) {
		first = k
		return false, nil
	})
	if err == nil && first == nil {
		err = ErrNotFound
	}
	return first, err
}
