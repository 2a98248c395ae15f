package doccheck

import (
	"strings"
	"testing"
	"testing/fstest"
)

// The fixtures below spell the references the checks must catch in pieces,
// so that this file, which the repository checks scan too, holds none.
var (
	upShared = ".." + "/shared"
	md       = ".md"
)

// fixtureRepo is a small repository for the checks to judge.
func fixtureRepo() fstest.MapFS {
	return fstest.MapFS{
		"README" + md:          {Data: []byte("# Top\n\n## Quick start\n")},
		"docs/guide" + md:      {Data: []byte("# Guide\n\n## Two words\n\n## `code` in a heading\n\n## Two words\n")},
		"docs/img/diagram.svg": {Data: []byte("<svg/>")},
		"examples/a/main.go":   {Data: []byte("package main\n\nfunc main() {}\n")},
	}
}

func TestCheckLinks(t *testing.T) {
	tests := []struct {
		name, file, doc string
		want            []string // one fragment per expected problem, in order
	}{
		{"relative file", "README" + md, "see [the guide](docs/guide" + md + ")", nil},
		{"relative from a subfolder", "docs/guide" + md, "[up](../README" + md + ") [img](img/diagram.svg)", nil},
		{"directory", "README" + md, "[examples](examples/)", nil},
		{"anchor in another file", "README" + md, "[x](docs/guide" + md + "#two-words) [y](docs/guide" + md + "#two-words-1) [z](docs/guide" + md + "#code-in-a-heading)", nil},
		{"anchor here", "docs/guide" + md, "# Guide\n\n[self](#guide)", nil},
		{"web and mail", "README" + md, "[w](https://example.com/a" + md + ") [m](mailto:a@example.com)", nil},
		{"links in code are not links", "README" + md, "`[x](nowhere" + md + ")`\n\n```\n[y](" + upShared + "/z" + md + ")\n```\n", nil},
		{"reference definition", "README" + md, "[g]: docs/guide" + md + "\n", nil},

		{"outside the repository", "README" + md, "[d](" + upShared + "/design/A" + md + ")", []string{"leaves the repository"}},
		{"outside from a subfolder", "docs/guide" + md, "[d](../../x" + md + ")", []string{"leaves the repository"}},
		{"missing file", "README" + md, "[m](docs/missing" + md + ")", []string{"docs/missing" + md + " does not exist"}},
		{"missing reference target", "README" + md, "[g]: docs/gone" + md + "\n", []string{"docs/gone" + md + " does not exist"}},
		{"absolute path", "README" + md, "[a](/etc/passwd)", []string{"absolute path"}},
		{"file scheme", "README" + md, "[f](file:///etc/passwd)", []string{"file: scheme"}},
		{"missing anchor", "README" + md, "[x](docs/guide" + md + "#three-words)", []string{"no heading of docs/guide" + md + " has the anchor #three-words"}},
		{"missing anchor here", "README" + md, "[x](#nowhere)", []string{"anchor #nowhere"}},
		{"image", "README" + md, "![d](docs/img/none.svg)", []string{"docs/img/none.svg does not exist"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkLinks(fixtureRepo(), tt.file, []byte(tt.doc))
			expectProblems(t, got, tt.want)
		})
	}
}

func TestCheckForbidden(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"clean", "// Apply is a pure step function (docs/architecture" + md + ").", nil},
		{"the verb issue without a number", "// the code issued a command; workers issue claims", nil},
		{"outside folder", "see " + upShared + "/design", []string{"a folder outside the repository"}},
		{"issue number", "see the closing note of " + "iss" + "ue 2", []string{"tracker issue by number"}},
		{"issue with a hash", "fixed in " + "Iss" + "ue #17", []string{"tracker issue by number"}},
		{"plural", "(" + "iss" + "ues 3 and 4)", []string{"tracker issue by number"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectProblems(t, checkForbidden("x.go", []byte(tt.src)), tt.want)
		})
	}
}

func TestCheckMentions(t *testing.T) {
	tests := []struct {
		name, file, src string
		want            []string
	}{
		{"from the root", "engine/x.go", "// see docs/guide" + md + " §1", nil},
		{"from the file's folder", "docs/other" + md, "as guide" + md + " says", nil},
		{"a URL is not ours", "x.go", "// https://github.com/o/r/blob/main/NOTES" + md, nil},
		{"missing", "engine/x.go", "// the table of STATE-MACHINES" + md + " §1", []string{"STATE-MACHINES" + md + ", which is not in the repository"}},
		{"escaping", "x.go", "// " + upShared + "/design/A" + md, []string{"not in the repository"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectProblems(t, checkMentions(fixtureRepo(), tt.file, []byte(tt.src)), tt.want)
		})
	}
}

func TestCheckIncludes(t *testing.T) {
	file := "package main\n\nfunc main() {}\n"
	tests := []struct {
		name, doc string
		want      []string
	}{
		{"equal", "<!-- code: examples/a/main.go -->\n```go\n" + file + "```\n", nil},
		{"blank line before the block", "<!-- code: examples/a/main.go -->\n\n```go\n" + file + "```\n", nil},
		{"differs", "<!-- code: examples/a/main.go -->\n```go\npackage main\n\nfunc main() { ctx }\n```\n", []string{"differs from examples/a/main.go at its line 3"}},
		{"shorter", "<!-- code: examples/a/main.go -->\n```go\npackage main\n```\n", []string{"differs"}},
		{"no block", "<!-- code: examples/a/main.go -->\nsome text\n", []string{"not followed by a fenced code block"}},
		{"unclosed block", "<!-- code: examples/a/main.go -->\n```go\n" + file, []string{"not followed by a fenced code block"}},
		{"missing file", "<!-- code: examples/b/main.go -->\n```go\n```\n", []string{"examples/b/main.go, which is not in the repository"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectProblems(t, checkIncludes(fixtureRepo(), "README"+md, []byte(tt.doc)), tt.want)
		})
	}
}

func TestCheckQuickStart(t *testing.T) {
	good := "# x\n\n## Quick start\n\nYou need Go.\n\n```sh\ngo run ./cmd/heddle demo\ngo test -short ./...\n```\n\n## Next\n"
	tests := []struct {
		name, doc string
		want      []string
	}{
		{"exact", good, nil},
		{"a third command", strings.Replace(good, "go test -short ./...\n", "go test -short ./...\nmake\n", 1), []string{"want exactly"}},
		{"the slow test command", strings.Replace(good, "go test -short ./...\n", "go test ./...\n", 1), []string{"want exactly"}},
		{"no block", "## Quick start\n\ntext\n\n## Next\n\n```sh\ngo test ./...\n```\n", []string{"no code block"}},
		{"no section", "# x\n", []string{"no \"## Quick start\" section"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectProblems(t, checkQuickStart("README"+md, []byte(tt.doc)), tt.want)
		})
	}
}

func TestSlug(t *testing.T) {
	tests := map[string]string{
		"Quick start":                   "quick-start",
		"1. Jobs (one job = one run)":   "1-jobs-one-job--one-run",
		"`engine.Apply` — the one idea": "engineapply--the-one-idea",
		"Temporal API → heddle":         "temporal-api--heddle",
		"[Linked](x" + md + ") heading": "linked-heading",
		"Trailing hashes ##":            "trailing-hashes",
		"snake_case and CamelCase":      "snake_case-and-camelcase",
	}
	for in, want := range tests {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}

// expectProblems checks that got holds one problem per fragment of want,
// in order, each containing its fragment.
func expectProblems(t *testing.T, got []Problem, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d problems %v, want %d containing %q", len(got), got, len(want), want)
	}
	for i, w := range want {
		if !strings.Contains(got[i].String(), w) {
			t.Errorf("problem %d is %q, want it to contain %q", i, got[i], w)
		}
	}
}
