package machine

import (
	"errors"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

func TestPageTokenRoundTrip(t *testing.T) {
	for _, tok := range []pageToken{
		{order: engine.ListStartDesc, digest: 1, pos: listPos{id: 7}},
		{order: engine.ListStartAsc, back: true, inclusive: true, digest: 1 << 63, pos: listPos{id: 1<<64 - 1}},
		{order: engine.ListCloseDesc, back: true, digest: 9, pos: listPos{seg: segClosed, atMS: 1_800_000_000_000, id: 3}},
		{order: engine.ListCloseAsc, inclusive: true, pos: listPos{seg: segOpen, id: 4}},
	} {
		s := tok.encode()
		got, err := decodePageToken(s)
		if err != nil || got != tok {
			t.Errorf("%+v: encoded %q decodes to %+v, %v", tok, s, got, err)
		}
	}
	for _, bad := range []string{"", "x", strings.Repeat("A", 38), strings.Repeat("!", 38),
		"AQMA00000000000AA000000000000000000000",                                                       // trailing bits set: another spelling of a valid token
		pageToken{order: engine.ListStartDesc, pos: listPos{seg: segOpen, id: 1}}.encode(),             // no open segment in a start order
		pageToken{order: engine.ListStartDesc, pos: listPos{atMS: 5, id: 1}}.encode(),                  // a closing time in a start order
		pageToken{order: engine.ListCloseDesc, pos: listPos{seg: segOpen, atMS: 5, id: 1}}.encode(),    // a closing time among open runs
		pageToken{order: engine.ListCloseDesc, pos: listPos{seg: segClosed, atMS: -5, id: 1}}.encode(), // before 1970
		pageToken{order: engine.ListOrderDefault}.encode(),
		pageToken{order: 9}.encode(),
	} {
		if _, err := decodePageToken(bad); !errors.Is(err, engine.ErrInvalidCommand) {
			t.Errorf("decodePageToken(%q) = %v, want ErrInvalidCommand", bad, err)
		}
	}
}

// FuzzPageToken: a page token is outside text (a URL parameter). Decoding
// never panics, refuses all but the exact form, and what it accepts
// encodes back to itself.
func FuzzPageToken(f *testing.F) {
	f.Add(pageToken{order: engine.ListCloseDesc, back: true, digest: 9, pos: listPos{atMS: 1, id: 3}}.encode())
	f.Add(pageToken{order: engine.ListStartAsc, pos: listPos{id: 3}}.encode())
	f.Add("")
	f.Add(strings.Repeat("_", 38))
	f.Add("AQMA00000000000AA000000000000000000000")
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := decodePageToken(s)
		if err != nil {
			if !errors.Is(err, engine.ErrInvalidCommand) {
				t.Fatalf("decodePageToken(%q): %v is not ErrInvalidCommand", s, err)
			}
			return
		}
		if got := tok.encode(); got != s {
			t.Fatalf("decodePageToken(%q) = %+v, which encodes as %q", s, tok, got)
		}
	})
}
