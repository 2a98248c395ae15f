package storage

import (
	"slices"
	"testing"
)

// TestScanReverse: ScanReverse walks one prefix's keys from the largest
// down, below an exclusive bound, never into the neighbouring prefixes, and
// skips deleted keys, including a deleted key at the bound itself.
func TestScanReverse(t *testing.T) {
	db := openMem(t)
	commit(t, db, func(tx *Tx) {
		for _, id := range []uint64{1, 2, 3, 5, 8} {
			tx.Set(StatusKey(2, id), nil)
		}
		tx.Set(StatusKey(1, 9), nil) // the prefixes on either side
		tx.Set(StatusKey(3, 0), nil)
		tx.Set(RunsKey("a", 4), nil)
		tx.Set(RunsKey("ab", 6), nil) // a longer id: not among a's runs
		tx.Set([]byte{0xff, 0xff, 1}, nil)
		tx.Set([]byte{0xff, 0xff, 2}, nil)
	})
	commit(t, db, func(tx *Tx) { tx.Delete(StatusKey(2, 5)) })
	ids := func(prefix, before []byte, stopAt int) []uint64 {
		t.Helper()
		var got []uint64
		err := db.View(func(r *Reader) error {
			return r.ScanReverse(prefix, before, func(k []byte) (bool, error) {
				id, err := TrailingJob(k)
				got = append(got, id)
				return err == nil && len(got) != stopAt, err
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	for _, tc := range []struct {
		name           string
		prefix, before []byte
		stopAt         int
		want           []uint64
	}{
		{"whole prefix", StatusPrefix(2), nil, 0, []uint64{8, 3, 2, 1}},
		{"below a live key", StatusPrefix(2), StatusKey(2, 8), 0, []uint64{3, 2, 1}},
		{"below a deleted key", StatusPrefix(2), StatusKey(2, 5), 0, []uint64{3, 2, 1}},
		{"below an absent key", StatusPrefix(2), StatusKey(2, 4), 0, []uint64{3, 2, 1}},
		{"below the first", StatusPrefix(2), StatusKey(2, 1), 0, nil},
		{"a bound past the prefix", StatusPrefix(2), StatusKey(7, 0), 0, []uint64{8, 3, 2, 1}},
		{"a bound before the prefix", StatusPrefix(2), StatusKey(1, 100), 0, nil},
		{"fn stops", StatusPrefix(2), nil, 2, []uint64{8, 3}},
		{"a string prefix", RunsPrefix("a"), nil, 0, []uint64{4}},
		{"an empty prefix", StatusPrefix(4), nil, 0, nil},
	} {
		if got := ids(tc.prefix, tc.before, tc.stopAt); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
	// A prefix of 0xff bytes has no end key: the walk starts at the last key.
	var keys [][]byte
	if err := db.View(func(r *Reader) error {
		return r.ScanReverse([]byte{0xff, 0xff}, nil, func(k []byte) (bool, error) { keys = append(keys, k); return true, nil })
	}); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0][2] != 2 || keys[1][2] != 1 {
		t.Errorf("0xff prefix: %x", keys)
	}
}
