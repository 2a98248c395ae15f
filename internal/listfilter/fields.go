package listfilter

import "strings"

// Field is a property of a run that a term tests.
type Field string

// The fields of the language.
const (
	FieldStatus  Field = "status"
	FieldType    Field = "type"
	FieldQueue   Field = "queue"
	FieldID      Field = "id"
	FieldCreated Field = "created"
	FieldClosed  Field = "closed"
	// FieldPaused is true of an open run that is paused (an operator's
	// pause, or an activity task its run's pause holds).
	FieldPaused Field = "paused"
)

// Op is a term's comparison.
type Op string

// The operators of the language.
const (
	OpEq Op = "="
	OpNe Op = "!="
	OpGt Op = ">"
	OpGe Op = ">="
	OpLt Op = "<"
	OpLe Op = "<="
)

// kind groups the fields that take the same operators and values.
type kind uint8

const (
	kindText   kind = iota // = and !=, a list of strings, "*" prefixes
	kindStatus             // = and !=, a list of status names
	kindTime               // > >= < <=, one time
	kindBool               // = and !=, true or false
)

// fieldKinds is the language's table of fields: every field, its kind.
var fieldKinds = map[Field]kind{
	FieldStatus:  kindStatus,
	FieldType:    kindText,
	FieldQueue:   kindText,
	FieldID:      kindText,
	FieldCreated: kindTime,
	FieldClosed:  kindTime,
	FieldPaused:  kindBool,
}

// fieldAliases are the other names a field is written by.
var fieldAliases = map[string]Field{
	"workflow_id": FieldID,
	"task_queue":  FieldQueue,
}

// kindOps is which operators each kind of field takes.
var kindOps = map[kind][]Op{
	kindText:   {OpEq, OpNe},
	kindStatus: {OpEq, OpNe},
	kindTime:   {OpGt, OpGe, OpLt, OpLe},
	kindBool:   {OpEq, OpNe},
}

// Fields lists the fields in the order the documentation gives them.
func Fields() []Field {
	return []Field{FieldStatus, FieldType, FieldQueue, FieldID, FieldCreated, FieldClosed, FieldPaused}
}

// lookupField returns the field a name (any case) stands for.
func lookupField(name string) (Field, bool) {
	n := strings.ToLower(name)
	if f, ok := fieldAliases[n]; ok {
		return f, true
	}
	f := Field(n)
	_, ok := fieldKinds[f]
	return f, ok
}

func (k kind) takes(op Op) bool {
	for _, o := range kindOps[k] {
		if o == op {
			return true
		}
	}
	return false
}

func (k kind) opNames() string {
	var names []string
	for _, o := range kindOps[k] {
		names = append(names, string(o))
	}
	return strings.Join(names, " ")
}

func fieldNames() string {
	var names []string
	for _, f := range Fields() {
		names = append(names, string(f))
	}
	return strings.Join(names, ", ")
}
