package storage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/ristretto/v2/z"
)

// Badger trusts its files: it replays a damaged write-ahead log up to the
// damage and truncates the rest away, starts an empty MANIFEST when it is
// missing and then deletes every table as unlisted, skips a table whose
// checksum fails (when asked to check at all), and panics, in goroutines no
// caller can recover, on a table cut short. So Open runs its own checks on
// the files first, reading them without Badger's goroutines, and refuses a
// damaged directory with a DamagedError naming what it found.

// manifestName is the file in which Badger lists its tables.
const manifestName = badger.ManifestFilename

// Check runs the integrity checks Open runs before it hands a directory to
// Badger, and returns every damaged file found, nil when there is none.
// It reads every table and log once. The directory must not be open: Check
// takes the lock Badger takes, and fails when another database holds it.
func Check(dir string) ([]*DamagedError, error) {
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	insp, err := inspect(dir)
	if err != nil {
		return nil, err
	}
	return insp.damages, nil
}

// VerifyTables verifies the checksums of every table the open database
// reads, as Open does before it opens, and returns a *DamagedError for the
// first that fails. Tables are immutable once written, so this runs beside
// reads and writes; one that a compaction removes meanwhile is skipped. It
// reads every table once. An in-memory database has none. A keyspace
// verifies only the tables that may hold its keys.
func (db *DB) VerifyTables() error {
	if db.opts.InMemory {
		return nil
	}
	end := PrefixEnd(db.ks)
	for _, ti := range db.bdb.Tables() {
		// A table's bounds carry Badger's version suffix, which does not
		// move them past a prefix's bounds.
		if db.ks != nil && (bytes.Compare(ti.Right, db.ks) < 0 || end != nil && bytes.Compare(ti.Left, end) >= 0) {
			continue
		}
		path := table.NewFilename(ti.ID, db.opts.Dir)
		err := verifyTable(path, options.None)
		switch {
		case err == nil || errors.Is(err, os.ErrNotExist):
		default:
			return tableDamage(path, err)
		}
	}
	return nil
}

// inspection is what inspect found in a data directory.
type inspection struct {
	damages []*DamagedError
	// logs are the scans of the .mem and .vlog files, by file name.
	logs map[string]logScan
	// tables are the .sst files Badger would open (all of them when
	// MANIFEST is missing), by file name, with the damage of each (nil: sound).
	tables map[string]*DamagedError
	// replayBytes is how many bytes of write-ahead records Badger will
	// replay at open and flush into new tables.
	replayBytes int64
	// memTableFloor is the memtable size the memtables' logs were written
	// with (a log is twice its memtable), the largest of them: a memtable
	// replayed into a smaller one overflows it, and Badger then exits the
	// process.
	memTableFloor int64
}

// inspect checks the files of dir, which exists or not (a new database).
func inspect(dir string) (*inspection, error) {
	insp := &inspection{logs: map[string]logScan{}, tables: map[string]*DamagedError{}}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return insp, nil
	}
	if err != nil {
		return nil, fmt.Errorf("storage: checking %s: %w", dir, err)
	}
	var hasManifest bool
	var ssts, logs []string
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		switch name := e.Name(); {
		case name == manifestName:
			hasManifest = true
		case strings.HasSuffix(name, ".sst"):
			ssts = append(ssts, name)
		case strings.HasSuffix(name, ".mem") || strings.HasSuffix(name, ".vlog"):
			logs = append(logs, name)
		}
	}
	add := func(d *DamagedError) { insp.damages = append(insp.damages, d) }

	var listed map[uint64]badger.TableManifest // nil: no readable MANIFEST
	mpath := filepath.Join(dir, manifestName)
	switch {
	case !hasManifest && len(ssts)+len(logs) > 0:
		add(&DamagedError{File: mpath, Kind: DamageManifestMissing, Offset: -1,
			Reason: fmt.Sprintf("MANIFEST is missing beside %s and %s (Badger would start an empty one and delete every table)",
				count(len(ssts), "table"), count(len(logs), "log"))})
	case hasManifest:
		m, err := readManifest(mpath)
		if err != nil {
			add(&DamagedError{File: mpath, Kind: DamageManifestCorrupt, Offset: -1, Reason: "MANIFEST does not read back: " + oneLine(err.Error())})
		} else {
			listed = m.Tables
		}
	}

	present := map[uint64]bool{}
	for _, name := range ssts {
		id, ok := table.ParseFileID(name)
		if !ok {
			continue
		}
		present[id] = true
		tm, isListed := listed[id]
		if listed != nil && !isListed {
			continue // a table a crash left unlisted; Badger deletes it
		}
		path := filepath.Join(dir, name)
		compression := options.None
		if isListed {
			compression = tm.Compression
		}
		var d *DamagedError
		if err := verifyTable(path, compression); err != nil {
			d = tableDamage(path, err)
			add(d)
		}
		insp.tables[name] = d
	}
	for id := range listed {
		if !present[id] {
			add(&DamagedError{File: table.NewFilename(id, dir), Kind: DamageTableMissing, Offset: -1,
				Reason: fmt.Sprintf("MANIFEST lists table %d, whose file is gone", id)})
		}
	}

	for _, name := range logs {
		path := filepath.Join(dir, name)
		var s logScan
		if err := withMapped(path, func(data []byte) { s = scanLog(path, data) }); err != nil {
			return nil, fmt.Errorf("storage: checking %s: %w", path, err)
		}
		insp.logs[name] = s
		if s.damage != nil {
			add(s.damage)
		}
		if strings.HasSuffix(name, ".mem") {
			insp.replayBytes += max(0, s.validEnd-logHeaderBytes)
			if fi, err := os.Stat(path); err == nil {
				insp.memTableFloor = max(insp.memTableFloor, fi.Size()/2)
			}
		}
	}
	sort.Slice(insp.damages, func(i, j int) bool { return insp.damages[i].File < insp.damages[j].File })
	return insp, nil
}

// tableDamage reports the table at path failing verifyTable with err.
func tableDamage(path string, err error) *DamagedError {
	// Badger's message names the table again, after a preamble.
	msg := oneLine(err.Error())
	msg = strings.TrimPrefix(msg, "failed to verify checksum err: ")
	msg = strings.ReplaceAll(msg, "checksum validation failed for table: "+path+", ", "")
	return &DamagedError{File: path, Kind: DamageTableCorrupt, Offset: -1, BytesAfter: fileSize(path),
		Reason: "the table fails its checks: " + msg}
}

// readManifest replays MANIFEST the way Badger does, without truncating a
// torn tail (Badger does that at open) and without panicking.
func readManifest(path string) (m badger.Manifest, err error) {
	f, err := os.Open(path)
	if err != nil {
		return m, err
	}
	defer func() { _ = f.Close() }() // read-only: closing cannot lose anything
	defer recoverAs(&err, "reading MANIFEST")
	m, _, err = badger.ReplayManifestFile(f, 0, badger.DefaultOptions("").WithLogger(nil))
	return m, err
}

// verifyTable opens the table at path the way Badger does, verifying the
// checksum of its index and of every block, and closes it again. A table
// cut short makes Badger's reader panic; the panic becomes the error.
func verifyTable(path string, compression options.CompressionType) (err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Size() == 0 {
		return errors.New("the file is empty")
	}
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer func() {
		// OpenTable closes the file on some failures and not on others;
		// a closed file must not be unmapped twice.
		if _, serr := mf.Fd.Stat(); !errors.Is(serr, os.ErrClosed) {
			_ = mf.Close(-1) // read-only: closing cannot lose anything
		}
	}()
	defer func() {
		if r := recover(); r != nil {
			// Badger's reader panics when the footer's lengths point
			// outside the file; its message is a dump of what it read.
			err = errors.New("its footer points outside the file: the table was cut short or its end damaged")
		}
	}()
	_, err = table.OpenTable(mf, table.Options{
		ChkMode:     options.OnTableRead,
		Compression: compression,
		BlockSize:   4 << 10, // Badger's default; only compressed tables read it
	})
	return err
}

// withMapped maps the file at path read-only for fn.
func withMapped(path string, fn func(data []byte)) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Size() == 0 {
		fn(nil)
		return nil
	}
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	fn(mf.Data)
	return mf.Close(-1)
}

// recoverAs turns a panic into *err, naming what was being done. Deferred
// around calls into Badger that panic on damaged bytes.
func recoverAs(err *error, what string) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%s panicked: %v", what, firstLine(fmt.Sprint(r)))
	}
}

// firstLine keeps a panic message to its first non-empty line: Badger's
// panics on damaged tables carry dumps of the bytes it read.
func firstLine(s string) string {
	for line := range strings.SplitSeq(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return s
}

// oneLine joins the lines of a multi-line error message.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}

// count spells n things: "1 table", "2 tables".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}
