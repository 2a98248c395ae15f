package archtest

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// topLevel is what the repository's root may hold (docs/architecture.md,
// "The top level"): the design card's entries, then the three folders every
// change may add to, metrics (public because the configurations of the
// engine, a Raft node, a worker and the HTTP server take a *metrics.Metrics),
// and the project's own files.
var topLevel = []string{
	// the card
	"go.mod", "go.sum", "engine", "replay", "raftfsm", "storage", "sdk", "cmd", "bench", "chaos", "README.md",
	// beside it
	"docs", "examples", "internal", "metrics",
	// the project's files
	"CHANGELOG.md", "CONTRIBUTING.md", "LICENSE", ".ci", ".golangci.yml", ".gitignore",
}

// TestTopLevelMatchesCard fails for every entry of the repository's root
// that topLevel does not name, so that a package that no public API needs
// goes under internal/ (or under the command that uses it) instead of
// becoming one more top-level import path.
func TestTopLevelMatchesCard(t *testing.T) {
	dir := root(t)
	for _, name := range rootEntries(t, dir) {
		if !slices.Contains(topLevel, name) {
			t.Errorf("the repository's root holds %s, which the layout does not name: put a package that no public API "+
				"needs under internal/ (or cmd/heddle/internal/), or change the layout in docs/architecture.md and topLevel here", name)
		}
	}
}

// rootEntries returns the names at the root of the repository in dir: the
// first element of every path git tracks or would add (tracked files that
// are still on disk, and untracked ones it does not ignore, as .ci/run's
// gofmt step lists them). Outside a git work tree (an unpacked archive)
// it lists the directory instead, leaving out .git and what the root
// .gitignore names at the top.
func rootEntries(t *testing.T, dir string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard", "-z")
	cmd.Dir = dir
	out, err := cmd.Output()
	var exitErr *exec.ExitError
	if err != nil && !errors.Is(err, exec.ErrNotFound) && !errors.As(err, &exitErr) {
		t.Fatalf("git ls-files: %v", err)
	}
	if err != nil {
		t.Logf("not a git work tree (%v): listing %s", err, dir)
		return listRoot(t, dir)
	}
	seen := map[string]bool{}
	var names []string
	for _, p := range bytes.Split(out, []byte{0}) {
		if len(p) == 0 {
			continue
		}
		rel := string(p)
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(rel))); errors.Is(err, fs.ErrNotExist) {
			continue // deleted from the work tree, not yet from the index
		}
		first, _, _ := strings.Cut(rel, "/")
		if !seen[first] {
			seen[first] = true
			names = append(names, first)
		}
	}
	return names
}

// listRoot lists dir without git: every entry but .git and those a pattern
// of the root .gitignore without an inner slash matches ("/heddle",
// "*.test").
func listRoot(t *testing.T, dir string) []string {
	t.Helper()
	var ignored []string
	if b, err := os.ReadFile(filepath.Join(dir, ".gitignore")); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			l = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(l), "/"), "/")
			if l != "" && !strings.HasPrefix(l, "#") && !strings.Contains(l, "/") {
				ignored = append(ignored, l)
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.Name() == ".git" || slices.ContainsFunc(ignored, func(p string) bool { ok, _ := path.Match(p, e.Name()); return ok }) {
			continue
		}
		names = append(names, e.Name())
	}
	return names
}
