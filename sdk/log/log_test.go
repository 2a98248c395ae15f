package log_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/heddlewf/heddle/sdk/log"
)

// recorder is a Logger that is not slog's: it keeps one line per entry.
type recorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *recorder) add(level, msg string, kv []any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, fmt.Sprint(level, " ", msg, " ", kv))
}
func (r *recorder) Debug(msg string, kv ...any) { r.add("DEBUG", msg, kv) }
func (r *recorder) Info(msg string, kv ...any)  { r.add("INFO", msg, kv) }
func (r *recorder) Warn(msg string, kv ...any)  { r.add("WARN", msg, kv) }
func (r *recorder) Error(msg string, kv ...any) { r.add("ERROR", msg, kv) }

// A *slog.Logger is a log.Logger, so one can be given where Temporal's
// type is asked for (client.Options.Logger, testsuite's SetLogger).
var _ log.Logger = (*slog.Logger)(nil)

func TestWithPrefixesKeyvals(t *testing.T) {
	rec := &recorder{}
	l := log.With(rec, "a", 1)
	l.Info("one", "b", 2)
	log.With(l, "c", 3).Warn("two")
	l.Error("three") // the child's keyvals did not leak into the parent
	want := []string{"INFO one [a 1 b 2]", "WARN two [a 1 c 3]", "ERROR three [a 1]"}
	if fmt.Sprint(rec.lines) != fmt.Sprint(want) {
		t.Fatalf("lines = %q, want %q", rec.lines, want)
	}
}

func TestWithUsesTheLoggersOwnWith(t *testing.T) {
	var buf bytes.Buffer
	s := log.NewStructuredLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	l := log.With(s, "wf", "w1")
	if _, ok := l.(*log.StructuredLogger); !ok {
		t.Fatalf("With of a StructuredLogger is a %T, want its own With", l)
	}
	l.Debug("hello", "n", 7)
	if got := buf.String(); !strings.Contains(got, "level=DEBUG msg=hello wf=w1 n=7") {
		t.Fatalf("output %q", got)
	}
}

func TestStructuredLoggerReportsItsCaller(t *testing.T) {
	var buf bytes.Buffer
	s := log.NewStructuredLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{AddSource: true})))
	s.Info("here")
	if got := buf.String(); !strings.Contains(got, "log_test.go") {
		t.Fatalf("source is not this file: %q", got)
	}
	buf.Reset()
	s.Debug("filtered") // below the handler's Info level
	if buf.Len() != 0 {
		t.Fatalf("a Debug entry passed an Info handler: %q", buf.String())
	}
}

func TestSlogOfAForeignLogger(t *testing.T) {
	rec := &recorder{}
	sl := log.Slog(rec)
	sl.With("run", "7").WithGroup("act").Info("started", "try", 2, slog.Group("g", "x", 1))
	sl.Debug("d")
	sl.Warn("w")
	sl.Error("e", "err", "boom")
	want := []string{"INFO started [run 7 act.try 2 act.g.x 1]", "DEBUG d []", "WARN w []", "ERROR e [err boom]"}
	if fmt.Sprint(rec.lines) != fmt.Sprint(want) {
		t.Fatalf("lines = %q, want %q", rec.lines, want)
	}
}

func TestSlogKeepsSlogLoggers(t *testing.T) {
	base := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	if log.Slog(base) != base {
		t.Fatal("a *slog.Logger was wrapped")
	}
	if log.Slog(log.NewStructuredLogger(base)) != base {
		t.Fatal("a StructuredLogger's slog logger was not unwrapped")
	}
	if log.Slog(nil) != nil {
		t.Fatal("Slog(nil) is not nil")
	}
}

func TestNopLoggerAndSkip(t *testing.T) {
	n := log.NewNopLogger()
	n.Info("x", "k", "v") // discards, does not panic
	rec := &recorder{}
	if log.Skip(rec, 2) != log.Logger(rec) {
		t.Fatal("Skip of a logger without WithCallerSkip is not the logger")
	}
	var buf bytes.Buffer
	s := log.NewStructuredLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{AddSource: true})))
	wrap := func(msg string) { log.Skip(s, 1).Info(msg) }
	wrap("skipped")
	if !strings.Contains(buf.String(), "log_test.go") {
		t.Fatalf("skipped caller not in this file: %q", buf.String())
	}
}

// callerLogger reports the file and line of its caller, skipping more
// frames when WithCallerSkip asks, as a zap adapter does.
type callerLogger struct {
	skip  int
	lines *[]string
}

func (c callerLogger) add(msg string) {
	_, file, line, _ := runtime.Caller(2 + c.skip) // past add and Info
	*c.lines = append(*c.lines, fmt.Sprintf("%s:%d %s", filepath.Base(file), line, msg))
}
func (c callerLogger) Debug(msg string, _ ...any) { c.add(msg) }
func (c callerLogger) Info(msg string, _ ...any)  { c.add(msg) }
func (c callerLogger) Warn(msg string, _ ...any)  { c.add(msg) }
func (c callerLogger) Error(msg string, _ ...any) { c.add(msg) }
func (c callerLogger) WithCallerSkip(depth int) log.Logger {
	return callerLogger{skip: c.skip + depth, lines: c.lines}
}

// A foreign Logger that reports its caller, written to through Slog (as
// workflow and activity loggers write to client.Options.Logger), reports
// the line that logged, not heddle's handler.
func TestSlogOfACallerReportingLoggerReportsTheLineThatLogged(t *testing.T) {
	var lines []string
	rec := callerLogger{lines: &lines}
	_, _, here, _ := runtime.Caller(0)
	log.Slog(rec).Info("through slog")                                // here+1
	log.NewStructuredLogger(log.Slog(rec)).Warn("through structured") // here+2
	log.Slog(rec).With("k", 1).Error("through a child")               // here+3
	want := []string{
		fmt.Sprintf("log_test.go:%d through slog", here+1),
		fmt.Sprintf("log_test.go:%d through structured", here+2),
		fmt.Sprintf("log_test.go:%d through a child", here+3),
	}
	if fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Fatalf("lines = %q, want %q", lines, want)
	}
}
