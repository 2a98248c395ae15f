package machine

import (
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// TestApplyTableCoversKinds checks that the apply table has an entry for
// every kind of the command table, and none for a number no command has.
func TestApplyTableCoversKinds(t *testing.T) {
	known := map[engine.CommandKind]bool{}
	for _, k := range engine.CommandKinds() {
		known[k] = true
		if int(k) >= len(applyTable) || applyTable[k] == nil {
			t.Errorf("the apply table has no entry for %s", k)
		}
	}
	for k, f := range applyTable {
		if f != nil && !known[engine.CommandKind(k)] {
			t.Errorf("the apply table has an entry for kind %d, which the command table lacks", k)
		}
	}
}
