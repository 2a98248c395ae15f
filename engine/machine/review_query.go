package machine

import (
	"errors"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// HasTasks reports whether queue holds a task ready for role.
func HasTasks(r *storage.Reader, role engine.TaskRole, queue string) (_ bool, err error) {
	defer markStorage(&err)
	prefix := storage.TaskWorkQueuePrefix(queue)
	if role == engine.TaskRoleReview {
		prefix = storage.TaskReviewQueuePrefix(queue)
	}
	found := false
	err = r.Scan(prefix, nil, false, func([]byte, []byte) (bool, error) { found = true; return false, nil })
	return found, err
}

// ReadTask reads one task record.
func ReadTask(r *storage.Reader, id engine.TaskID) (_ *engine.Task, err error) {
	defer markStorage(&err)
	key := storage.TaskKey(uint64(id))
	b, err := r.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, unknownTask(engine.TaskTarget{ID: id})
	}
	if err != nil {
		return nil, err
	}
	t := new(engine.Task)
	if _, err := storage.DecodeAt(key, b, storage.KindTask, taskVersion, t); err != nil {
		return nil, err
	}
	return t, nil
}

// ReadTaskTarget reads the task t names.
func ReadTaskTarget(r *storage.Reader, t engine.TaskTarget) (_ *engine.Task, err error) {
	defer markStorage(&err)
	if t.ID != 0 {
		return ReadTask(r, t.ID)
	}
	b, err := r.Get(storage.TaskPhaseKey(t.Job, t.Phase))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, unknownTask(t)
	}
	if err != nil {
		return nil, err
	}
	id, err := storage.ParseU64(b)
	if err != nil {
		return nil, err
	}
	return ReadTask(r, engine.TaskID(id))
}

// ReadTaskHistory reads the whole history of task id.
func ReadTaskHistory(r *storage.Reader, id engine.TaskID) (_ []engine.TaskEvent, err error) {
	defer markStorage(&err)
	var out []engine.TaskEvent
	err = r.Scan(storage.TaskEventPrefix(uint64(id)), nil, true, func(k, b []byte) (bool, error) {
		e := new(engine.TaskEvent)
		if _, err := storage.DecodeAt(k, b, storage.KindTaskEvent, taskEventVersion, e); err != nil {
			return false, err
		}
		out = append(out, *e)
		return true, nil
	})
	return out, err
}

// ReadJobTasks reads the tasks of job in creation order.
func ReadJobTasks(r *storage.Reader, job string) (_ []engine.Task, err error) {
	defer markStorage(&err)
	var ids []engine.TaskID
	err = r.Scan(storage.TaskJobPrefix(job), nil, false, func(k, _ []byte) (bool, error) {
		id, err := storage.LastU64(k)
		ids = append(ids, engine.TaskID(id))
		return err == nil, err
	})
	if err != nil {
		return nil, err
	}
	out := make([]engine.Task, 0, len(ids))
	for _, id := range ids {
		t, err := ReadTask(r, id)
		if err != nil {
			return nil, err
		}
		out = append(out, *t)
	}
	return out, nil
}

// ReadManifest reads the manifest of job, its running spans counted up to
// the latest command time applied.
func ReadManifest(r *storage.Reader, job string) (_ *engine.Manifest, err error) {
	defer markStorage(&err)
	ts, err := ReadJobTasks(r, job)
	if err != nil {
		return nil, err
	}
	if len(ts) == 0 {
		return nil, unknownTask(engine.TaskTarget{Job: job})
	}
	now, err := storage.ReadU64(r, storage.KeyLastNow)
	if err != nil {
		return nil, err
	}
	return engine.BuildManifest(job, ts, int64(now)), nil
}
