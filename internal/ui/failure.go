package ui

import (
	"encoding/json"
	"strings"

	"github.com/heddlewf/heddle/sdk/converter"
)

// failureView is a failure as a page shows it: each error of its chain on
// a line of its own, and a panic's stack trace as the lines it is, rather
// than one JSON string with its newlines escaped.
type failureView struct {
	// Chain holds the failure and its causes, outermost first.
	Chain []failureNode
}

// failureNode is one error of a failure's chain.
type failureNode struct {
	Message, Type, Kind string
	NonRetryable        bool
	// Stack is a panic's stack trace.
	Stack string
}

// maxFailureChain bounds the causes a page shows of one failure.
const maxFailureChain = 16

// viewFailure reads a failure payload as the SDK (converter.Failure) or
// the engine (engine.Failure) writes it; nil when b is not one. b is a
// payload the page read whole, at most the bytes it reads of one.
func viewFailure(b []byte) *failureView {
	if len(b) == 0 || b[0] != '{' {
		return nil
	}
	var f converter.Failure
	if json.Unmarshal(b, &f) != nil || f.Message == "" && f.Type == "" {
		return nil
	}
	v := &failureView{}
	for n := &f; n != nil && len(v.Chain) < maxFailureChain; n = n.Cause {
		v.Chain = append(v.Chain, failureNode{Message: n.Message, Type: n.Type, Kind: n.Kind, NonRetryable: n.NonRetryable,
			Stack: strings.TrimRight(n.StackTrace, "\n")})
	}
	return v
}

// HasStack reports whether an error of the chain carries a stack trace.
func (v *failureView) HasStack() bool {
	for _, n := range v.Chain {
		if n.Stack != "" {
			return true
		}
	}
	return false
}
