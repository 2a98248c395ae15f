package storage

import (
	"strings"

	"github.com/tidwall/btree"
)

// pending holds the writes a batch has taken from its commands and not yet
// handed to Badger, in key order.
//
// Why not hand them to the Badger transaction as they come: every iterator
// Badger opens on a read-write transaction copies and sorts all of that
// transaction's pending writes, so each scan of a command cost a sort of
// everything the batch had written before it. A batch of a busy group holds
// thousands of writes, and the scans of its commands (one per request
// record, at least) made the batch quadratic in its size. Kept here, in a
// B-tree, a scan seeks in the batch's writes in logarithmic time, and the
// transaction receives them once, at commit.
//
// A pending is owned by one Batch and used by one goroutine.
type pending struct {
	tree *btree.BTreeG[pendingWrite]
}

// pendingWrite is the last write a batch holds for one key.
type pendingWrite struct {
	key     string
	val     []byte
	deleted bool
}

func pendingLess(a, b pendingWrite) bool { return a.key < b.key }

func newPending() *pending {
	return &pending{tree: btree.NewBTreeGOptions(pendingLess, btree.Options{NoLocks: true})}
}

// put records w, replacing what the batch held for its key.
func (p *pending) put(w pendingWrite) { p.tree.Set(w) }

// get returns the batch's write of key, if it holds one.
func (p *pending) get(key []byte) (pendingWrite, bool) {
	return p.tree.Get(pendingWrite{key: string(key)})
}

// each calls fn for every write, in key order.
func (p *pending) each(fn func(w pendingWrite) error) error {
	var err error
	p.tree.Scan(func(w pendingWrite) bool {
		err = fn(w)
		return err == nil
	})
	return err
}

// pendingCursor walks the writes of one prefix in key order, or in reverse.
// A nil *pending gives a cursor that is never valid, so readers outside a
// batch share the merging code.
type pendingCursor struct {
	iter    btree.IterG[pendingWrite]
	prefix  string
	reverse bool
	ok      bool
}

// cursor returns a cursor at the first write of prefix at or after seek
// (forward), or at the last write of prefix below upper (reverse; upper nil
// means past the prefix's end, which is past every key when the prefix's
// end does not exist). Release it when done.
func (p *pending) cursor(prefix, bound []byte, reverse bool) *pendingCursor {
	c := &pendingCursor{prefix: string(prefix), reverse: reverse}
	if p == nil || p.tree.Len() == 0 {
		return c
	}
	c.iter = p.tree.Iter()
	switch {
	case !reverse:
		c.ok = c.iter.Seek(pendingWrite{key: string(bound)})
	case bound == nil:
		c.ok = c.iter.Last()
	case c.iter.Seek(pendingWrite{key: string(bound)}):
		c.ok = c.iter.Prev() // the first write at or after bound is past the range
	default:
		c.ok = c.iter.Last() // every write sorts below bound
	}
	c.settle()
	return c
}

// settle ends the walk once it has left the prefix.
func (c *pendingCursor) settle() {
	if c.ok && !strings.HasPrefix(c.iter.Item().key, c.prefix) {
		c.ok = false
	}
}

func (c *pendingCursor) item() pendingWrite { return c.iter.Item() }

func (c *pendingCursor) next() {
	if c.reverse {
		c.ok = c.iter.Prev()
	} else {
		c.ok = c.iter.Next()
	}
	c.settle()
}

func (c *pendingCursor) release() { c.iter.Release() }

// comesFirst reports whether the cursor's write comes before the stored
// key k in the walk's order (k nil: the store has no more keys), and
// whether it is the same key, which the write then replaces or hides.
func (c *pendingCursor) comesFirst(k []byte) (first, same bool) {
	if !c.ok {
		return false, false
	}
	if k == nil {
		return true, false
	}
	// The conversions in these comparisons do not copy k.
	key := c.iter.Item().key
	switch {
	case key == string(k):
		return true, true
	case c.reverse:
		return key > string(k), false
	default:
		return key < string(k), false
	}
}
