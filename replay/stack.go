package replay

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
)

// This file answers the __stack_trace query (Temporal's): where each
// coroutine of a workflow waits, in the workflow code's own files and
// lines. A coroutine's goroutine is parked in Block while another runs or
// while the worker does, so the dispatcher asks it (through its resume
// channel) to read its own stack and hand it back; nothing of the workflow
// runs meanwhile, and a run that is never asked pays nothing.

// CoroutineStack is one coroutine's place: its name, the SDK call it
// blocks in (BlockedOn, such as "workflow.Sleep"; "" for a coroutine that
// has not run yet) and the frames of workflow code that lead there,
// innermost first.
type CoroutineStack struct {
	Name      string
	BlockedOn string
	Frames    []StackFrame
}

// StackFrame is one frame of workflow code.
type StackFrame struct {
	Function string
	File     string
	Line     int
}

// maxStackFrames bounds the frames read of one coroutine.
const maxStackFrames = 64

// Stacks returns where each coroutine of workflow code that has not ended
// waits, in the order they were started. It must be called by the goroutine that drives
// the dispatcher, while no coroutine runs (between two
// ExecuteUntilAllBlocked), as queries are.
func (d *Dispatcher) Stacks() ([]CoroutineStack, error) {
	switch {
	case d.broken != nil:
		return nil, fmt.Errorf("replay: no stack trace: %w", d.broken)
	case d.closed.Load():
		return nil, errors.New("replay: no stack trace: the dispatcher is closed")
	case d.running != nil:
		return nil, errors.New("replay: no stack trace while a coroutine runs")
	}
	var out []CoroutineStack
	for _, c := range d.coroutines {
		if c.done.Load() {
			continue
		}
		c.resume <- resumeStack
		msg := <-c.yield
		s := stackOf(c.name, msg.stack)
		if len(msg.stack) > 0 && len(s.Frames) == 0 {
			continue // the SDK's own coroutine (a cancellation's watch): no workflow code waits in it
		}
		out = append(out, s)
	}
	return out, nil
}

// StackTrace is Stacks as the text Temporal's __stack_trace query returns:
// for each coroutine a line "coroutine NAME [blocked on CALL]:", then one
// pair of lines per frame of workflow code, the function and, indented,
// its file and line.
func (d *Dispatcher) StackTrace() (string, error) {
	stacks, err := d.Stacks()
	if err != nil {
		return "", err
	}
	return FormatStacks(stacks), nil
}

// FormatStacks writes stacks as StackTrace does.
func FormatStacks(stacks []CoroutineStack) string {
	var b strings.Builder
	for i, s := range stacks {
		if i > 0 {
			b.WriteByte('\n')
		}
		state := "not yet started"
		if s.BlockedOn != "" {
			state = "blocked on " + s.BlockedOn
		}
		fmt.Fprintf(&b, "coroutine %s [%s]:\n", s.Name, state)
		for _, f := range s.Frames {
			fmt.Fprintf(&b, "%s(...)\n\t%s:%d\n", f.Function, f.File, f.Line)
		}
	}
	return b.String()
}

// callerFrames reads the calling goroutine's stack, innermost first.
func callerFrames() []runtime.Frame {
	pcs := make([]uintptr, maxStackFrames)
	n := runtime.Callers(2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	var out []runtime.Frame
	for {
		f, more := frames.Next()
		out = append(out, f)
		if !more {
			return out
		}
	}
}

// stackOf keeps the frames of workflow code of a coroutine's stack, and
// names the call it blocks in: the frame of the SDK nearest to the first
// frame of workflow code, which is the SDK's function the code called.
func stackOf(name string, frames []runtime.Frame) CoroutineStack {
	s := CoroutineStack{Name: name}
	if len(frames) == 0 {
		return s
	}
	lastSDK := ""
	for _, f := range frames {
		if inSDK(f) {
			if len(s.Frames) == 0 {
				lastSDK = f.Function
			}
			continue
		}
		s.Frames = append(s.Frames, StackFrame{Function: f.Function, File: f.File, Line: f.Line})
	}
	s.BlockedOn = shortFunction(lastSDK)
	return s
}

// inSDK reports a frame of the runtime or of heddle's SDK (its test files,
// which hold workflows, excepted), which a stack trace of workflow code
// leaves out.
func inSDK(f runtime.Frame) bool {
	if strings.HasSuffix(f.File, "_test.go") {
		return false
	}
	for _, p := range sdkPackages {
		if strings.HasPrefix(f.Function, p) {
			return true
		}
	}
	return false
}

// sdkPackages prefix the functions of the packages that run workflow code.
var sdkPackages = []string{
	"runtime.", "reflect.",
	"github.com/heddlewf/heddle/replay.",
	"github.com/heddlewf/heddle/sdk/",
	"github.com/heddlewf/heddle/internal/sdkhook.",
}

// shortFunction drops the import path from a function's name:
// "github.com/heddlewf/heddle/sdk/workflow.Sleep" is "workflow.Sleep".
func shortFunction(fn string) string {
	if i := strings.LastIndexByte(fn, '/'); i >= 0 {
		return fn[i+1:]
	}
	return fn
}
