package storage

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// ScanValues walks what Scan walks, from the same start, stopping where fn
// says, with the same values, both for values in the LSM tree and for
// values in the value log (on disk, above the value threshold).
func TestScanValuesIsScanWithoutCopies(t *testing.T) {
	disk, err := Open(Options{Dir: t.TempDir(), MemTableBytes: 1 << 20, ValueThresholdBytes: 64})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := disk.Close(); err != nil {
			t.Error(err)
		}
	})
	for name, db := range map[string]*DB{"in memory": openMem(t), "on disk": disk} {
		kvs := map[string]string{"q/1": "outside"}
		for i := range 20 {
			kvs[fmt.Sprintf("p/%02d", i)] = string(bytes.Repeat([]byte{byte('a' + i)}, 10+i*20))
		}
		putAll(t, db, kvs)
		type kv struct{ k, v string }
		walk := func(scan func(r *Reader, fn func(k, v []byte) (bool, error)) error, stopAt int) []kv {
			var out []kv
			err := db.View(func(r *Reader) error {
				return scan(r, func(k, v []byte) (bool, error) {
					out = append(out, kv{string(k), string(v)})
					return len(out) < stopAt, nil
				})
			})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return out
		}
		for _, c := range []struct {
			start []byte
			stop  int
		}{{nil, 100}, {[]byte("p/05"), 100}, {[]byte("p/05"), 3}} {
			want := walk(func(r *Reader, fn func(k, v []byte) (bool, error)) error {
				return r.Scan([]byte("p/"), c.start, true, fn)
			}, c.stop)
			got := walk(func(r *Reader, fn func(k, v []byte) (bool, error)) error {
				return r.ScanValues([]byte("p/"), c.start, fn)
			}, c.stop)
			if fmt.Sprint(got) != fmt.Sprint(want) || len(got) == 0 {
				t.Errorf("%s, from %q, stop after %d: ScanValues saw %v, Scan %v", name, c.start, c.stop, got, want)
			}
		}
		sentinel := errors.New("stop")
		err := db.View(func(r *Reader) error {
			return r.ScanValues([]byte("p/"), nil, func(k, v []byte) (bool, error) { return true, sentinel })
		})
		if err != sentinel {
			t.Errorf("%s: fn's error came back as %v", name, err)
		}
	}
}
