package machine

import (
	"errors"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// The stored forms of the contract's records: each is a storage record
// (type byte, version byte, msgpack) whose version is the one below. The
// versions and the msgpack tags of the record types are stored: changing
// either needs a migration.

// EncodeSchedule returns the stored form of s.
func EncodeSchedule(s *engine.Schedule) []byte {
	return storage.MustEncode(storage.KindSchedule, scheduleVersion, s)
}

// DecodeSchedule decodes a stored schedule record.
func DecodeSchedule(b []byte) (_ *engine.Schedule, err error) {
	defer markStorage(&err)
	s := new(engine.Schedule)
	if _, err := storage.Decode(b, storage.KindSchedule, scheduleVersion, s); err != nil {
		return nil, err
	}
	return s, nil
}

const eventVersion = 1

// EncodeEvent returns the stored form of e.
func EncodeEvent(e *engine.Event) []byte {
	return storage.MustEncode(storage.KindEvent, eventVersion, e)
}

// DecodeEvent decodes a stored event; failures are *storage.CorruptError.
func DecodeEvent(b []byte) (_ *engine.Event, err error) {
	defer markStorage(&err)
	e := new(engine.Event)
	if _, err := storage.Decode(b, storage.KindEvent, eventVersion, e); err != nil {
		return nil, err
	}
	return e, nil
}

const (
	jobVersion    = 1
	effectVersion = 1
)

// EncodeJob returns the stored form of j.
func EncodeJob(j *engine.Job) []byte { return storage.MustEncode(storage.KindJob, jobVersion, j) }

// DecodeJob decodes a stored job record.
func DecodeJob(b []byte) (_ *engine.Job, err error) {
	defer markStorage(&err)
	j := new(engine.Job)
	if _, err := storage.Decode(b, storage.KindJob, jobVersion, j); err != nil {
		return nil, err
	}
	return j, nil
}

// EncodeEffect returns the stored form of e.
func EncodeEffect(e *engine.Effect) []byte {
	return storage.MustEncode(storage.KindEffect, effectVersion, e)
}

// DecodeEffect decodes a stored effect record.
func DecodeEffect(b []byte) (_ *engine.Effect, err error) {
	defer markStorage(&err)
	e := new(engine.Effect)
	if _, err := storage.Decode(b, storage.KindEffect, effectVersion, e); err != nil {
		return nil, err
	}
	return e, nil
}

// scheduleVersion is the version byte of stored schedule records.
const scheduleVersion = 1

const (
	stepVersion     = 1
	resourceVersion = 1
)

// EncodeStepRecord returns the stored form of s.
func EncodeStepRecord(s *engine.StepRecord) []byte {
	return storage.MustEncode(storage.KindStep, stepVersion, s)
}

// DecodeStepRecord decodes a stored step record.
func DecodeStepRecord(b []byte) (_ *engine.StepRecord, err error) {
	defer markStorage(&err)
	s := new(engine.StepRecord)
	if _, err := storage.Decode(b, storage.KindStep, stepVersion, s); err != nil {
		return nil, err
	}
	return s, nil
}

// EncodeResource returns the stored form of r.
func EncodeResource(r *engine.Resource) []byte {
	return storage.MustEncode(storage.KindResource, resourceVersion, r)
}

// DecodeResource decodes a stored resource record.
func DecodeResource(b []byte) (_ *engine.Resource, err error) {
	defer markStorage(&err)
	r := new(engine.Resource)
	if _, err := storage.Decode(b, storage.KindResource, resourceVersion, r); err != nil {
		return nil, err
	}
	return r, nil
}

// readStep reads the record of step in job id from r, or nil.
func readStep(get func([]byte) ([]byte, error), id engine.JobID, step string) (*engine.StepRecord, error) {
	key := storage.StepKey(uint64(id), step)
	b, err := get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s := new(engine.StepRecord)
	if _, err := storage.DecodeAt(key, b, storage.KindStep, stepVersion, s); err != nil {
		return nil, err
	}
	return s, nil
}

// readResource reads resource id, or nil.
func readResource(get func([]byte) ([]byte, error), id string) (*engine.Resource, error) {
	key := storage.ResourceKey(id)
	b, err := get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r := new(engine.Resource)
	if _, err := storage.DecodeAt(key, b, storage.KindResource, resourceVersion, r); err != nil {
		return nil, err
	}
	return r, nil
}

const (
	reviewVersion      = 1
	reviewEventVersion = 1
)

// EncodeReview returns the stored form of t.
func EncodeReview(t *engine.Review) []byte {
	return storage.MustEncode(storage.KindReview, reviewVersion, t)
}

// DecodeReview decodes a stored task record; failures are *storage.CorruptError.
func DecodeReview(b []byte) (_ *engine.Review, err error) {
	defer markStorage(&err)
	t := new(engine.Review)
	if _, err := storage.Decode(b, storage.KindReview, reviewVersion, t); err != nil {
		return nil, err
	}
	return t, nil
}

// EncodeReviewEvent returns the stored form of e.
func EncodeReviewEvent(e *engine.ReviewEvent) []byte {
	return storage.MustEncode(storage.KindReviewEvent, reviewEventVersion, e)
}

// DecodeReviewEvent decodes a stored task event; failures are *storage.CorruptError.
func DecodeReviewEvent(b []byte) (_ *engine.ReviewEvent, err error) {
	defer markStorage(&err)
	e := new(engine.ReviewEvent)
	if _, err := storage.Decode(b, storage.KindReviewEvent, reviewEventVersion, e); err != nil {
		return nil, err
	}
	return e, nil
}

// LastJobID returns the largest run id r holds, 0 when it holds none: the
// last run started, also on a shard, whose ids carry the shard above the
// count of its runs (so the count of runs, storage.KeyNextJob, is not an
// id there).
func LastJobID(r *storage.Reader) (engine.JobID, error) {
	var last engine.JobID
	err := r.ScanReverse(storage.JobPrefix, nil, func(k []byte) (bool, error) {
		id, err := storage.ParseJobKey(k)
		if err != nil {
			return false, err
		}
		last = engine.JobID(id)
		return false, nil
	})
	return last, MarkStorageError(err)
}
