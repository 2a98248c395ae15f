package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/heddlewf/heddle/engine"
	"github.com/vmihailenco/msgpack/v5"
)

// format is a body encoding.
type format int

const (
	formatJSON format = iota
	formatMsgpack
)

// The media types of the two formats.
const (
	contentJSON    = "application/json"
	contentMsgpack = "application/msgpack"
)

func (f format) contentType() string {
	if f == formatMsgpack {
		return contentMsgpack
	}
	return contentJSON
}

// parseFormat recognises a media type (parameters ignored). msgpack has
// gone by several names; all of them are accepted.
func parseFormat(mediaType string) (format, bool) {
	mt, _, err := mime.ParseMediaType(mediaType)
	if err != nil {
		return formatJSON, false
	}
	switch mt {
	case contentJSON, "text/json":
		return formatJSON, true
	case contentMsgpack, "application/x-msgpack", "application/vnd.msgpack":
		return formatMsgpack, true
	}
	return formatJSON, false
}

// requestFormat is the format of r's body, as its Content-Type names it.
// A body without one is refused (415), not taken for JSON: a browser sends
// a body without a type, or as text or a form, to any site without asking
// it first (no CORS preflight), so a page of another site could otherwise
// drive a server that asks for no token.
func requestFormat(r *http.Request) (format, error) {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return formatJSON, fmt.Errorf("%w: the request body has no Content-Type; send it as %s or %s (curl: -H 'Content-Type: application/json')",
			ErrUnsupportedMediaType, contentJSON, contentMsgpack)
	}
	f, ok := parseFormat(ct)
	if !ok {
		return formatJSON, fmt.Errorf("%w: Content-Type %q is neither %s nor %s (curl -d sends a form: add -H 'Content-Type: application/json')",
			ErrUnsupportedMediaType, ct, contentJSON, contentMsgpack)
	}
	return f, nil
}

// responseFormat is the format r's answer is written in: the first type
// of its Accept header this package knows, else its Content-Type's, else JSON.
func responseFormat(r *http.Request) format {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if f, ok := parseFormat(strings.TrimSpace(part)); ok {
			return f
		}
	}
	if f, ok := parseFormat(r.Header.Get("Content-Type")); ok {
		return f
	}
	return formatJSON
}

// decodeBody decodes one value of v's type from b. The whole body must be
// that one value. Errors wrap engine.ErrInvalidCommand and name the type
// expected and what was wrong.
func decodeBody(f format, b []byte, v any) error {
	what := typeName(v)
	if len(bytes.TrimSpace(b)) == 0 {
		return fmt.Errorf("%w: the request body is empty; want a %s", engine.ErrInvalidCommand, what)
	}
	if f == formatMsgpack {
		// The decoder trusts the lengths it reads and recurses without
		// bound, so the bytes are checked first: a few crafted bytes must
		// not make it allocate gigabytes or overflow the stack.
		if err := checkMsgpack(b); err != nil {
			return fmt.Errorf("%w: the request body is not a valid msgpack %s: %v", engine.ErrInvalidCommand, what, err)
		}
		if err := msgpack.Unmarshal(b, v); err != nil {
			return fmt.Errorf("%w: the request body is not a valid msgpack %s: %v", engine.ErrInvalidCommand, what, err)
		}
		return nil
	}
	// JSON is UTF-8 text. Go's decoder would turn bytes that are not
	// into U+FFFD in silence, so two different ids would arrive as one;
	// they are refused instead, as the engine refuses such names in msgpack.
	if !utf8.Valid(b) {
		return fmt.Errorf("%w: the request body is not valid UTF-8 (at byte %d): a JSON %s is UTF-8 text", engine.ErrInvalidCommand, invalidUTF8At(b), what)
	}
	if len(b) > streamJSONMax {
		return decodeLargeJSON(b, v, what, blankStringsOver)
	}
	return decodeStrictJSON(b, v, what)
}

// invalidUTF8At returns the offset of the first byte of b that does not
// start a valid UTF-8 sequence.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// decodeStrictJSON decodes b into v with a json.Decoder, the only decoder
// of the standard library that refuses unknown fields: a person's
// misspelt field would otherwise be dropped in silence and reported, if at
// all, as a missing one. The Decoder copies what it reads into a buffer it
// grows by doubling, so it allocates about five times the body's size.
func decodeStrictJSON(b []byte, v any, what string) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: the request body is not a valid JSON %s: %v", engine.ErrInvalidCommand, what, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: the request body holds more than one JSON %s", engine.ErrInvalidCommand, what)
	}
	return nil
}

// encodeBody encodes v in format f.
func encodeBody(f format, v any) ([]byte, error) {
	if f == formatMsgpack {
		return msgpack.Marshal(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// typeName names the type v points to, for error messages.
func typeName(v any) string {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Name() == "" {
		return "value"
	}
	if n, ok := wireTypeNames[t]; ok {
		return n
	}
	return t.Name()
}

// wireTypeNames are the names the errors give the review tasks' bodies:
// those their Go types had before they were renamed from Task to Review.
// The errors' texts are on the wire, and a Go rename must not change them.
var wireTypeNames = map[reflect.Type]string{
	reflect.TypeFor[engine.CreateReview]():          "CreateTask",
	reflect.TypeFor[engine.ReviewCommand]():         "TaskCommand",
	reflect.TypeFor[engine.ClaimReviews]():          "ClaimTasks",
	reflect.TypeFor[engine.ReviewReport]():          "TaskReport",
	reflect.TypeFor[engine.ReviewHeartbeat]():       "TaskHeartbeat",
	reflect.TypeFor[engine.ReviewResult]():          "TaskResult",
	reflect.TypeFor[engine.ClaimReviewsResult]():    "ClaimTasksResult",
	reflect.TypeFor[engine.ReviewHeartbeatResult](): "TaskHeartbeatResult",
	reflect.TypeFor[engine.Review]():                "Task",
	reflect.TypeFor[ReviewList]():                   "TaskList",
	reflect.TypeFor[ReviewHistory]():                "TaskHistory",
}
