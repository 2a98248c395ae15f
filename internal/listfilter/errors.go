package listfilter

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/heddlewf/heddle/engine"
)

// Sentinel errors of this package, matched with errors.Is.
var (
	// ErrSyntax: a query is not in the language (a *SyntaxError says where).
	ErrSyntax = errors.New("listfilter: invalid query")
)

// SyntaxCode is the stable code of SyntaxError.
const SyntaxCode = "HDL-FILTER-0001"

// SyntaxError says where a query breaks the language and why. Col counts
// characters (runes) from 1; Token is the token found there ("" at the
// end of the query).
type SyntaxError struct {
	Query string
	Col   int
	Token string
	Msg   string
}

// maxQuoted bounds the query an error message repeats.
const maxQuoted = 200

func (e *SyntaxError) Error() string {
	at := "at the end"
	if e.Token != "" {
		at = fmt.Sprintf("at %q", e.Token)
	}
	if utf8.RuneCountInString(e.Query) <= maxQuoted {
		return fmt.Sprintf("query %q, column %d, %s: %s [%s]", e.Query, e.Col, at, e.Msg, SyntaxCode)
	}
	return fmt.Sprintf("query, column %d, %s: %s [%s]", e.Col, at, e.Msg, SyntaxCode)
}

// Unwrap makes errors.Is(err, ErrSyntax) and errors.Is(err,
// engine.ErrInvalidCommand) true: a bad filter is a caller's mistake.
func (e *SyntaxError) Unwrap() []error { return []error{ErrSyntax, engine.ErrInvalidCommand} }

// Code returns SyntaxCode.
func (e *SyntaxError) Code() string { return SyntaxCode }
