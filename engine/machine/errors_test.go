package machine

import (
	"errors"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/listfilter"
	"github.com/heddlewf/heddle/storage"
)

// errStore is a store holding job 1, whose record can be damaged.
func errStore(t *testing.T) *storage.DB {
	t.Helper()
	db, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	errCommit(t, db, func(tx *storage.Tx) {
		if _, err := Apply(tx, &engine.CreateJob{Header: engine.Header{NowMS: 1000}, Type: "t", Queue: "q"}); err != nil {
			t.Fatal(err)
		}
	})
	return db
}

func errCommit(t *testing.T, db *storage.DB, fn func(tx *storage.Tx)) {
	t.Helper()
	b := db.NewBatch()
	defer b.Discard()
	tx := b.Begin()
	fn(tx)
	if err := b.Add(tx); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
}

// damage overwrites job 1's record with bytes that do not decode.
func damage(t *testing.T, db *storage.DB) {
	errCommit(t, db, func(tx *storage.Tx) { tx.Set(storage.JobKey(1), []byte{byte(storage.KindJob), 1, 0xc1}) })
}

// failingReader returns a reader whose every read fails in the database
// (its transaction is discarded): storage's ErrRead.
func failingReader(db *storage.DB) *storage.Reader {
	txn := db.Badger().NewTransaction(false)
	txn.Discard()
	return storage.NewReader(txn)
}

// wantMarked fails unless err matches both the storage error and the
// contract's sentinel it stands for.
func wantMarked(t *testing.T, where string, err, stored, sentinel error) {
	t.Helper()
	if !errors.Is(err, sentinel) || !errors.Is(err, stored) {
		t.Errorf("%s: %v, want an error matching both %v and %v", where, err, sentinel, stored)
	}
}

// TestApplyMarksStorageErrors: the storage errors Apply meets leave it
// matching the contract's sentinels, and a corrupt record's error still
// names its key.
func TestApplyMarksStorageErrors(t *testing.T) {
	db := errStore(t)
	damage(t, db)
	b := db.NewBatch()
	defer b.Discard()
	_, err := Apply(b.Begin(), &engine.Signal{Header: engine.Header{NowMS: 2000}, Target: engine.Target{Job: 1}, Name: "s"})
	wantMarked(t, "Apply over a corrupt job", err, storage.ErrCorrupt, engine.ErrCorrupt)
	var ce *storage.CorruptError
	if !errors.As(err, &ce) || string(ce.Key) != string(storage.JobKey(1)) {
		t.Errorf("Apply over a corrupt job: %v does not name the job key", err)
	}
	_, err = Apply(storage.NewTx(failingReader(db)), &engine.Signal{Header: engine.Header{NowMS: 2000}, Target: engine.Target{Job: 1}, Name: "s"})
	wantMarked(t, "Apply over a failed read", err, storage.ErrRead, engine.ErrStorageRead)
}

// TestQueriesMarkStorageErrors: so do the queries over a reader.
func TestQueriesMarkStorageErrors(t *testing.T) {
	db := errStore(t)
	_, err := ReadJob(failingReader(db), 1)
	wantMarked(t, "ReadJob over a failed read", err, storage.ErrRead, engine.ErrStorageRead)
	lq := engine.ListQuery{Limit: 10}
	f, err := listfilter.Compile(lq, time.UnixMilli(0))
	if err != nil {
		t.Fatal(err)
	}
	_, err = ListJobs(failingReader(db), lq, f)
	wantMarked(t, "ListJobs over a failed read", err, storage.ErrRead, engine.ErrStorageRead)
	damage(t, db)
	err = db.View(func(r *storage.Reader) error {
		_, err := ReadTarget(r, engine.Target{Job: 1})
		return err
	})
	wantMarked(t, "ReadTarget of a corrupt job", err, storage.ErrCorrupt, engine.ErrCorrupt)
	_, err = DecodeJob([]byte{byte(storage.KindJob), 1, 0xc1})
	wantMarked(t, "DecodeJob of garbage", err, storage.ErrCorrupt, engine.ErrCorrupt)
}

// TestVerifyMarksStorageErrors: and the problems Verify reports.
func TestVerifyMarksStorageErrors(t *testing.T) {
	db := errStore(t)
	errs := Verify(failingReader(db), 0)
	if len(errs) == 0 {
		t.Fatal("Verify over a failed read reports nothing")
	}
	wantMarked(t, "Verify over a failed read", errs[0], storage.ErrRead, engine.ErrStorageRead)
	damage(t, db)
	err := db.View(func(r *storage.Reader) error {
		for _, err := range Verify(r, 0) {
			if errors.Is(err, storage.ErrCorrupt) {
				return err
			}
		}
		return nil
	})
	wantMarked(t, "Verify of a corrupt job", err, storage.ErrCorrupt, engine.ErrCorrupt)
}

// TestMarkStorageErrorNoSpace: a full disk (which only a commit meets, so
// Apply never does) is marked as ErrNoSpace, and other errors are left
// alone.
func TestMarkStorageErrorNoSpace(t *testing.T) {
	err := MarkStorageError(&storage.NoSpaceError{Dir: "/d", Op: "write"})
	wantMarked(t, "a full disk", err, storage.ErrNoSpace, engine.ErrNoSpace)
	var nse *storage.NoSpaceError
	if !errors.As(err, &nse) || nse.Dir != "/d" {
		t.Errorf("%v lost its NoSpaceError", err)
	}
	if other := errors.New("other"); MarkStorageError(other) != other || MarkStorageError(nil) != nil {
		t.Error("MarkStorageError changed an error that is not a storage one")
	}
}
