package listfilter

import (
	"errors"
	"fmt"
)

// Sentinel errors of this package, matched with errors.Is.
var (
	// ErrSyntax: a query is not in the language (a *SyntaxError says where).
	ErrSyntax = errors.New("listfilter: invalid query")
)

// SyntaxCode is the stable code of SyntaxError.
const SyntaxCode = "HDL-FILTER-0001"

// SyntaxError says where a query breaks the language and why. Col counts
// characters (runes) from 1.
type SyntaxError struct {
	Query string
	Col   int
	Msg   string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("query %q, at column %d: %s [%s]", e.Query, e.Col, e.Msg, SyntaxCode)
}

// Unwrap makes errors.Is(err, ErrSyntax) true.
func (e *SyntaxError) Unwrap() error { return ErrSyntax }

// Code returns SyntaxCode.
func (e *SyntaxError) Code() string { return SyntaxCode }
