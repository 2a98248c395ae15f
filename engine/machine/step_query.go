package machine

import (
	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

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
