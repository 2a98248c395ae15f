package machine

import (
	"errors"
	"fmt"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// storageSentinels pairs each storage error the contract names with the
// contract's sentinel it is marked to match.
var storageSentinels = [...]struct{ storage, engine error }{
	{storage.ErrCorrupt, engine.ErrCorrupt},
	{storage.ErrRead, engine.ErrStorageRead},
	{storage.ErrNoSpace, engine.ErrNoSpace},
}

// MarkStorageError marks err, when it carries a storage error the contract
// names (a corrupt record, a failed read, a full disk), to match the
// contract's sentinel too (engine.ErrCorrupt, ErrStorageRead, ErrNoSpace),
// keeping its text and its storage error (see engine.MarkError). Every
// error leaving this package is marked so; the runtimes mark the errors of
// their own storage calls with it.
func MarkStorageError(err error) error {
	if err == nil {
		return nil
	}
	for _, s := range storageSentinels {
		if errors.Is(err, s.storage) {
			err = engine.MarkError(err, s.engine)
		}
	}
	return err
}

// markStorage marks the error *err points to (MarkStorageError); the
// exported functions defer it.
func markStorage(err *error) { *err = MarkStorageError(*err) }

func unknownJob(id engine.JobID) error { return fmt.Errorf("%w: %d", engine.ErrUnknownJob, id) }

func unknownReview(t engine.ReviewTarget) error {
	return fmt.Errorf("%w: %s", engine.ErrUnknownReview, t)
}
