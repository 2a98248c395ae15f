package listfilter

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/heddlewf/heddle/engine"
)

// Term is one test of a query: Field Op Values.
type Term struct {
	Field Field
	Op    Op
	// Values are the values, unquoted; a time field has one.
	Values []Value
	// statuses are the Values of a status term, parsed.
	statuses []engine.Status
	// atMS is a time term's value, in Unix milliseconds.
	atMS int64
	// truth is a boolean term's value.
	truth bool
}

// Value is one value of a term.
type Value struct {
	// Text is the value without its quotes (and, for a prefix, its star).
	Text string
	// Quoted: the value was written in double quotes, so it is matched as
	// written, a trailing "*" included.
	Quoted bool
	// Prefix: a bare value that ended in "*", matching every value that
	// starts with Text.
	Prefix bool
}

// Query is a parsed query: every term must hold. The zero value (and nil)
// matches every run.
type Query struct {
	Terms []Term
}

// maxQueryRunes bounds a query's length: a filter typed by a person or a
// script is short, and a longer text is refused before it is read.
const maxQueryRunes = 4096

// Parse reads a query. Relative times ("-24h", "now") count back from now.
func Parse(text string, now time.Time) (*Query, error) {
	p := &parser{src: []rune(text), text: text, now: now}
	if len(p.src) > maxQueryRunes {
		return nil, p.errAt(maxQueryRunes, fmt.Sprintf("a query holds at most %d characters", maxQueryRunes))
	}
	q := &Query{}
	for {
		p.skipSpace()
		if p.done() {
			return q, nil
		}
		t, err := p.term()
		if err != nil {
			return nil, err
		}
		q.Terms = append(q.Terms, t)
	}
}

// parser reads one query, rune by rune.
type parser struct {
	src  []rune
	text string
	pos  int
	now  time.Time
}

func (p *parser) done() bool { return p.pos >= len(p.src) }

func (p *parser) peek() rune {
	if p.done() {
		return 0
	}
	return p.src[p.pos]
}

func (p *parser) skipSpace() {
	for !p.done() && unicode.IsSpace(p.peek()) {
		p.pos++
	}
}

func (p *parser) errAt(pos int, msg string) error {
	return &SyntaxError{Query: p.text, Col: pos + 1, Msg: msg}
}

// term reads field op values.
func (p *parser) term() (Term, error) {
	start := p.pos
	for !p.done() && (unicode.IsLetter(p.peek()) || p.peek() == '_') {
		p.pos++
	}
	name := string(p.src[start:p.pos])
	if name == "" || !isOpStart(p.peek()) {
		word := p.word(start)
		return Term{}, p.errAt(start, fmt.Sprintf("%q is not a term: want a field, an operator and a value with no space between, such as status=Running (fields: %s)", word, fieldNames()))
	}
	field, ok := lookupField(name)
	if !ok {
		return Term{}, p.errAt(start, fmt.Sprintf("unknown field %q: want one of %s", name, fieldNames()))
	}
	k := fieldKinds[field]
	opPos := p.pos
	op, ok := p.op()
	if !ok {
		return Term{}, p.errAt(opPos, fmt.Sprintf("%s needs an operator, such as %s", name, example(field)))
	}
	if !k.takes(op) {
		return Term{}, p.errAt(opPos, fmt.Sprintf("%s takes the operators %s, not %s", field, k.opNames(), op))
	}
	t := Term{Field: field, Op: op}
	for {
		valPos := p.pos
		v, err := p.value()
		if err != nil {
			return Term{}, err
		}
		if err := p.check(&t, k, v, valPos); err != nil {
			return Term{}, err
		}
		t.Values = append(t.Values, v)
		if p.peek() != ',' {
			break
		}
		if k == kindTime {
			return Term{}, p.errAt(p.pos, fmt.Sprintf("%s takes one time, not a list", field))
		}
		p.pos++
	}
	if !p.done() && !unicode.IsSpace(p.peek()) {
		return Term{}, p.errAt(p.pos, "expected a space before the next term")
	}
	return t, nil
}

// word returns the run of non-space characters from start, for messages.
func (p *parser) word(start int) string {
	end := start
	for end < len(p.src) && !unicode.IsSpace(p.src[end]) {
		end++
	}
	p.pos = end
	return string(p.src[start:end])
}

func isOpStart(r rune) bool { return r == '=' || r == '!' || r == '<' || r == '>' || r == ':' }

// op reads an operator; ":" is read as "=".
func (p *parser) op() (Op, bool) {
	two := ""
	if p.pos+1 < len(p.src) {
		two = string(p.src[p.pos : p.pos+2])
	}
	switch two {
	case "!=", ">=", "<=":
		p.pos += 2
		return Op(two), true
	}
	switch p.peek() {
	case '=', ':':
		p.pos++
		return OpEq, true
	case '>':
		p.pos++
		return OpGt, true
	case '<':
		p.pos++
		return OpLt, true
	}
	return "", false
}

// value reads one value: quoted, or bare up to a space or a comma.
func (p *parser) value() (Value, error) {
	start := p.pos
	if p.peek() == '"' {
		p.pos++
		var b strings.Builder
		for {
			if p.done() {
				return Value{}, p.errAt(start, "a quoted value has no closing quote")
			}
			r := p.src[p.pos]
			p.pos++
			switch r {
			case '"':
				if b.Len() == 0 {
					return Value{}, p.errAt(start, "a value must not be empty")
				}
				return Value{Text: b.String(), Quoted: true}, nil
			case '\\':
				if p.done() || (p.peek() != '"' && p.peek() != '\\') {
					return Value{}, p.errAt(p.pos-1, `inside quotes a backslash escapes only " and \`)
				}
				b.WriteRune(p.src[p.pos])
				p.pos++
			default:
				b.WriteRune(r)
			}
		}
	}
	for !p.done() && !unicode.IsSpace(p.peek()) && p.peek() != ',' {
		if p.peek() == '"' {
			return Value{}, p.errAt(p.pos, "a quote inside a bare value: quote the whole value")
		}
		p.pos++
	}
	text := string(p.src[start:p.pos])
	if text == "" {
		return Value{}, p.errAt(start, "missing value")
	}
	if s, ok := strings.CutSuffix(text, "*"); ok {
		if s == "" {
			return Value{}, p.errAt(start, `"*" alone matches everything: leave the term out`)
		}
		return Value{Text: s, Prefix: true}, nil
	}
	return Value{Text: text}, nil
}

// check reads a value as its field's kind needs and keeps what it means.
func (p *parser) check(t *Term, k kind, v Value, pos int) error {
	switch k {
	case kindStatus:
		if v.Prefix {
			return p.errAt(pos, "a status is named in full, not by a prefix")
		}
		s, ok := statusNamed(v.Text)
		if !ok {
			return p.errAt(pos, fmt.Sprintf("%q is not a status: want one of %s", v.Text, statusNames()))
		}
		t.statuses = append(t.statuses, s)
	case kindBool:
		switch {
		case len(t.Values) > 0:
			return p.errAt(pos, fmt.Sprintf("%s takes true or false, not a list", t.Field))
		case strings.EqualFold(v.Text, "true") && !v.Prefix:
			t.truth = true
		case strings.EqualFold(v.Text, "false") && !v.Prefix:
		default:
			return p.errAt(pos, fmt.Sprintf("%q is not true or false", v.Text))
		}
	case kindTime:
		if v.Prefix {
			return p.errAt(pos, "a time takes no \"*\"")
		}
		at, err := parseTime(v.Text, p.now)
		if err != nil {
			return p.errAt(pos, err.Error())
		}
		t.atMS = at.UnixMilli()
	}
	return nil
}

// example is a term of field, for messages.
func example(f Field) string {
	switch fieldKinds[f] {
	case kindStatus:
		return "status=Running"
	case kindTime:
		return string(f) + ">-24h"
	case kindBool:
		return string(f) + "=true"
	}
	return string(f) + "=value"
}

func statusNamed(name string) (engine.Status, bool) {
	for _, s := range engine.Statuses() {
		if strings.EqualFold(s.String(), name) {
			return s, true
		}
	}
	return engine.StatusNone, false
}

func statusNames() string {
	var names []string
	for _, s := range engine.Statuses() {
		names = append(names, s.String())
	}
	return strings.Join(names, ", ")
}
