package doccheck

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// link is one link of a Markdown document: its target as written and the
// line it is on (counted from 1).
type link struct {
	target string
	line   int
}

// The two link forms heddle's docs use: inline links and images
// ("[text](target)", "![alt](target "title")") and reference definitions
// ("[label]: target"). Autolinks ("<https://…>") are always external.
var (
	inlineLink    = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	referenceLink = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?`)
)

// textLines returns the lines of a Markdown document and, for each, whether
// it belongs to a fenced code block (the fences included).
func textLines(src string) (lines []string, code []bool) {
	lines = strings.Split(src, "\n")
	code = make([]bool, len(lines))
	fence := "" // the fence that opened the current code block, if any
	for i, l := range lines {
		trimmed := strings.TrimLeft(l, " ")
		if fence != "" {
			code[i] = true
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]+" \t") == "" {
				fence = ""
			}
			continue
		}
		if f := openingFence(trimmed); f != "" && len(l)-len(trimmed) < 4 {
			fence, code[i] = f, true
		}
	}
	return lines, code
}

// proseLines returns the lines of a Markdown document with fenced code
// blocks emptied and inline code spans blanked out, so that what code shows
// is never taken for a link. Line numbers are kept.
func proseLines(src string) []string {
	lines, code := textLines(src)
	out := make([]string, len(lines))
	for i, l := range lines {
		if !code[i] {
			out[i] = blankCodeSpans(l)
		}
	}
	return out
}

// openingFence returns the fence (three or more backticks or tildes) a line
// opens a code block with, or "".
func openingFence(trimmed string) string {
	for _, c := range []string{"`", "~"} {
		n := len(trimmed) - len(strings.TrimLeft(trimmed, c))
		if n >= 3 {
			return strings.Repeat(c, n)
		}
	}
	return ""
}

// blankCodeSpans replaces the contents of inline code spans (and their
// backticks) with spaces.
func blankCodeSpans(l string) string {
	b := []byte(l)
	for i := 0; i < len(b); {
		if b[i] != '`' {
			i++
			continue
		}
		n := 1
		for i+n < len(b) && b[i+n] == '`' {
			n++
		}
		closing := strings.Index(string(b[i+n:]), strings.Repeat("`", n))
		if closing < 0 {
			break // an unmatched backtick is literal text
		}
		end := i + n + closing + n
		for j := i; j < end; j++ {
			b[j] = ' '
		}
		i = end
	}
	return string(b)
}

// markdownLinks returns the links of a Markdown document, outside code.
func markdownLinks(src string) []link {
	var links []link
	for i, l := range proseLines(src) {
		for _, m := range inlineLink.FindAllStringSubmatch(l, -1) {
			links = append(links, link{target: m[1], line: i + 1})
		}
		if m := referenceLink.FindStringSubmatch(l); m != nil {
			links = append(links, link{target: m[1], line: i + 1})
		}
	}
	return links
}

// htmlAnchor matches the id or name of an HTML element written in Markdown.
var htmlAnchor = regexp.MustCompile(`<a\s[^>]*(?:id|name)="([^"]+)"`)

// anchors returns the link anchors a Markdown document defines: one per
// heading, as GitHub derives it (see slug), and any HTML id or name.
func anchors(src string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	lines, code := textLines(src)
	for i, l := range lines {
		if code[i] {
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(blankCodeSpans(l), -1) {
			out[m[1]] = true
		}
		t := strings.TrimLeft(l, " ")
		if !strings.HasPrefix(t, "#") || len(l)-len(t) > 3 {
			continue
		}
		level := len(t) - len(strings.TrimLeft(t, "#"))
		rest := t[level:]
		if level > 6 || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
			continue
		}
		s := slug(rest)
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// mdLinkText turns "[text](target)" into "text", as a heading renders.
var mdLinkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// slug derives a heading's anchor the way GitHub does: the rendered text,
// lower-cased, keeping letters, digits, spaces, hyphens and underscores, with
// each space turned into a hyphen. Code spans and links count by their text.
func slug(heading string) string {
	heading = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(heading), "#"))
	heading = mdLinkText.ReplaceAllString(heading, "$1")
	heading = strings.ReplaceAll(heading, "`", "")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
