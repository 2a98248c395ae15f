package ui

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// shellQuote writes s as one shell word, for the CLI lines the pages show
// ("the same filter in the CLI"): pasted into a shell, the line passes s
// to heddle and runs nothing else, whatever s holds, since a link's query
// string is anyone's to write.
//
// A word of printable characters is written in single quotes, where a
// POSIX shell expands nothing. Each ' is written outside them as \', and
// so is each \ (as \\), which keeps the word the same in fish too, the one
// common shell that reads \' and \\ inside single quotes.
//
// A word holding a control character (a newline, an escape, a ^U that
// would erase the line typed so far when pasted into a terminal), a
// character that changes how the text around it is shown (bidi overrides,
// zero-width characters), or bytes that are not UTF-8 cannot be shown
// as it is: it is written in ANSI-C quotes, $'...', with every such
// character escaped, and each ' again outside them. bash, zsh, ksh and
// busybox read them; a shell that does not (dash, fish) reads those quotes
// as plain single quotes, where the escapes are text, or refuses the line:
// it gets a wrong word, and still runs nothing else.
func shellQuote(s string) string {
	if !needsEscapes(s) {
		var b strings.Builder
		b.WriteByte('\'')
		for _, r := range s {
			switch r {
			case '\'':
				b.WriteString(`'\''`)
			case '\\':
				b.WriteString(`'\\'`)
			default:
				b.WriteRune(r)
			}
		}
		b.WriteByte('\'')
		return b.String()
	}
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\'':
			// Outside the quotes, as in the plain form: a shell without
			// $'...' reads \' inside them as a backslash that ends the
			// quotes, and would read what follows as commands.
			b.WriteString(`'\'$'`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && hidden(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case hidden(r) && r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		case hidden(r):
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			b.WriteRune(r)
		}
		i += n
	}
	b.WriteByte('\'')
	return b.String()
}

// shellWord is s bare when it is a plain word of letters, digits, "_" and
// "-" (a state's name), else shellQuote(s).
func shellWord(s string) string {
	if s != "" && !strings.ContainsFunc(s, needsQuote) && s[0] != '-' {
		return s
	}
	return shellQuote(s)
}

// needsQuote reports whether r makes a word need quoting: anything but an
// ASCII letter, digit, underscore or dash.
func needsQuote(r rune) bool {
	plain := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
	return !plain
}

// needsEscapes reports whether s holds a character shellQuote must not
// show as it is.
func needsEscapes(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	return strings.ContainsFunc(s, hidden)
}

// hidden reports whether r does something other than show itself: a
// control character (C0, DEL, C1), a format character (bidi controls,
// zero-width joiners and spaces), a line or paragraph separator, or a
// character with no meaning yet.
func hidden(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Co) ||
		!unicode.IsPrint(r) && r != ' '
}
