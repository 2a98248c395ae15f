package httpapi

import (
	"errors"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// FuzzMergedPageToken: a sharded cluster's page token is outside text (a
// URL parameter). Any string is either refused as an invalid command or
// read as one state per shard of the cluster, each within its bound, that
// writes back to the same string.
func FuzzMergedPageToken(f *testing.F) {
	for _, t := range []mergedToken{{states: []string{"", "", "", ""}}, {back: true, states: []string{"AQEA", "", "x", ""}}} {
		f.Add(t.encode(), 4)
	}
	for _, s := range []string{"", "AQ", "AgA", "AQIA", "AQAFYWJj", "////", "AQCAAAAAAA"} {
		f.Add(s, 4)
	}
	f.Fuzz(func(t *testing.T, tok string, count int) {
		if count < 1 || count > engine.MaxShards {
			return
		}
		m, err := decodeMergedToken(tok, count)
		if err != nil {
			if !errors.Is(err, engine.ErrInvalidCommand) {
				t.Fatalf("%q: %v, not an invalid command", tok, err)
			}
			return
		}
		if len(m.states) != count {
			t.Fatalf("%q: %d states for %d shards", tok, len(m.states), count)
		}
		for k, s := range m.states {
			if len(s) > maxMergedStateBytes {
				t.Fatalf("%q: shard %d's state has %d bytes", tok, k, len(s))
			}
		}
		if got := m.encode(); got != tok {
			t.Fatalf("%q read as %+v, which writes %q", tok, m, got)
		}
	})
}
