package engine

import "testing"

// TestCommandTable checks the one table of command kinds: every entry
// makes a command of its own kind and a result, under a name of its own.
func TestCommandTable(t *testing.T) {
	kinds := CommandKinds()
	if len(kinds) != 63 {
		t.Fatalf("%d command kinds, want 63", len(kinds))
	}
	names := map[string]CommandKind{}
	for _, k := range kinds {
		c, ok := NewCommand(k)
		if !ok || c.Kind() != k {
			t.Errorf("NewCommand(%d) = %T, %v: not a command of its kind", k, c, ok)
		}
		if NewResult(k) == nil {
			t.Errorf("NewResult(%s) = nil", k)
		}
		if other, dup := names[k.String()]; dup {
			t.Errorf("kinds %d and %d are both named %q", other, k, k)
		}
		names[k.String()] = k
	}
	for _, k := range []CommandKind{0, 38, 39, 48, 59, 66, 255} {
		if c, ok := NewCommand(k); ok || c != nil || NewResult(k) != nil {
			t.Errorf("kind %d, which no command has, gives a command or a result", k)
		}
		if got, want := k.String(), "CommandKind("; len(got) < len(want) || got[:len(want)] != want {
			t.Errorf("CommandKind(%d).String() = %q", k, got)
		}
	}
}
