package ui

import (
	"bytes"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/heddlewf/heddle/internal/listfilter"
)

// hostileWords are words written to break out of a shell's quotes: to run
// touch, which would leave a file named pwned behind.
var hostileWords = []string{
	"plain", "", "two words", "status=Running id=order-*",
	`'; touch pwned; '`, `'$(touch pwned)'`, "'`touch pwned`'", `$(touch pwned)`, "`touch pwned`",
	`\'; touch pwned; #`, `a\`, `\`, `\\'`, `'\''; touch pwned #`, `"; touch pwned; "`, `$HOME ~ * ?`, `!! !-1`,
	"x\ntouch pwned\n", "x'\ntouch pwned\n'", "\x15touch pwned\n", "\x1b[201~touch pwned\n", "\x03\x04",
	"tab\there", "\u202eop\u202c", "zero\u200bwidth", "line\u2028sep", "\xff\xfe'; touch pwned #", "\x7f\u0085",
	"naïve ünïcödé 名前", "nb\u00a0space",
}

// shells are the shells a pasted line is tried in; ansi says whether the
// shell reads $'...'.
var shells = []struct {
	path string
	ansi bool
}{{"/bin/sh", false}, {"/bin/dash", false}, {"/bin/bash", true}, {"/usr/bin/zsh", true}, {"/usr/bin/fish", false}}

// runPasted runs line in shell, in an empty directory, with heddle a
// function that prints its arguments, and returns them and whether the
// line left any file behind (which only another command could).
func runPasted(t *testing.T, shell, line string) ([]string, bool, error) {
	t.Helper()
	dir := t.TempDir()
	def := `heddle() { printf '%s\0' "$@"; }; `
	if strings.HasSuffix(shell, "fish") {
		def = `function heddle; printf '%s\0' $argv; end; `
	}
	cmd := exec.Command(shell, "-c", def+line)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = &out
	err := cmd.Run()
	left, rerr := os.ReadDir(dir)
	if rerr != nil {
		t.Fatal(rerr)
	}
	args := strings.Split(out.String(), "\x00")
	return args[:len(args)-1], len(left) > 0, err
}

// Pasted into a shell, a quoted word is that word and runs nothing: the
// hostile words, and random ones (the seed is printed).
func TestShellQuoteRunsNothingElse(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	words := append([]string(nil), hostileWords...)
	alphabet := []string{"'", `\`, `"`, "$", "(", ")", "`", ";", "&", "|", "\n", " ", "#", "*", "~", "!", "a", "touch pwned", "\x15", "é", "\u202e"}
	for range 200 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		words = append(words, b.String())
	}
	tried := 0
	for _, sh := range shells {
		if _, err := os.Stat(sh.path); err != nil {
			continue
		}
		tried++
		for _, w := range words {
			q := shellQuote(w)
			if strings.ContainsFunc(q, hidden) {
				t.Fatalf("shellQuote(%q) = %q shows a character that does not show itself", w, q)
			}
			args, left, err := runPasted(t, sh.path, "heddle x "+q+" y")
			if left {
				t.Fatalf("%s: the line for %q (%s) ran another command", sh.path, w, q)
			}
			exact := sh.ansi || !strings.HasPrefix(q, "$'")
			if exact && (err != nil || len(args) != 3 || args[1] != w) {
				t.Errorf("%s: the line for %q (%s) passed %q (%v)", sh.path, w, q, args, err)
			}
			// A shell without $'...' may read another word, or refuse the
			// line (fish), but never more than one word.
			if !exact && err == nil && len(args) != 3 {
				t.Errorf("%s: the line for %q (%s) passed %q", sh.path, w, q, args)
			}
		}
	}
	if tried == 0 {
		t.Skip("no shell to paste into")
	}
}

// The pages' CLI lines, pasted, run heddle with the page's filter and
// nothing else, however the link that opened the page was crafted.
func TestCLILinesAreQuoted(t *testing.T) {
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("no bash")
	}
	v := newEnv(t, envOptions{})
	code := regexp.MustCompile(`(?s)<code id="(cli-query|cli-review)">(.*?)</code>`)
	line := func(path string) string {
		t.Helper()
		_, body, _ := v.get(path)
		m := code.FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("%s shows no CLI line:\n%s", path, body)
		}
		return m[2]
	}
	for _, w := range hostileWords {
		if w == "" {
			continue
		}
		// The workflow list: the word as an id, in the filter language's
		// quotes, so that the query parses.
		q := "id=" + listfilter.Quote(w)
		if _, err := listfilter.Parse(q, v.clk.Now()); err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		l := line("/ui/workflows?q=" + url.QueryEscape(q))
		args, left, err := runPasted(t, "/bin/bash", l)
		if left || err != nil || len(args) != 4 || args[2] != "--query" || args[3] != q {
			t.Errorf("the workflow list's line for %q, %s, ran another command (%v) or passed %q (%v)", q, l, left, args, err)
		}
		// The review list: the word as a queue.
		l = line("/ui/review?queue=" + url.QueryEscape(w))
		args, left, err = runPasted(t, "/bin/bash", l)
		if wq := strings.TrimSpace(w); left || err != nil || len(args) != 4 || args[2] != "--queue" || args[3] != wq {
			t.Errorf("the review list's line for %q, %s, ran another command (%v) or passed %q (%v)", w, l, left, args, err)
		}
	}
}

// unquoteShell reads back one word as a POSIX shell with ANSI-C quotes
// (bash) reads it, for the forms shellQuote writes: '...' segments,
// $'...' segments with their escapes, and \c outside quotes. ok is false
// for anything else, or for a word that does not end where the text does.
func unquoteShell(q string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(q); {
		switch {
		case q[i] == '\'':
			j := strings.IndexByte(q[i+1:], '\'')
			if j < 0 {
				return "", false
			}
			b.WriteString(q[i+1 : i+1+j])
			i += j + 2
		case strings.HasPrefix(q[i:], "$'"):
			i += 2
			for {
				if i >= len(q) {
					return "", false
				}
				c := q[i]
				if c == '\'' {
					i++
					break
				}
				if c != '\\' {
					b.WriteByte(c)
					i++
					continue
				}
				if i+1 >= len(q) {
					return "", false
				}
				e := q[i+1]
				switch e {
				case 'n':
					b.WriteByte('\n')
					i += 2
				case 't':
					b.WriteByte('\t')
					i += 2
				case '\\', '\'':
					b.WriteByte(e)
					i += 2
				case 'x', 'u', 'U':
					n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
					if i+2+n > len(q) {
						return "", false
					}
					v, err := strconv.ParseUint(q[i+2:i+2+n], 16, 32)
					if err != nil {
						return "", false
					}
					if e == 'x' {
						b.WriteByte(byte(v))
					} else {
						b.WriteRune(rune(v))
					}
					i += 2 + n
				default:
					return "", false
				}
			}
		case q[i] == '\\' && i+1 < len(q):
			b.WriteByte(q[i+1])
			i += 2
		default:
			return "", false
		}
	}
	return b.String(), true
}

// shellQuote's word reads back as the string it quotes, and shows no
// character that does not show itself.
func FuzzShellQuote(f *testing.F) {
	for _, w := range hostileWords {
		f.Add(w)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := shellQuote(s)
		if strings.ContainsFunc(q, hidden) || !utf8.ValidString(q) {
			t.Fatalf("shellQuote(%q) = %q shows a hidden character", s, q)
		}
		got, ok := unquoteShell(q)
		if !ok || got != s {
			t.Fatalf("shellQuote(%q) = %q reads back as %q (%v)", s, q, got, ok)
		}
	})
}
