package doccheck

import (
	"bytes"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"regexp"
	"strings"
)

// Problem is one broken reference: the file (a slash-separated path from
// the repository root), the line (from 1) and what is wrong.
type Problem struct {
	File string
	Line int
	Msg  string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg) }

// externalSchemes are the URL schemes a link may use to leave the
// repository: web pages and mail. Any other scheme (file:, …) points at a
// machine rather than at the repository.
var externalSchemes = map[string]bool{"http": true, "https": true, "mailto": true}

var scheme = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9+.-]*):`)

// checkLinks checks every link of the Markdown file name (its content src)
// against the repository fsys: a relative link must stay inside the
// repository and name a file or directory that exists, and an anchor into
// a Markdown file must name one of its headings.
func checkLinks(fsys fs.FS, name string, src []byte) []Problem {
	var out []Problem
	bad := func(l link, format string, a ...any) {
		out = append(out, Problem{File: name, Line: l.line, Msg: fmt.Sprintf("link %q: ", l.target) + fmt.Sprintf(format, a...)})
	}
	for _, l := range markdownLinks(string(src)) {
		if m := scheme.FindStringSubmatch(l.target); m != nil {
			if !externalSchemes[strings.ToLower(m[1])] {
				bad(l, "the %s: scheme points outside the repository", m[1])
			}
			continue
		}
		target, anchor, _ := strings.Cut(l.target, "#")
		if target == "" { // an anchor in this document
			if !anchors(string(src))[anchor] {
				bad(l, "no heading of this document has the anchor #%s", anchor)
			}
			continue
		}
		p, err := url.PathUnescape(target)
		if err != nil {
			bad(l, "the path is not validly escaped: %v", err)
			continue
		}
		if strings.HasPrefix(p, "/") {
			bad(l, "an absolute path; write it relative to this file")
			continue
		}
		p = path.Join(path.Dir(name), p)
		if p == ".." || strings.HasPrefix(p, "../") {
			bad(l, "the path leaves the repository")
			continue
		}
		info, err := fs.Stat(fsys, p)
		if err != nil {
			bad(l, "%s does not exist in the repository", p)
			continue
		}
		if anchor != "" && !info.IsDir() && strings.HasSuffix(p, ".md") {
			doc, err := fs.ReadFile(fsys, p)
			if err != nil {
				bad(l, "%v", err)
			} else if !anchors(string(doc))[anchor] {
				bad(l, "no heading of %s has the anchor #%s", p, anchor)
			}
		}
	}
	return out
}

// The references no file may hold: the design folder that lived beside the
// repository, and issues of a tracker by number. The folder's name is
// assembled so that this file does not mention it itself.
var (
	outsideFolder = ".." + "/shared"
	issueNumber   = regexp.MustCompile(`(?i)\bissues?\s*(?:#\s*)?\d+\b`)
)

// checkForbidden reports each line of file name that refers to the folder
// outside the repository or to a tracker issue by number. Those references
// break for everyone who clones the repository.
func checkForbidden(name string, src []byte) []Problem {
	var out []Problem
	for i, l := range strings.Split(string(src), "\n") {
		if strings.Contains(l, outsideFolder) {
			out = append(out, Problem{name, i + 1, fmt.Sprintf("refers to %s, a folder outside the repository", outsideFolder)})
		}
		if m := issueNumber.FindString(l); m != "" {
			out = append(out, Problem{name, i + 1, fmt.Sprintf("%q refers to a tracker issue by number; say what it was instead", m)})
		}
	}
	return out
}

// mdMention is a path to a Markdown file written in prose or a comment, such
// as "docs/state-machines.md"; urlText is a URL, whose path is not ours.
var (
	mdMention = regexp.MustCompile(`[A-Za-z0-9_.][A-Za-z0-9_./-]*\.md\b`)
	urlText   = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://\S+`)
)

// checkMentions reports each Markdown file that file name mentions by path
// (in a Go comment, or in a document's text) and the repository does not
// hold, looked up from the file's directory and from the repository root.
func checkMentions(fsys fs.FS, name string, src []byte) []Problem {
	var out []Problem
	for i, l := range strings.Split(string(src), "\n") {
		l = urlText.ReplaceAllString(l, "")
		seen := map[string]bool{} // a link's text and target often repeat a path
		for _, m := range mdMention.FindAllString(l, -1) {
			if seen[m] || exists(fsys, path.Join(path.Dir(name), m)) || exists(fsys, path.Clean(m)) {
				continue
			}
			seen[m] = true
			out = append(out, Problem{name, i + 1, fmt.Sprintf("mentions %s, which is not in the repository", m)})
		}
	}
	return out
}

func exists(fsys fs.FS, p string) bool {
	if p == ".." || strings.HasPrefix(p, "../") {
		return false
	}
	_, err := fs.Stat(fsys, p)
	return err == nil
}

// includeMarker precedes a fenced code block that shows a whole file of the
// repository: <!-- code: examples/hello/main.go -->.
var includeMarker = regexp.MustCompile(`^<!--\s*code:\s*(\S+)\s*-->\s*$`)

// checkIncludes checks that the code block after each include marker of
// the Markdown file name is, byte for byte, the file the marker names (a
// path from the repository root), so that the docs show code that compiles
// and is tested.
func checkIncludes(fsys fs.FS, name string, src []byte) []Problem {
	var out []Problem
	lines := strings.Split(string(src), "\n")
	for i := 0; i < len(lines); i++ {
		m := includeMarker.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil {
			continue
		}
		marker := i + 1
		want, err := fs.ReadFile(fsys, m[1])
		if err != nil {
			out = append(out, Problem{name, marker, fmt.Sprintf("the code marker names %s, which is not in the repository", m[1])})
			continue
		}
		body, end, ok := fencedBlockAfter(lines, i+1)
		if !ok {
			out = append(out, Problem{name, marker, fmt.Sprintf("the code marker for %s is not followed by a fenced code block", m[1])})
			continue
		}
		if !bytes.Equal([]byte(body), want) {
			out = append(out, Problem{name, marker, fmt.Sprintf("the code block differs from %s at its line %d; copy the file into the block again", m[1], firstDiff(body, string(want)))})
		}
		i = end
	}
	return out
}

// fencedBlockAfter returns the body of the fenced code block that starts at
// the first non-blank line at or after start, with a newline after each
// line, and the index of its closing fence.
func fencedBlockAfter(lines []string, start int) (body string, end int, ok bool) {
	i := start
	for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	if i == len(lines) {
		return "", 0, false
	}
	fence := openingFence(lines[i])
	if fence == "" {
		return "", 0, false
	}
	var b strings.Builder
	for j := i + 1; j < len(lines); j++ {
		if strings.HasPrefix(lines[j], fence) && strings.Trim(lines[j], fence[:1]+" \t") == "" {
			return b.String(), j, true
		}
		b.WriteString(lines[j])
		b.WriteByte('\n')
	}
	return "", 0, false
}

// firstDiff returns the first line (from 1) at which a and b differ.
func firstDiff(a, b string) int {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return i + 1
		}
	}
	return min(len(al), len(bl))
}

// quickStart is the set-up the README promises: exactly these two commands,
// the first block of the "Quick start" section. The test command is the
// fast one: -short leaves out the chaos suite and the long property runs,
// which the README names beside it and .ci/run runs after it.
var quickStart = []string{"go run ./cmd/heddle demo", "go test -short ./..."}

// checkQuickStart checks that the README's quick start shows exactly the
// two commands of quickStart, in its first code block.
func checkQuickStart(name string, src []byte) []Problem {
	lines := strings.Split(string(src), "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != "## Quick start" {
			continue
		}
		for j := i + 1; j < len(lines) && !strings.HasPrefix(lines[j], "## "); j++ {
			if openingFence(strings.TrimSpace(lines[j])) == "" {
				continue
			}
			body, _, ok := fencedBlockAfter(lines, j)
			if !ok {
				break
			}
			got := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
			if strings.Join(got, "\n") != strings.Join(quickStart, "\n") {
				return []Problem{{name, j + 1, fmt.Sprintf("the quick start's commands are %q, want exactly %q", got, quickStart)}}
			}
			return nil
		}
		return []Problem{{name, i + 1, "the Quick start section has no code block"}}
	}
	return []Problem{{name, 1, `no "## Quick start" section`}}
}
