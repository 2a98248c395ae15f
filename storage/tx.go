package storage

import (
	"bytes"
	"sort"
)

// Tx is one command's view of a batch: reads see the batch's transaction plus
// the command's own buffered writes, and writes stay buffered until the batch
// adds them. A command that fails is simply dropped, leaving the shared Badger
// transaction exactly as it was — this is what lets many commands share one
// synced write without one command's error leaking partial writes.
//
// A Tx is used by one goroutine and must not outlive its batch.
type Tx struct {
	r      *Reader
	writes map[string]write
	order  []string // keys in first-write order, so Flush is deterministic
	bytes  int64    // estimated size of the buffered writes
}

type write struct {
	val     []byte
	deleted bool
}

// perEntryOverhead approximates Badger's bookkeeping per entry (meta bytes,
// version, skiplist node) so batch accounting stays conservative.
const perEntryOverhead = 32

// NewTx returns a Tx reading through r with an empty write buffer.
func NewTx(r *Reader) *Tx { return &Tx{r: r, writes: map[string]write{}} }

// Get returns the value at key as this command sees it, or ErrNotFound. A
// value this command wrote is returned as is: the caller must not modify it.
func (t *Tx) Get(key []byte) ([]byte, error) {
	if w, ok := t.writes[string(key)]; ok {
		if w.deleted {
			return nil, ErrNotFound
		}
		return w.val, nil
	}
	return t.r.Get(key)
}

// Has reports whether key holds a value as this command sees it.
func (t *Tx) Has(key []byte) (bool, error) {
	_, err := t.Get(key)
	if err == ErrNotFound {
		return false, nil
	}
	return err == nil, err
}

// Set buffers a write of val at key. Tx keeps val; the caller must not modify it.
func (t *Tx) Set(key, val []byte) { t.put(key, write{val: val}) }

// Delete buffers the removal of key.
func (t *Tx) Delete(key []byte) { t.put(key, write{deleted: true}) }

func (t *Tx) put(key []byte, w write) {
	k := string(key)
	if old, ok := t.writes[k]; ok {
		t.bytes -= int64(len(old.val))
	} else {
		t.order = append(t.order, k)
		t.bytes += int64(len(k)) + perEntryOverhead
	}
	t.bytes += int64(len(w.val))
	t.writes[k] = w
}

// Len returns the number of distinct keys written.
func (t *Tx) Len() int { return len(t.order) }

// Bytes returns the estimated size of the buffered writes.
func (t *Tx) Bytes() int64 { return t.bytes }

// Scan is Reader.Scan over this command's view: buffered writes replace,
// hide or add to what the transaction holds, in key order.
func (t *Tx) Scan(prefix, start []byte, withValues bool, fn func(key, val []byte) (bool, error)) error {
	own := t.ownKeys(prefix, start)
	stopped := false
	emitOwnBefore := func(limit []byte) (bool, error) {
		for len(own) > 0 && (limit == nil || bytes.Compare([]byte(own[0]), limit) < 0) {
			k := own[0]
			own = own[1:]
			w := t.writes[k]
			if w.deleted {
				continue
			}
			var v []byte
			if withValues {
				v = w.val
			}
			if more, err := fn([]byte(k), v); err != nil || !more {
				return false, err
			}
		}
		return true, nil
	}
	err := t.r.Scan(prefix, start, withValues, func(k, v []byte) (bool, error) {
		more, err := emitOwnBefore(k)
		if err != nil || !more {
			stopped = true
			return false, err
		}
		if w, ok := t.writes[string(k)]; ok {
			own = own[1:] // own[0] == k: it sorts no lower than k and none lower remain
			if w.deleted {
				return true, nil
			}
			if withValues {
				v = w.val
			}
		}
		more, err = fn(k, v)
		stopped = !more
		return more, err
	})
	if err != nil || stopped {
		return err
	}
	_, err = emitOwnBefore(nil)
	return err
}

// ownKeys returns the buffered keys under prefix and at or after start, sorted.
func (t *Tx) ownKeys(prefix, start []byte) []string {
	var keys []string
	for _, k := range t.order {
		kb := []byte(k)
		if bytes.HasPrefix(kb, prefix) && (start == nil || bytes.Compare(kb, start) >= 0) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// First returns the first key under prefix as this command sees it, or ErrNotFound.
func (t *Tx) First(prefix []byte) ([]byte, error) {
	var first []byte
	err := t.Scan(prefix, nil, false, func(k, _ []byte) (bool, error) {
		first = k
		return false, nil
	})
	if err == nil && first == nil {
		err = ErrNotFound
	}
	return first, err
}

// Each calls fn for every buffered write, in the order the keys were first
// written: the key, the value (nil for a delete) and whether it deletes.
// fn must not keep or modify key or val.
func (t *Tx) Each(fn func(key, val []byte, deleted bool)) {
	for _, k := range t.order {
		w := t.writes[k]
		fn([]byte(k), w.val, w.deleted)
	}
}

// Before returns the value key held before this command (what the batch
// or the store holds, regardless of the writes buffered here), or
// ErrNotFound. Call it before the batch adds this Tx.
func (t *Tx) Before(key []byte) ([]byte, error) { return t.r.Get(key) }
