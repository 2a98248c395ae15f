package doccheck

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot returns the directory of the repository's go.mod, above the
// test's working directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/heddlewf/heddle\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod of github.com/heddlewf/heddle above the working directory")
		}
		dir = parent
	}
}

// repoFiles returns the repository's files with one of the extensions, as
// slash-separated paths from the root. Directories whose name starts with
// a dot (.git, editors' folders) are not the repository's content.
func repoFiles(t *testing.T, fsys fs.FS, exts ...string) []string {
	t.Helper()
	var files []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			return nil
		}
		for _, e := range exts {
			if path.Ext(p) == e {
				files = append(files, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// report fails the test with every problem, one per line.
func report(t *testing.T, problems []Problem) {
	t.Helper()
	for _, p := range problems {
		t.Error(p)
	}
}

// TestRepositoryLinks checks every link of every Markdown file.
func TestRepositoryLinks(t *testing.T) {
	fsys := os.DirFS(repoRoot(t))
	docs := repoFiles(t, fsys, ".md")
	for _, required := range []string{"README.md", "CONTRIBUTING.md", "CHANGELOG.md", "docs/README.md"} {
		if !contains(docs, required) {
			t.Errorf("%s is missing", required)
		}
	}
	for _, name := range docs {
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			t.Fatal(err)
		}
		report(t, checkLinks(fsys, name, src))
	}
}

// TestNoOutsideReferences checks every Markdown and Go file for the
// folder outside the repository, tracker issue numbers, and Markdown files
// mentioned by a path the repository does not hold.
func TestNoOutsideReferences(t *testing.T) {
	fsys := os.DirFS(repoRoot(t))
	for _, name := range repoFiles(t, fsys, ".md", ".go") {
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			t.Fatal(err)
		}
		report(t, checkForbidden(name, src))
		report(t, checkMentions(fsys, name, src))
	}
}

// TestDocsShowBuiltCode checks every code block marked as a copy of a file
// against that file. The README's first workflow must be one of them: it
// is examples/hello, which the examples' test builds and runs.
func TestDocsShowBuiltCode(t *testing.T) {
	fsys := os.DirFS(repoRoot(t))
	for _, name := range repoFiles(t, fsys, ".md") {
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			t.Fatal(err)
		}
		report(t, checkIncludes(fsys, name, src))
	}
	readme, err := fs.ReadFile(fsys, "README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "<!-- code: examples/hello/main.go -->") {
		t.Error("README.md does not show examples/hello/main.go under a code marker")
	}
}

// TestQuickStart checks the README's two set-up commands.
func TestQuickStart(t *testing.T) {
	fsys := os.DirFS(repoRoot(t))
	readme, err := fs.ReadFile(fsys, "README.md")
	if err != nil {
		t.Fatal(err)
	}
	report(t, checkQuickStart("README.md", readme))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
