package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The damage table: each row damages a data directory the way a disk or a
// careless operator does, and Open must refuse it with a *DamagedError
// naming the file (before these checks Badger opened every one of them,
// silently dropping, altering or, for a cut table, panicking). The torn
// tails below it are what a crash leaves, and must open without a word.

// fixtureKeys is how many keys a fixture holds, one transaction each; every
// seventh value is large enough to live in the value log.
const fixtureKeys = 600

func fixtureValue(i int) string {
	if i%7 == 0 {
		return strings.Repeat(fmt.Sprintf("big%06d", i), 600) // 5400 bytes: the value log
	}
	return strings.Repeat(fmt.Sprintf("v%06d", i), 12)
}

func fixtureKey(i int) string { return fmt.Sprintf("k%06d", i) }

// fixtures builds the two fixture directories once for a test; each row
// then damages a copy of one of them.
type fixtures struct{ crashed, clean string }

func newFixtures(t *testing.T) fixtures {
	return fixtures{crashed: buildFixture(t, true), clean: buildFixture(t, false)}
}

// copyOf returns a fresh copy of the crashed or the clean fixture.
func (f fixtures) copyOf(t *testing.T, crashed bool) string {
	dir := t.TempDir()
	if crashed {
		copyDir(t, f.crashed, dir)
	} else {
		copyDir(t, f.clean, dir)
	}
	return dir
}

// buildFixture writes the fixture keys into a fresh directory and returns
// a copy of it: taken while the database is open when crashed (the image
// a SIGKILL leaves: the keys are in the memtable's write-ahead log), after
// a clean Close otherwise (the keys are in a table, the large values in
// the value log).
func buildFixture(t *testing.T, crashed bool) string {
	t.Helper()
	src := t.TempDir()
	// Unsynced commits write the same log bytes (the copy reads them from
	// the page cache), only faster; small logs keep the copies small.
	db, err := Open(Options{Dir: src, ReserveBytes: -1, NoSync: true, MemTableBytes: 1 << 20, ValueLogFileBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	for i := range fixtureKeys {
		commit(t, db, func(tx *Tx) { tx.Set([]byte(fixtureKey(i)), []byte(fixtureValue(i))) })
	}
	dst := t.TempDir()
	if crashed {
		copyDir(t, src, dst)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if !crashed {
		copyDir(t, src, dst)
	}
	return dst
}

// copyDir copies the files of src (not Badger's pid file) into dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() == "LOCK" || !e.Type().IsRegular() {
			continue
		}
		copyFile(t, filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()))
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = in.Close() }()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// only returns the one file of dir with the given suffix.
func only(t *testing.T, dir, suffix string) string {
	t.Helper()
	var found []string
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), suffix) {
			fi, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			if suffix == ".vlog" && fi.Size() <= logHeaderBytes {
				continue // an empty value log opened after the last close
			}
			found = append(found, filepath.Join(dir, e.Name()))
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one %s file in %s, found %v", suffix, dir, found)
	}
	return found[0]
}

// dataEnd returns the offset after the last non-zero byte of the file.
func dataEnd(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	end := len(b)
	for end > 0 && b[end-1] == 0 {
		end--
	}
	return int64(end)
}

func flip(t *testing.T, path string, off int64, n int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] ^= 0xA5
	}
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func zero(t *testing.T, path string, off int64, n int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, n), off); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func truncate(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRefusesDamage(t *testing.T) {
	rows := []struct {
		name    string
		crashed bool
		damage  func(t *testing.T, dir string) string // returns the file it damaged
		kind    Damage
		// after: the damage leaves intact records after it.
		after bool
	}{
		{"4 bytes flipped inside the write-ahead log", true, func(t *testing.T, dir string) string {
			mem := only(t, dir, ".mem")
			flip(t, mem, dataEnd(t, mem)/3, 4)
			return mem
		}, DamageLogCorrupt, true},
		{"a run of zeros inside the write-ahead log", true, func(t *testing.T, dir string) string {
			mem := only(t, dir, ".mem")
			zero(t, mem, dataEnd(t, mem)/2, 300)
			return mem
		}, DamageLogCorrupt, true},
		{"the write-ahead log truncated", true, func(t *testing.T, dir string) string {
			mem := only(t, dir, ".mem")
			truncate(t, mem, dataEnd(t, mem)/2)
			return mem
		}, DamageLogCut, false},
		{"the write-ahead log's header names a key", true, func(t *testing.T, dir string) string {
			mem := only(t, dir, ".mem")
			flip(t, mem, 3, 1)
			return mem
		}, DamageLogHeader, false},
		{"MANIFEST deleted", false, func(t *testing.T, dir string) string {
			m := filepath.Join(dir, manifestName)
			if err := os.Remove(m); err != nil {
				t.Fatal(err)
			}
			return m
		}, DamageManifestMissing, false},
		{"MANIFEST deleted before the first flush", true, func(t *testing.T, dir string) string {
			m := filepath.Join(dir, manifestName)
			if err := os.Remove(m); err != nil {
				t.Fatal(err)
			}
			return m
		}, DamageManifestMissing, false},
		{"MANIFEST flipped", false, func(t *testing.T, dir string) string {
			m := filepath.Join(dir, manifestName)
			flip(t, m, 12, 2)
			return m
		}, DamageManifestCorrupt, false},
		{"bytes flipped in a table", false, func(t *testing.T, dir string) string {
			sst := only(t, dir, ".sst")
			flip(t, sst, fileSize(sst)/3, 4)
			return sst
		}, DamageTableCorrupt, false},
		{"a table truncated", false, func(t *testing.T, dir string) string {
			sst := only(t, dir, ".sst")
			truncate(t, sst, fileSize(sst)/2)
			return sst
		}, DamageTableCorrupt, false},
		{"a table emptied", false, func(t *testing.T, dir string) string {
			sst := only(t, dir, ".sst")
			truncate(t, sst, 0)
			return sst
		}, DamageTableCorrupt, false},
		{"a table deleted", false, func(t *testing.T, dir string) string {
			sst := only(t, dir, ".sst")
			if err := os.Remove(sst); err != nil {
				t.Fatal(err)
			}
			return sst
		}, DamageTableMissing, false},
		{"bytes flipped in the value log", false, func(t *testing.T, dir string) string {
			vlog := only(t, dir, ".vlog")
			flip(t, vlog, fileSize(vlog)/2, 4)
			return vlog
		}, DamageLogCorrupt, true},
		{"the value log truncated", false, func(t *testing.T, dir string) string {
			vlog := only(t, dir, ".vlog")
			truncate(t, vlog, fileSize(vlog)/2+3)
			return vlog
		}, DamageLogCut, false},
	}
	fx := newFixtures(t)
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			dir := fx.copyOf(t, row.crashed)
			file := row.damage(t, dir)
			db, err := Open(Options{Dir: dir, ReserveBytes: -1})
			if err == nil {
				n := len(dump(t, db))
				_ = db.Close()
				t.Fatalf("Open succeeded on a damaged directory (%d of %d keys readable)", n, fixtureKeys)
			}
			var de *DamagedError
			if !errors.Is(err, ErrDamaged) || !errors.As(err, &de) {
				t.Fatalf("Open: %v, want a *DamagedError", err)
			}
			t.Logf("Open: %v", err)
			if de.File != file || de.Kind != row.kind || de.Code() != DamagedCode {
				t.Errorf("damage %s in %s (code %s), want %s in %s", de.Kind, de.File, de.Code(), row.kind, file)
			}
			if !strings.Contains(err.Error(), filepath.Base(file)) || !strings.Contains(err.Error(), DamagedCode) {
				t.Errorf("the message does not name the file and the code: %v", err)
			}
			if row.after {
				if de.Offset <= logHeaderBytes || de.BytesAfter <= 0 || de.RecordsAfter == 0 || !strings.Contains(err.Error(), fmt.Sprintf("offset %d", de.Offset)) {
					t.Errorf("offset %d, %d bytes and %d records after it: want the damage's place and what follows", de.Offset, de.BytesAfter, de.RecordsAfter)
				}
			}
			// Check finds the same, and the directory is as it was:
			// refusing wrote nothing.
			ds, err := Check(dir)
			if err != nil || len(ds) == 0 || ds[0].File != de.File || ds[0].Kind != de.Kind {
				t.Errorf("Check: %v, %v; want the damage Open found", ds, err)
			}
		})
	}
}

// What a crash leaves is not damage: the log ends in a record half
// written, or a transaction without its end, followed by zeros. Badger
// drops that transaction, which was never acknowledged.
func TestTornTailOpensSilently(t *testing.T) {
	rows := []struct {
		name string
		tear func(t *testing.T, mem string)
		lost int // keys lost from the end
	}{
		{"nothing torn", func(*testing.T, string) {}, 0},
		{"the last record half written", func(t *testing.T, mem string) {
			end := dataEnd(t, mem)
			zero(t, mem, end-6, 6)
		}, 1},
		{"the last transaction without its end", func(t *testing.T, mem string) {
			end := dataEnd(t, mem)
			// The end marker is the last record: "!badger!txn" and its
			// version, the commit version in decimal, header and checksum.
			zero(t, mem, end-40, 40)
		}, 1},
		{"the header of a next record half written", func(t *testing.T, mem string) {
			end := dataEnd(t, mem)
			f, err := os.OpenFile(mem, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte{0x40, 0, 0x8a}, end); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		}, 0},
	}
	crashed := buildFixture(t, true)
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, crashed, dir)
			row.tear(t, only(t, dir, ".mem"))
			db, err := Open(Options{Dir: dir, ReserveBytes: -1})
			if err != nil {
				t.Fatalf("Open after a crash: %v", err)
			}
			defer func() {
				if err := db.Close(); err != nil {
					t.Error(err)
				}
			}()
			got := dump(t, db)
			for i := range fixtureKeys {
				v, ok := got[fixtureKey(i)]
				switch {
				case i < fixtureKeys-row.lost && (!ok || v != fixtureValue(i)):
					t.Fatalf("key %d: %q, %v after the crash; want its value", i, v, ok)
				case i >= fixtureKeys-row.lost && ok:
					t.Fatalf("key %d survived a torn tail", i)
				}
			}
		})
	}
}

// A table damaged while the database is open: Badger's iterators would end
// at the bad block without an error, so a snapshot (a backup, a Raft
// snapshot) verifies the tables first and fails instead of streaming a
// state that silently lacks keys.
func TestSnapshotRefusesATableDamagedWhileOpen(t *testing.T) {
	dir := buildFixture(t, false)
	db, err := Open(Options{Dir: dir, ReserveBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	}()
	if err := db.VerifyTables(); err != nil {
		t.Fatalf("VerifyTables of a sound database: %v", err)
	}
	sst := only(t, dir, ".sst")
	flip(t, sst, fileSize(sst)/3, 4)
	_, err = db.WriteSnapshot(io.Discard)
	var de *DamagedError
	if !errors.As(err, &de) || de.File != sst || de.Kind != DamageTableCorrupt {
		t.Fatalf("WriteSnapshot over a damaged table: %v, want a DamagedError naming it", err)
	}
}

// A panic inside Badger's read path becomes an ErrRead naming what was
// read; a panic in the caller's own callback is not Badger's and goes on.
func TestRecoverRead(t *testing.T) {
	read := func(inCaller bool) (err error) {
		defer recoverRead(&err, "reading key", []byte("k1"), &inCaller)
		panic("runtime error: slice bounds out of range [-3:]\ngoroutine dump")
	}
	err := read(false)
	if !errors.Is(err, ErrRead) || !strings.Contains(err.Error(), `"k1"`) ||
		!strings.Contains(err.Error(), "badger panicked: runtime error: slice bounds out of range [-3:]") || strings.Contains(err.Error(), "goroutine") {
		t.Fatalf("a panic while reading: %v", err)
	}
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("a panic of the caller's callback was swallowed")
		}
	}()
	_ = read(true)
}
