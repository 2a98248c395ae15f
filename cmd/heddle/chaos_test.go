package main

import (
	"bytes"
	"strings"
	"testing"
)

// heddle chaos refuses a shard count it cannot run before it builds or
// starts anything.
func TestChaosShardsFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--shards", "-1"}, "--shards -1"},
		{[]string{"--shards", "5000"}, "--shards 5000"},
		{[]string{"--shards", "2", "--embedded"}, "the embedded one is one shard"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(append([]string{"chaos", "--seed", "1"}, c.args...), &stdout, &stderr); code != 2 {
			t.Errorf("heddle chaos %v: exit %d, want 2", c.args, code)
		}
		if !strings.Contains(stderr.String(), c.want) {
			t.Errorf("heddle chaos %v: stderr does not say %q:\n%s", c.args, c.want, stderr.String())
		}
	}
}
