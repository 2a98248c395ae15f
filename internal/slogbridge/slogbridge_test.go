package slogbridge

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func newText(level slog.Level) (*slog.Logger, *bytes.Buffer) {
	var b bytes.Buffer
	h := slog.NewTextHandler(&b, &slog.HandlerOptions{Level: level, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}})
	return slog.New(h), &b
}

func TestHclogLevelsAttributesAndNames(t *testing.T) {
	l, b := newText(slog.LevelDebug)
	h := Hclog(l, "raft").With("term", 2)
	h.Trace("not shown")
	h.Debug("shown at debug", "k", "v")
	h.Named("net").Warn("a warning", "servers", hclog.Fmt("%d servers", 3), "port", hclog.Hex(255))
	h.SetLevel(hclog.Error)
	h.Warn("filtered by SetLevel")
	h.Error("an error")
	if h.IsWarn() || !h.IsError() {
		t.Errorf("IsWarn %v, IsError %v after SetLevel(Error)", h.IsWarn(), h.IsError())
	}
	h.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}).Print("[ERR] from the standard logger")
	want := []string{
		`level=DEBUG msg="shown at debug" component=raft term=2 k=v`,
		`level=WARN msg="a warning" component=raft.net term=2 servers="3 servers" port=0xff`,
		`level=ERROR msg="an error" component=raft term=2`,
		`level=ERROR msg="from the standard logger" component=raft term=2`,
	}
	got := strings.Split(strings.TrimSpace(b.String()), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("logged:\n%s\nwant:\n%s", b.String(), strings.Join(want, "\n"))
	}
}

func TestBadgerLevels(t *testing.T) {
	l, b := newText(slog.LevelInfo)
	bl := Badger(l)
	bl.Infof("housekeeping %d\n", 1)
	bl.Debugf("detail")
	bl.Warningf("a warning %s", "w")
	bl.Errorf("an error")
	want := "level=WARN msg=\"a warning w\" component=badger\nlevel=ERROR msg=\"an error\" component=badger\n"
	if b.String() != want {
		t.Fatalf("logged %q, want %q", b.String(), want)
	}
	l, b = newText(LevelTrace)
	Badger(l).Infof("housekeeping")
	Badger(l).Debugf("detail")
	if got := b.String(); !strings.Contains(got, "level=DEBUG msg=housekeeping") || !strings.Contains(got, "level=DEBUG-4 msg=detail") {
		t.Fatalf("at trace: %q", got)
	}
}
