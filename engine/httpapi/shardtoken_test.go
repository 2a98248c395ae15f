package httpapi

import (
	"errors"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// FuzzShardPageToken: a sharded cluster's page token is outside text (a
// URL parameter). Any string is either refused as an invalid command or
// read as a shard of the cluster and a shard's token that writes back to
// the same string.
func FuzzShardPageToken(f *testing.F) {
	for _, s := range []string{"", "0.", "3.AQEAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "1~abc", "9.", "01.", "x.", "0~", "-1.", "12345."} {
		f.Add(s, 4)
	}
	f.Fuzz(func(t *testing.T, tok string, count int) {
		if count < 1 || count > engine.MaxShards {
			return
		}
		k, inner, back, err := parseShardPageToken(tok, count)
		if err != nil {
			if !errors.Is(err, engine.ErrInvalidCommand) {
				t.Fatalf("%q: %v, not an invalid command", tok, err)
			}
			return
		}
		if tok == "" {
			return
		}
		if k < 0 || k >= count {
			t.Fatalf("%q: shard %d of %d", tok, k, count)
		}
		if got := shardPageToken(k, inner, back); got != tok {
			t.Fatalf("%q read as (%d, %q, %v), which writes %q", tok, k, inner, back, got)
		}
	})
}
