package main

// These tests compare what the binary prints with files in testdata/: the
// help of every command (testdata/help/) and the -o json and -o jsonl
// output of the workflow commands (testdata/output/). Run
//
//	go test ./cmd/heddle -run Golden -update
//
// to rewrite the files from the current output, then read the diff. What
// depends on the machine or the moment (times) is replaced by a
// placeholder before the comparison, so the files hold none of it.

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata/ from the current output")

// golden compares got with the file testdata/name, or writes the file
// with -update.
func golden(t *testing.T, name string, got string) {
	t.Helper()
	path := filepath.Join("testdata", filepath.FromSlash(name))
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/heddle -run Golden -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the output (-want +got):\n%s", path, lineDiff(string(want), got))
	}
}

// lineDiff lists the lines that differ between want and got, by position:
// enough to see what changed in a help text or a JSON document.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n-%s\n+%s\n", i+1, wl, gl)
		}
	}
	return b.String()
}

// commandPaths returns the path of every command a user can run, the root
// first, hidden ones left out ("heddle help" lists none of them either).
func commandPaths() [][]string {
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				walk(sub, append(append([]string(nil), path...), sub.Name()))
			}
		}
	}
	walk(newRootCommand(io.Discard, io.Discard), nil)
	return paths
}

func goldenName(path []string) string {
	return strings.Join(append([]string{"heddle"}, path...), "_") + ".golden"
}

// A long flag spelled with one dash ("-dir") in help, which the old help
// printed next to usage lines that said "--dir".
var singleDashLong = regexp.MustCompile(`(^|[\s\[(])-[a-z][a-z-]+`)

func TestHelpGolden(t *testing.T) {
	t.Setenv("HEDDLE_ADDR", "")
	t.Setenv("HEDDLE_TOKEN", "")
	paths := commandPaths()
	files := map[string]bool{}
	for _, path := range paths {
		name := goldenName(path)
		files[name] = true
		var stdout, stderr bytes.Buffer
		if code := run(append(append([]string(nil), path...), "--help"), &stdout, &stderr); code != 0 || stderr.Len() > 0 {
			t.Errorf("heddle %v --help: exit %d, stderr %q", path, code, stderr.String())
		}
		help := stdout.String()
		golden(t, "help/"+name, help)

		// One style: cobra's sections, GNU spelling, each default once.
		if !strings.Contains(help, "\nUsage:\n  heddle") || strings.Contains(help, "Usage of") {
			t.Errorf("heddle %v --help has not the one usage section:\n%s", path, help)
		}
		for _, line := range strings.Split(help, "\n") {
			if strings.Count(line, "(default") > 1 {
				t.Errorf("heddle %v --help prints a default twice: %q", path, line)
			}
			if m := singleDashLong.FindString(line); m != "" {
				t.Errorf("heddle %v --help spells a long flag with one dash (%q): %q", path, m, line)
			}
			if strings.Contains(line, "7233") {
				t.Errorf("heddle %v --help names Temporal's port 7233: %q", path, line)
			}
		}

		// "heddle help X" is "heddle X --help".
		var viaHelp bytes.Buffer
		if code := run(append([]string{"help"}, path...), &viaHelp, io.Discard); code != 0 || viaHelp.String() != help {
			t.Errorf("heddle help %v: exit %d, and its text differs from --help:\n%s", path, code, lineDiff(help, viaHelp.String()))
		}
	}
	if *updateGolden {
		return
	}
	// A golden file no command prints is stale.
	entries, err := os.ReadDir(filepath.Join("testdata", "help"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !files[e.Name()] {
			t.Errorf("testdata/help/%s belongs to no command; delete it", e.Name())
		}
	}
	if len(paths) < 25 {
		t.Errorf("only %d commands found: %v", len(paths), paths)
	}
}
