package storage

// AppliedIndex returns the last log index whose command is in the store, or 0.
// The index is written in the same transaction as the data it covers
// (SetAppliedIndex), so after a crash it never claims more than was stored.
func AppliedIndex(r interface{ Get([]byte) ([]byte, error) }) (uint64, error) {
	return ReadU64(r, KeyAppliedIndex)
}

// SetAppliedIndex records index as applied, inside tx.
func SetAppliedIndex(tx *Tx, index uint64) { tx.Set(KeyAppliedIndex, U64(index)) }

// ReadU64 reads a numeric meta value (the applied index, a low-water mark),
// 0 when absent.
func ReadU64(r interface{ Get([]byte) ([]byte, error) }, key []byte) (uint64, error) {
	b, err := r.Get(key)
	if err == ErrNotFound {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return ParseU64(b)
}
