package storage

import (
	"bytes"
	"flag"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"
)

var batchSeed = flag.Uint64("batch.seed", 0, "seed of TestBatchReadsMatchAModel (0: a new one)")

// batchModel is what a batch's readers must see: the committed keys, the
// batch's writes over them, and one command's writes over those.
type batchModel struct {
	committed map[string][]byte
	batch     map[string]*[]byte // nil value: deleted in the batch
}

func (m *batchModel) view(own map[string]*[]byte) map[string][]byte {
	v := map[string][]byte{}
	for k, val := range m.committed {
		v[k] = val
	}
	for _, layer := range []map[string]*[]byte{m.batch, own} {
		for k, val := range layer {
			if val == nil {
				delete(v, k)
			} else {
				v[k] = *val
			}
		}
	}
	return v
}

// TestBatchReadsMatchAModel runs random commands through batches and checks
// every read of theirs against a model: Get, Scan (with and without values,
// from a start key, stopped early), ScanValues and ScanReverse (below a
// bound) see the committed keys, with the batch's added writes over them
// and, for a command's Tx, its own writes over those. Keys are short and
// share prefixes, including all-0xff ones, so the walks cross writes in
// every layer, deleted ones too. The seed is printed; -batch.seed replays
// one.
func TestBatchReadsMatchAModel(t *testing.T) {
	seed := *batchSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay: go test ./storage -run TestBatchReadsMatchAModel -batch.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0x626174636821))
	alphabet := []byte{0x01, 0x02, 0x7f, 0xff}
	randKey := func(maxLen int) []byte {
		k := make([]byte, 1+rng.IntN(maxLen))
		for i := range k {
			k[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return k
	}
	db := openMem(t)
	m := &batchModel{committed: map[string][]byte{}, batch: map[string]*[]byte{}}
	b := db.NewBatch()
	defer func() { b.Discard() }()
	reads := 0
	for step := range 3000 {
		switch r := rng.IntN(20); {
		case r == 0: // commit, and start the next batch
			if err := b.Commit(); err != nil {
				t.Fatalf("step %d: commit: %v", step, err)
			}
			for k, v := range m.batch {
				if v == nil {
					delete(m.committed, k)
				} else {
					m.committed[k] = *v
				}
			}
			m.batch = map[string]*[]byte{}
			b = db.NewBatch()
		case r < 12: // a command: writes, reads through its Tx, then added or dropped
			tx := b.Begin()
			own := map[string]*[]byte{}
			for range 1 + rng.IntN(4) {
				k := randKey(3)
				if rng.IntN(3) == 0 {
					tx.Delete(k)
					own[string(k)] = nil
				} else {
					v := []byte{byte(step), byte(step >> 8), byte(rng.IntN(256))}
					tx.Set(k, v)
					own[string(k)] = &v
				}
			}
			checkTxReads(t, step, rng, tx, m.view(own), randKey)
			reads++
			if rng.IntN(5) == 0 {
				continue // the command failed: its writes are dropped
			}
			if err := b.Add(tx); err != nil {
				t.Fatalf("step %d: add: %v", step, err)
			}
			for k, v := range own {
				m.batch[k] = v
			}
		default: // reads through the batch's Reader
			checkReaderReads(t, step, rng, &Reader{txn: b.txn, pending: b.pending}, m.view(nil), randKey)
			reads++
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	for k, v := range m.batch {
		if v == nil {
			delete(m.committed, k)
		} else {
			m.committed[k] = *v
		}
	}
	got := dump(t, db)
	want := map[string]string{}
	for k, v := range m.committed {
		want[k] = string(v)
	}
	if len(got) != len(want) {
		t.Fatalf("after the last commit the store holds %d keys, the model %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("after the last commit key %x holds %x, the model %x", k, got[k], v)
		}
	}
	t.Logf("%d read checks, %d keys at the end", reads, len(want))
}

// sortedKeys returns view's keys under prefix in order (reverse: from the
// largest), from start on (reverse: below start; nil: no bound).
func sortedKeys(view map[string][]byte, prefix, start []byte, reverse bool) []string {
	var keys []string
	for k := range view {
		if !bytes.HasPrefix([]byte(k), prefix) {
			continue
		}
		if start != nil && (!reverse && k < string(start) || reverse && k >= string(start)) {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if reverse {
		slices.Reverse(keys)
	}
	return keys
}

type kv struct{ k, v string }

func want(view map[string][]byte, keys []string, withValues bool, stop int) []kv {
	var out []kv
	for _, k := range keys {
		if stop > 0 && len(out) == stop {
			break
		}
		e := kv{k: k}
		if withValues {
			e.v = string(view[k])
		}
		out = append(out, e)
	}
	return out
}

func checkTxReads(t *testing.T, step int, rng *rand.Rand, tx *Tx, view map[string][]byte, randKey func(int) []byte) {
	t.Helper()
	k := randKey(3)
	v, err := tx.Get(k)
	if wv, ok := view[string(k)]; ok != (err == nil) || ok && !bytes.Equal(v, wv) {
		t.Fatalf("step %d: Tx.Get(%x) = %x, %v; the model holds %x (present %v)", step, k, v, err, wv, ok)
	}
	prefix, start := randKey(2), []byte(nil)
	if rng.IntN(2) == 0 {
		start = append(slices.Clone(prefix), randKey(2)...)
	}
	withValues, stop := rng.IntN(2) == 0, rng.IntN(4)
	var got []kv
	err = tx.Scan(prefix, start, withValues, func(k, v []byte) (bool, error) {
		got = append(got, kv{string(k), string(v)})
		return stop == 0 || len(got) < stop, nil
	})
	if w := want(view, sortedKeys(view, prefix, start, false), withValues, stop); err != nil || !slices.Equal(got, w) {
		t.Fatalf("step %d: Tx.Scan(%x, %x, values %v, stop %d) = %x, %v; the model: %x", step, prefix, start, withValues, stop, got, err, w)
	}
}

func checkReaderReads(t *testing.T, step int, rng *rand.Rand, r *Reader, view map[string][]byte, randKey func(int) []byte) {
	t.Helper()
	k := randKey(3)
	v, err := r.Get(k)
	if wv, ok := view[string(k)]; ok != (err == nil) || ok && !bytes.Equal(v, wv) {
		t.Fatalf("step %d: Get(%x) = %x, %v; the model holds %x (present %v)", step, k, v, err, wv, ok)
	}
	prefix, bound := randKey(2), []byte(nil)
	if rng.IntN(2) == 0 {
		bound = append(slices.Clone(prefix), randKey(2)...)
	}
	stop := rng.IntN(4)
	var got []kv
	collect := func(k, v []byte) (bool, error) {
		got = append(got, kv{string(k), string(v)})
		return stop == 0 || len(got) < stop, nil
	}
	switch rng.IntN(3) {
	case 0:
		withValues := rng.IntN(2) == 0
		err = r.Scan(prefix, bound, withValues, collect)
		if w := want(view, sortedKeys(view, prefix, bound, false), withValues, stop); err != nil || !slices.Equal(got, w) {
			t.Fatalf("step %d: Scan(%x, %x, values %v, stop %d) = %x, %v; the model: %x", step, prefix, bound, withValues, stop, got, err, w)
		}
	case 1:
		err = r.ScanValues(prefix, bound, collect)
		if w := want(view, sortedKeys(view, prefix, bound, false), true, stop); err != nil || !slices.Equal(got, w) {
			t.Fatalf("step %d: ScanValues(%x, %x, stop %d) = %x, %v; the model: %x", step, prefix, bound, stop, got, err, w)
		}
	default:
		err = r.ScanReverse(prefix, bound, func(k []byte) (bool, error) { return collect(k, nil) })
		if w := want(view, sortedKeys(view, prefix, bound, true), false, stop); err != nil || !slices.Equal(got, w) {
			t.Fatalf("step %d: ScanReverse(%x, before %x, stop %d) = %x, %v; the model: %x", step, prefix, bound, stop, got, err, w)
		}
	}
}
