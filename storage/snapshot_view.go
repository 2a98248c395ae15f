package storage

import "errors"

// View runs fn over the snapshot's fixed state: what a reader of the
// snapshot finds is exactly what Stream writes.
func (s *Snapshot) View(fn func(r *Reader) error) error {
	if s.txn == nil {
		return errors.New("storage: snapshot is closed")
	}
	return fn(&Reader{txn: s.txn, ks: s.db.ks})
}
