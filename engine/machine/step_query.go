package machine

import (
	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// ReadSteps reads the activity steps of the job t names, in step order.
func ReadSteps(r *storage.Reader, t engine.Target) (_ []engine.StepInfo, err error) {
	defer markStorage(&err)
	j, err := ReadTarget(r, t)
	if err != nil {
		return nil, err
	}
	hist, _, err := ReadHistory(r, j.ID, 0, 0)
	if err != nil {
		return nil, err
	}
	recs := map[string]*engine.StepRecord{}
	err = r.Scan(storage.StepPrefix(uint64(j.ID)), nil, true, func(k, v []byte) (bool, error) {
		s := new(engine.StepRecord)
		if _, err := storage.DecodeAt(k, v, storage.KindStep, stepVersion, s); err != nil {
			return false, err
		}
		recs[s.Step] = s
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return engine.StepInfos(j, hist, recs), nil
}

// ReadResources reads every resource record from r, in id order.
func ReadResources(r *storage.Reader) (_ []*engine.Resource, err error) {
	defer markStorage(&err)
	var out []*engine.Resource
	err = r.Scan(storage.ResourcePrefix, nil, true, func(k, v []byte) (bool, error) {
		rs := new(engine.Resource)
		if _, err := storage.DecodeAt(k, v, storage.KindResource, resourceVersion, rs); err != nil {
			return false, err
		}
		out = append(out, rs)
		return true, nil
	})
	return out, err
}
