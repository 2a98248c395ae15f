package main

// This file is the printer every command writes its text through. A CLI
// whose output could not be written (a closed pipe, a full disk) must not
// exit 0 as if it had said everything; checking each of the dozens of
// prints one by one would bury what they print, so a printer remembers
// the first write that failed and the command checks once, at the end.

import (
	"fmt"
	"io"
	"sync"
)

// printer writes to w and remembers the first error a write returned.
// After that error it writes nothing more, so that the output stops where
// it broke rather than going on with holes. It is an io.Writer itself
// (its Write returns the remembered error), and safe for concurrent use:
// a server's goroutines print on the same stderr, and each print is one
// write, so lines stay whole.
type printer struct {
	mu  sync.Mutex
	w   io.Writer
	bad error // the first failed write's error
}

func newPrinter(w io.Writer) *printer { return &printer{w: w} }

// Write writes p unless an earlier write failed, in which case it returns
// that failure.
func (p *printer) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bad != nil {
		return 0, p.bad
	}
	n, err := p.w.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		p.bad = err
	}
	return n, err
}

// printf formats and writes; a failure is kept for err. It formats before
// writing so that each call is one Write.
func (p *printer) printf(format string, a ...any) {
	_, _ = p.Write(fmt.Appendf(nil, format, a...)) // remembered in p.bad
}

// println writes its operands as fmt.Println does.
func (p *printer) println(a ...any) {
	_, _ = p.Write(fmt.Appendln(nil, a...)) // remembered in p.bad
}

// err is the first write's failure, or nil when everything was written.
func (p *printer) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bad
}

// unwrapPrinter returns the writer a printer writes to, or w itself, for
// the checks that need the real file (is it a terminal?).
func unwrapPrinter(w io.Writer) io.Writer {
	for {
		p, ok := w.(*printer)
		if !ok {
			return w
		}
		w = p.w
	}
}
