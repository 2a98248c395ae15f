package engine

import (
	"errors"
	"fmt"
	"testing"
)

// lowerError stands for a lower layer's typed error (storage's
// *CorruptError), which wraps that layer's own sentinel.
type lowerError struct{ key string }

var errLower = errors.New("lower: corrupt record")

func (e *lowerError) Error() string { return "lower: corrupt record at " + e.key }
func (e *lowerError) Unwrap() error { return errLower }

// TestMarkError: a marked error matches the contract's sentinel and
// everything it matched before, keeps its text, and still yields the
// lower layer's typed error to errors.As.
func TestMarkError(t *testing.T) {
	inner := fmt.Errorf("reading job 3: %w", &lowerError{key: "j3"})
	m := MarkError(inner, ErrCorrupt)
	var le *lowerError
	switch {
	case !errors.Is(m, ErrCorrupt):
		t.Errorf("%v does not match ErrCorrupt", m)
	case !errors.Is(m, errLower):
		t.Errorf("%v no longer matches the lower sentinel", m)
	case !errors.As(m, &le) || le.key != "j3":
		t.Errorf("errors.As does not find the lower error in %v", m)
	case m.Error() != inner.Error():
		t.Errorf("text %q, want %q", m.Error(), inner.Error())
	case errors.Unwrap(m) != inner:
		t.Errorf("Unwrap = %v, want the marked error", errors.Unwrap(m))
	case errors.Is(m, ErrStorageRead) || errors.Is(m, ErrNoSpace):
		t.Errorf("%v matches a sentinel it was not marked with", m)
	}
	if MarkError(nil, ErrCorrupt) != nil {
		t.Errorf("MarkError(nil) is not nil")
	}
	if again := MarkError(m, ErrCorrupt); again != m {
		t.Errorf("marking a marked error again wraps it: %v", again)
	}
	both := MarkError(m, ErrStorageRead)
	if !errors.Is(both, ErrCorrupt) || !errors.Is(both, ErrStorageRead) {
		t.Errorf("%v does not match both marks", both)
	}
}

// The storage-backed sentinels are the contract's own: DecodeFailure, which
// the contract implements without storage, answers with ErrCorrupt.
func TestDecodeFailureIsErrCorrupt(t *testing.T) {
	if _, err := DecodeFailure([]byte(`{"type":`)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("DecodeFailure of a cut payload = %v, want ErrCorrupt", err)
	}
	if ErrCorrupt == ErrStorageRead || ErrCorrupt == ErrNoSpace || ErrStorageRead == ErrNoSpace {
		t.Fatal("two storage sentinels are the same error")
	}
}
