package replay

import (
	"fmt"
	"strings"
	"testing"
)

// kindOptions are options of the command kind they are.
type kindOptions CommandKind

func (k kindOptions) CommandKind() CommandKind { return CommandKind(k) }

// A command keeps the options it was issued with, for the worker; options
// of another kind of command are refused at once, where the SDK issued
// them, instead of reaching a worker that would carry the command out
// without them.
func TestIssueKeepsOnlyOptionsOfItsKind(t *testing.T) {
	x := NewExecution(1, nil)
	if cmd := x.Issue(KindActivity, "A", nil, kindOptions(KindActivity), 0, nil); cmd.Options != kindOptions(KindActivity) {
		t.Fatalf("the command keeps options %v", cmd.Options)
	}
	if cmd := x.Issue(KindTimer, "", nil, nil, 5, nil); cmd.Options != nil {
		t.Fatalf("a timer without options has %v", cmd.Options)
	}
	defer func() {
		msg := fmt.Sprint(recover())
		if !strings.Contains(msg, "replay.kindOptions are options of activity commands, not of child workflow commands") {
			t.Fatalf("Issue of a child with an activity's options: %q", msg)
		}
	}()
	x.Issue(KindChild, "C", nil, kindOptions(KindActivity), 0, nil)
}
