package raftfsm

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heddlewf/heddle/storage"
)

// stateDir is a node's state/ directory: CURRENT names the live database
// directory (data-NNNNNN); a restore loads into the next one and renames a
// new CURRENT over the old, which is atomic, so a crash at any point leaves
// one complete database named. Directories CURRENT does not name are
// leftovers of an interrupted restore and are removed at open.
type stateDir struct {
	dir  string
	opts storage.Options // Dir is set per data directory
	gen  int

	snapshotHolds
}

// snapshotHolds counts the open snapshots of each database of a replica,
// so that one a restore replaced is let go of only once they are released.
type snapshotHolds struct {
	mu    sync.Mutex
	holds map[*storage.DB]*sync.WaitGroup // open snapshots per database
	bg    sync.WaitGroup                  // retirements in progress
	// retireErr collects what retirements failed at (guarded by mu), for
	// closeDB to report: a retirement runs in the background, with nobody
	// to tell at the time.
	retireErr error
}

func newSnapshotHolds() snapshotHolds {
	return snapshotHolds{holds: map[*storage.DB]*sync.WaitGroup{}}
}

const currentFile = "CURRENT"

func newStateDir(dir string, opts storage.Options) (*stateDir, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("raftfsm: state directory: %w", err)
	}
	s := &stateDir{dir: dir, opts: opts, snapshotHolds: newSnapshotHolds()}
	b, err := os.ReadFile(filepath.Join(dir, currentFile))
	switch {
	case os.IsNotExist(err):
		s.gen = 0
	case err != nil:
		return nil, fmt.Errorf("raftfsm: reading %s: %w", currentFile, err)
	default:
		name := strings.TrimSpace(string(b))
		gen, ok := parseDataName(name)
		if !ok {
			return nil, fmt.Errorf("%w: %s names %q, not a data directory", storage.ErrCorrupt, filepath.Join(dir, currentFile), name)
		}
		s.gen = gen
	}
	// Remove what an interrupted restore left behind.
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if gen, ok := parseDataName(e.Name()); ok && gen != s.gen {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return nil, fmt.Errorf("raftfsm: removing what an interrupted restore left: %w", err)
			}
		}
	}
	return s, nil
}

func (s *stateDir) generation() int { return s.gen }

func dataName(gen int) string { return fmt.Sprintf("data-%06d", gen) }

func parseDataName(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "data-")
	if !ok || len(rest) != 6 {
		return 0, false
	}
	gen, err := strconv.Atoi(rest)
	return gen, err == nil && gen >= 0
}

func (s *stateDir) optsFor(gen int) storage.Options {
	o := s.opts
	o.Dir = filepath.Join(s.dir, dataName(gen))
	return o
}

// open opens the live database. One that fails its integrity checks
// (storage.ErrDamaged) is moved aside and replaced by an empty one, which
// the node rebuilds from the cluster; damaged then says what was found and
// where the damaged directory went ("" when the database was sound).
func (s *stateDir) open() (db *storage.DB, damaged string, err error) {
	db, err = storage.Open(s.optsFor(s.gen))
	if !errors.Is(err, storage.ErrDamaged) {
		return db, "", err
	}
	moved, qerr := s.quarantine()
	if qerr != nil {
		return nil, "", errors.Join(err, qerr)
	}
	db, oerr := storage.Open(s.optsFor(s.gen))
	return db, fmt.Sprintf("%v; moved it to %s", err, moved), oerr
}

// quarantine moves the live data directory aside, to damaged-NNNNNN-T (the
// generation and the Unix time; kept for the operator, never read again),
// and points CURRENT at a fresh generation. A crash in between leaves
// CURRENT naming a directory that is gone, which opens empty: either way
// the node starts from an empty state, which Node.Open rebuilds.
func (s *stateDir) quarantine() (string, error) {
	live := filepath.Join(s.dir, dataName(s.gen))
	moved := filepath.Join(s.dir, fmt.Sprintf("damaged-%06d-%d", s.gen, time.Now().Unix()))
	if err := os.Rename(live, moved); err != nil {
		return "", fmt.Errorf("raftfsm: moving the damaged state aside: %w", err)
	}
	gen := s.gen + 1
	if err := os.RemoveAll(filepath.Join(s.dir, dataName(gen))); err != nil {
		return "", err
	}
	if err := s.writeCurrent(gen); err != nil {
		return "", err
	}
	s.gen = gen
	return moved, nil
}

// load fills a fresh data directory from a snapshot and makes it the live
// one. On error the fresh directory is removed and the live one is kept.
func (s *stateDir) load(r io.Reader) (*storage.DB, storage.SnapshotInfo, error) {
	gen := s.gen + 1
	opts := s.optsFor(gen)
	// A snapshot must load into an empty database, never on top of a
	// leftover one.
	if err := os.RemoveAll(opts.Dir); err != nil {
		return nil, storage.SnapshotInfo{}, fmt.Errorf("raftfsm: restore snapshot: clearing %s: %w", opts.Dir, err)
	}
	db, err := storage.Open(opts)
	if err != nil {
		return nil, storage.SnapshotInfo{}, err
	}
	fail := func(err error) (*storage.DB, storage.SnapshotInfo, error) {
		// The live directory is untouched; what is left of the fresh one
		// is removed here or, failing that, at the next start.
		err = errors.Join(err, db.Close(), os.RemoveAll(opts.Dir))
		return nil, storage.SnapshotInfo{}, fmt.Errorf("raftfsm: restore snapshot: %w", err)
	}
	info, err := db.LoadSnapshot(r)
	if err != nil {
		return fail(err)
	}
	if err := db.Sync(); err != nil {
		return fail(err)
	}
	if err := s.writeCurrent(gen); err != nil {
		return fail(err)
	}
	s.gen = gen
	return db, info, nil
}

// writeCurrent points CURRENT at gen: write a temporary file, sync it,
// rename it over CURRENT and sync the directory.
func (s *stateDir) writeCurrent(gen int) error {
	tmp := filepath.Join(s.dir, currentFile+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(dataName(gen) + "\n"); err != nil {
		return errors.Join(err, f.Close())
	}
	if err := f.Sync(); err != nil {
		return errors.Join(err, f.Close())
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(s.dir, currentFile)); err != nil {
		return err
	}
	d, err := os.Open(s.dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// hold registers an open snapshot of db; the returned func releases it. A
// retired database is let go of only after its snapshots are released.
func (s *snapshotHolds) hold(db *storage.DB) func() {
	s.mu.Lock()
	wg := s.holds[db]
	if wg == nil {
		wg = new(sync.WaitGroup)
		s.holds[db] = wg
	}
	wg.Add(1)
	s.mu.Unlock()
	var once sync.Once
	return func() { once.Do(wg.Done) }
}

// retireWith runs let on db, which a restore replaced, in the background
// once its snapshots are released. What it returns is reported by
// closeWith.
func (s *snapshotHolds) retireWith(db *storage.DB, let func(*storage.DB) error) {
	s.mu.Lock()
	wg := s.holds[db]
	delete(s.holds, db)
	s.mu.Unlock()
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		if wg != nil {
			wg.Wait()
		}
		if err := let(db); err != nil {
			s.mu.Lock()
			s.retireErr = errors.Join(s.retireErr, err)
			s.mu.Unlock()
		}
	}()
}

// closeWith waits, at shutdown, for the snapshots of the live database db
// and for the retirements in progress, and returns what retirements failed
// at.
func (s *snapshotHolds) closeWith(db *storage.DB) error {
	s.mu.Lock()
	wg := s.holds[db]
	s.mu.Unlock()
	if wg != nil {
		wg.Wait()
	}
	s.bg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.retireErr
}

// retire closes a database that a restore replaced, once its snapshots are
// released, and removes its directory.
func (s *stateDir) retire(db *storage.DB) {
	s.retireWith(db, func(db *storage.DB) error {
		dir := db.Options().Dir
		err := db.Close()
		if dir != "" {
			err = errors.Join(err, os.RemoveAll(dir))
		}
		if err != nil {
			return fmt.Errorf("raftfsm: retiring the database a restore replaced: %w", err)
		}
		return nil
	})
}

// closeDB closes the live database at shutdown, after its snapshots.
func (s *stateDir) closeDB(db *storage.DB) error {
	return errors.Join(s.closeWith(db), db.Close())
}
