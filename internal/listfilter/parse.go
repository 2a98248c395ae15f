package listfilter

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/heddlewf/heddle/engine"
)

// The bounds of what Parse reads: a filter typed by a person or a script
// is short, and a longer or deeper one is refused before it is evaluated
// against every run a page reads.
const (
	// maxQueryRunes bounds a query's length, in characters.
	maxQueryRunes = 4096
	// maxDepth bounds the nesting of parentheses.
	maxDepth = 32
	// maxPreds bounds the comparisons of one query.
	maxPreds = 256
	// maxValues bounds the values of one IN list (or heddle's a,b list).
	maxValues = 256
)

// Parse reads a query in either syntax (see the package documentation).
// Relative times ("-24h", "now") count back from now.
func Parse(text string, now time.Time) (*Query, error) {
	return parse(text, now, maxQueryRunes, maxPreds)
}

// parse is Parse with its bounds on the text's length and comparisons
// given. String writes heddle's short terms in Temporal's longer syntax,
// up to about ten times as long (id=a*,b* becomes two STARTS_WITH
// comparisons), and the tests read it back with larger bounds.
func parse(text string, now time.Time, maxRunes, maxPreds int) (*Query, error) {
	if n := utf8.RuneCountInString(text); n > maxRunes {
		return nil, &SyntaxError{Query: text, Col: maxRunes + 1, Token: "",
			Msg: fmt.Sprintf("a query holds at most %d characters, this one %d", maxRunes, n)}
	}
	p := &parser{src: []rune(text), text: text, now: now, maxPreds: maxPreds}
	q := &Query{statusOnly: true}
	p.skipSpace()
	if !p.done() && !p.atKeyword("ORDER") {
		e, so, err := p.or()
		if err != nil {
			return nil, err
		}
		q.Expr, q.statusOnly = e, so
	}
	p.skipSpace()
	if p.atKeyword("ORDER") {
		o, err := p.orderBy()
		if err != nil {
			return nil, err
		}
		q.Order = o
	}
	p.skipSpace()
	if !p.done() {
		if p.peek() == ')' {
			return nil, p.errAt(p.pos, "a ) closes no (")
		}
		return nil, p.errAt(p.pos, "expected AND, OR or ORDER BY between comparisons")
	}
	return q, nil
}

// parser reads one query, rune by rune.
type parser struct {
	src   []rune
	text  string
	pos   int
	now   time.Time
	depth int
	preds int
	// maxPreds bounds preds.
	maxPreds int
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

// errAt is a SyntaxError at pos, naming the token there.
func (p *parser) errAt(pos int, msg string) error {
	return &SyntaxError{Query: p.text, Col: pos + 1, Token: p.tokenAt(pos), Msg: msg}
}

// tokenAt is the token that starts at pos, for messages: a word, a
// quoted value, or one other character; "" at the end.
func (p *parser) tokenAt(pos int) string {
	if pos >= len(p.src) {
		return ""
	}
	end := pos
	switch r := p.src[pos]; {
	case isIdent(r):
		for end < len(p.src) && isIdent(p.src[end]) {
			end++
		}
	case r == '"' || r == '\'':
		end++
		for end < len(p.src) && p.src[end] != r {
			end++
		}
		if end < len(p.src) {
			end++
		}
	case isOpRune(r):
		for end < len(p.src) && isOpRune(p.src[end]) {
			end++
		}
	default:
		for end < len(p.src) && !unicode.IsSpace(p.src[end]) && !strings.ContainsRune("(),", p.src[end]) {
			end++
		}
		if end == pos {
			end++
		}
	}
	const maxToken = 40
	if end-pos > maxToken {
		return string(p.src[pos:pos+maxToken]) + "…"
	}
	return string(p.src[pos:end])
}

func isIdent(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

func isOpRune(r rune) bool { return strings.ContainsRune("=!<>:", r) }

// ident reads a word of letters, digits and underscores.
func (p *parser) ident() string {
	start := p.pos
	for !p.done() && isIdent(p.peek()) {
		p.pos++
	}
	return string(p.src[start:p.pos])
}

// atKeyword reports whether the word at pos is kw (any case).
func (p *parser) atKeyword(kw string) bool {
	end := p.pos
	for end < len(p.src) && isIdent(p.src[end]) {
		end++
	}
	return strings.EqualFold(string(p.src[p.pos:end]), kw)
}

// keyword consumes kw when it is the next word, after spaces.
func (p *parser) keyword(kw string) bool {
	save := p.pos
	p.skipSpace()
	if p.atKeyword(kw) {
		p.pos += len([]rune(kw))
		return true
	}
	p.pos = save
	return false
}

// or reads terms joined by OR. It also reports whether they test nothing
// but statuses.
func (p *parser) or() (Expr, bool, error) {
	var terms Or
	statusOnly := true
	for {
		e, so, err := p.and()
		if err != nil {
			return nil, false, err
		}
		if o, ok := e.(Or); ok {
			terms = append(terms, o...)
		} else {
			terms = append(terms, e)
		}
		statusOnly = statusOnly && so
		p.skipSpace()
		if !p.atKeyword("OR") {
			break
		}
		p.pos += 2
		p.skipSpace()
		if p.done() {
			return nil, false, p.errAt(p.pos, "OR needs a comparison after it")
		}
	}
	if len(terms) == 1 {
		return terms[0], statusOnly, nil
	}
	return terms, statusOnly, nil
}

// and reads terms joined by AND, or by nothing but space (heddle's terms).
func (p *parser) and() (Expr, bool, error) {
	var terms And
	statusOnly := true
	for {
		e, so, err := p.unary()
		if err != nil {
			return nil, false, err
		}
		if a, ok := e.(And); ok {
			terms = append(terms, a...)
		} else {
			terms = append(terms, e)
		}
		statusOnly = statusOnly && so
		p.skipSpace()
		if p.done() || p.peek() == ')' || p.atKeyword("OR") || p.atKeyword("ORDER") {
			break
		}
		if p.atKeyword("AND") {
			p.pos += 3
			p.skipSpace()
			if p.done() {
				return nil, false, p.errAt(p.pos, "AND needs a comparison after it")
			}
		}
	}
	if len(terms) == 1 {
		return terms[0], statusOnly, nil
	}
	return terms, statusOnly, nil
}

// unary reads a comparison or an expression in parentheses.
func (p *parser) unary() (Expr, bool, error) {
	p.skipSpace()
	if p.done() {
		return nil, false, p.errAt(p.pos, "expected a comparison, such as WorkflowType = \"order\"")
	}
	if p.peek() != '(' {
		if p.atKeyword("NOT") {
			return nil, false, p.errAt(p.pos, "NOT is written inside a comparison: NOT IN, NOT BETWEEN, NOT STARTS_WITH, or !=")
		}
		return p.pred()
	}
	open := p.pos
	p.depth++
	if p.depth > maxDepth {
		return nil, false, p.errAt(open, fmt.Sprintf("parentheses nest at most %d deep", maxDepth))
	}
	p.pos++
	p.skipSpace()
	if p.peek() == ')' {
		return nil, false, p.errAt(p.pos, "empty parentheses")
	}
	e, so, err := p.or()
	if err != nil {
		return nil, false, err
	}
	p.skipSpace()
	if p.done() {
		return nil, false, p.errAt(open, "this ( has no closing )")
	}
	if p.peek() != ')' {
		return nil, false, p.errAt(p.pos, "expected ), AND or OR")
	}
	p.pos++
	p.depth--
	return e, so, nil
}

// value is one value as written.
type value struct {
	text   string
	pos    int
	quoted bool
	prefix bool // bare and ending in "*": heddle's prefix match
}

// pred reads field op values.
func (p *parser) pred() (Expr, bool, error) {
	start := p.pos
	name := p.ident()
	if name == "" {
		return nil, false, p.errAt(start, "expected a field name, such as WorkflowType or status")
	}
	field, ok := lookupField(name)
	if !ok {
		return nil, false, p.errAt(start, fmt.Sprintf("unknown field %q: want one of %s", name, fieldNames()))
	}
	p.preds++
	if p.preds > p.maxPreds {
		return nil, false, p.errAt(start, fmt.Sprintf("a query holds at most %d comparisons", maxPreds))
	}
	k := kindOf(field)
	p.skipSpace()
	opPos := p.pos
	op, ok := p.operator()
	if !ok {
		return nil, false, p.errAt(opPos, fmt.Sprintf("after %s comes an operator (%s)", name, k.opNames()))
	}
	if !k.takes(op) {
		return nil, false, p.errAt(opPos, fmt.Sprintf("%s takes the operators %s, not %s", field, k.opNames(), op))
	}
	var vals []value
	switch op {
	case OpIn, OpNotIn:
		p.skipSpace()
		if p.peek() != '(' {
			return nil, false, p.errAt(p.pos, fmt.Sprintf("%s takes a list in parentheses: %s %s (\"a\", \"b\")", op, field, op))
		}
		open := p.pos
		p.pos++
		for {
			v, err := p.value(field, false)
			if err != nil {
				return nil, false, err
			}
			vals = append(vals, v)
			if len(vals) > maxValues {
				return nil, false, p.errAt(v.pos, fmt.Sprintf("a list holds at most %d values", maxValues))
			}
			p.skipSpace()
			if p.peek() == ')' {
				p.pos++
				break
			}
			if p.peek() != ',' {
				if p.done() {
					return nil, false, p.errAt(open, "this ( has no closing )")
				}
				return nil, false, p.errAt(p.pos, "expected , or ) in the list")
			}
			p.pos++
		}
	case OpBetween, OpNotBetween:
		lo, err := p.value(field, false)
		if err != nil {
			return nil, false, err
		}
		if !p.keyword("AND") {
			p.skipSpace()
			return nil, false, p.errAt(p.pos, fmt.Sprintf("%s takes two times joined by AND: %s BETWEEN \"2026-11-01\" AND \"2026-11-02\"", op, field))
		}
		hi, err := p.value(field, false)
		if err != nil {
			return nil, false, err
		}
		vals = []value{lo, hi}
	case OpStartsWith, OpNotStartsWith:
		v, err := p.value(field, false)
		if err != nil {
			return nil, false, err
		}
		vals = []value{v}
	default:
		// One value, or heddle's list of any-of values for = and !=.
		for {
			v, err := p.value(field, op == OpEq || op == OpNe)
			if err != nil {
				return nil, false, err
			}
			vals = append(vals, v)
			if len(vals) > maxValues {
				return nil, false, p.errAt(v.pos, fmt.Sprintf("a list holds at most %d values", maxValues))
			}
			if p.peek() != ',' {
				break
			}
			if op != OpEq && op != OpNe || k == kindTime || k == kindBool {
				return nil, false, p.errAt(p.pos, fmt.Sprintf("%s %s takes one value, not a list", field, op))
			}
			p.pos++
		}
	}
	e, err := p.build(field, op, vals)
	// A status predicate that names Paused tests more than a status.
	statusOnly := k == kindStatus
	if pr, ok := e.(*Pred); ok && pr.statuses&pausedSet != 0 {
		statusOnly = false
	}
	return e, statusOnly, err
}

// operator reads an operator: a symbol or a keyword.
func (p *parser) operator() (Op, bool) {
	two := ""
	if p.pos+1 < len(p.src) {
		two = string(p.src[p.pos : p.pos+2])
	}
	switch two {
	case "!=", ">=", "<=":
		p.pos += 2
		return Op(two), true
	case "<>":
		p.pos += 2
		return OpNe, true
	case "==":
		p.pos += 2
		return OpEq, true
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
	switch {
	case p.keyword("IN"):
		return OpIn, true
	case p.keyword("BETWEEN"):
		return OpBetween, true
	case p.keyword("STARTS_WITH"):
		return OpStartsWith, true
	case p.atKeyword("NOT"):
		save := p.pos
		p.pos += 3
		switch {
		case p.keyword("IN"):
			return OpNotIn, true
		case p.keyword("BETWEEN"):
			return OpNotBetween, true
		case p.keyword("STARTS_WITH"):
			return OpNotStartsWith, true
		}
		p.pos = save
	}
	return "", false
}

// reserved are the keywords a bare value may not be: they would hide a
// mistake ("WorkflowType = AND ..."). ORDER is not among them: Order is a
// workflow type every shop has.
var reserved = []string{"AND", "OR"}

// value reads one value: quoted ('…' or "…", where a backslash escapes the
// quote and itself), or bare up to a space, a comma or a parenthesis. A
// bare value ending in "*" is a prefix when prefixOK.
func (p *parser) value(field Field, prefixOK bool) (value, error) {
	p.skipSpace()
	start := p.pos
	if p.done() {
		return value{}, p.errAt(start, fmt.Sprintf("missing value of %s", field))
	}
	if q := p.peek(); q == '"' || q == '\'' {
		p.pos++
		var b strings.Builder
		for {
			if p.done() {
				return value{}, p.errAt(start, "a quoted value has no closing quote")
			}
			r := p.src[p.pos]
			p.pos++
			switch r {
			case q:
				if b.Len() == 0 {
					return value{}, p.errAt(start, "a value must not be empty")
				}
				v := value{text: b.String(), pos: start, quoted: true}
				return v, p.check(field, v)
			case '\\':
				if p.done() || (p.peek() != '"' && p.peek() != '\'' && p.peek() != '\\') {
					return value{}, p.errAt(p.pos-1, `inside quotes a backslash escapes only ", ' and \`)
				}
				b.WriteRune(p.src[p.pos])
				p.pos++
			default:
				b.WriteRune(r)
			}
		}
	}
	for !p.done() && !unicode.IsSpace(p.peek()) && !strings.ContainsRune(",()", p.peek()) {
		if p.peek() == '"' || p.peek() == '\'' {
			return value{}, p.errAt(p.pos, "a quote inside a bare value: quote the whole value")
		}
		p.pos++
	}
	text := string(p.src[start:p.pos])
	if text == "" {
		return value{}, p.errAt(start, fmt.Sprintf("missing value of %s", field))
	}
	for _, kw := range reserved {
		if strings.EqualFold(text, kw) {
			return value{}, p.errAt(start, fmt.Sprintf("missing value of %s (%s is a keyword: quote it to mean the word)", field, kw))
		}
	}
	v := value{text: text, pos: start}
	if s, ok := strings.CutSuffix(text, "*"); ok {
		switch {
		case kindOf(field) != kindText:
			return value{}, p.errAt(start, fmt.Sprintf("%s is matched in full: a trailing \"*\" matches only workflow ids, types and queues", field))
		case !prefixOK:
			return value{}, p.errAt(start, "a trailing \"*\" is a prefix only after = or !=; use STARTS_WITH, or quote the value")
		case s == "":
			return value{}, p.errAt(start, `"*" alone matches everything: leave the comparison out`)
		}
		v.text, v.prefix = s, true
	}
	return v, p.check(field, v)
}

// check reads v as field's kind needs.
func (p *parser) check(field Field, v value) error {
	switch kindOf(field) {
	case kindStatus:
		if _, ok := statusNamed(field, v.text); !ok {
			return p.errAt(v.pos, fmt.Sprintf("%q is not a status of %s: want one of %s", v.text, field, statusNames(field)))
		}
	case kindTime:
		if _, err := parseTime(v.text, p.now); err != nil {
			return p.errAt(v.pos, err.Error())
		}
	case kindRunID:
		if n, err := strconv.ParseUint(v.text, 10, 64); err != nil || n == 0 {
			return p.errAt(v.pos, fmt.Sprintf("%q is not a run id: run ids are numbers from 1", v.text))
		}
	case kindBool:
		if _, ok := parseBool(v.text); !ok {
			return p.errAt(v.pos, fmt.Sprintf("%q is not true or false", v.text))
		}
	}
	return nil
}

// build makes the predicates of field op vals: heddle's lists and
// prefixes become IN, STARTS_WITH and their negations, joined by OR for
// = (any of them) and by AND for != (none of them).
func (p *parser) build(field Field, op Op, vals []value) (Expr, error) {
	mk := func(op Op, vs []value) *Pred {
		pr := &Pred{Field: field, Op: op}
		for _, v := range vs {
			text := v.text
			switch kindOf(field) {
			case kindStatus:
				set, _ := statusNamed(field, text)
				pr.statuses |= set
				text = canonicalStatus(field, text)
			case kindTime:
				at, _ := parseTime(text, p.now)
				pr.timesMS = append(pr.timesMS, at.UnixMilli())
			case kindRunID:
				n, _ := strconv.ParseUint(text, 10, 64)
				pr.ids = append(pr.ids, engine.JobID(n))
			case kindBool:
				pr.truth, _ = parseBool(text)
				text = strconv.FormatBool(pr.truth)
			}
			pr.Values = append(pr.Values, text)
		}
		return pr
	}
	if op != OpEq && op != OpNe {
		if (op == OpBetween || op == OpNotBetween) && mk(op, vals).timesMS[0] > mk(op, vals).timesMS[1] {
			return nil, p.errAt(vals[0].pos, fmt.Sprintf("BETWEEN takes the earlier time first: %q is after %q", vals[0].text, vals[1].text))
		}
		return mk(op, vals), nil
	}
	var exact, prefixes []value
	for _, v := range vals {
		if v.prefix {
			prefixes = append(prefixes, v)
		} else {
			exact = append(exact, v)
		}
	}
	var parts []Expr
	switch {
	case len(exact) == 1:
		parts = append(parts, mk(op, exact))
	case len(exact) > 1 && op == OpEq:
		parts = append(parts, mk(OpIn, exact))
	case len(exact) > 1:
		parts = append(parts, mk(OpNotIn, exact))
	}
	for _, v := range prefixes {
		if op == OpEq {
			parts = append(parts, mk(OpStartsWith, []value{v}))
		} else {
			parts = append(parts, mk(OpNotStartsWith, []value{v}))
		}
	}
	switch {
	case len(parts) == 1:
		return parts[0], nil
	case op == OpEq:
		return Or(parts), nil
	}
	return And(parts), nil
}

// orderBy reads ORDER BY field [ASC|DESC]; SQL's default is ASC.
func (p *parser) orderBy() (engine.ListOrder, error) {
	p.pos += len("ORDER")
	if !p.keyword("BY") {
		p.skipSpace()
		return 0, p.errAt(p.pos, "ORDER is followed by BY")
	}
	p.skipSpace()
	start := p.pos
	name := p.ident()
	f, ok := lookupField(name)
	if !ok || (f != FieldStartTime && f != FieldCloseTime) {
		return 0, p.errAt(start, "ORDER BY takes StartTime or CloseTime")
	}
	desc := false
	switch {
	case p.keyword("DESC"):
		desc = true
	case p.keyword("ASC"):
	}
	switch {
	case f == FieldStartTime && desc:
		return engine.ListStartDesc, nil
	case f == FieldStartTime:
		return engine.ListStartAsc, nil
	case desc:
		return engine.ListCloseDesc, nil
	}
	return engine.ListCloseAsc, nil
}

// parseBool reads true or false, any case.
func parseBool(text string) (bool, bool) {
	switch {
	case strings.EqualFold(text, "true"):
		return true, true
	case strings.EqualFold(text, "false"):
		return false, true
	}
	return false, false
}
