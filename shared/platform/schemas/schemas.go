// Package schemas validates decoded JSON against a JSON Schema with the one
// library the project uses for schemas (github.com/google/jsonschema-go,
// which also generates and checks the tool schemas in shared/agenttools),
// and says which value failed and why in words a client or a model can act
// on: "findings[0].severity must be one of critical, high, …", not the
// library's schema paths.
//
// It stands beside the strict request decoder of shared/platform/httpapi, which
// reads request bodies into Go types; this package checks values that have
// no Go type of their own: EventBridge details (events) and the sections of
// a JSON report (shared/work/reports).
package schemas

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Schema is a compiled JSON Schema.
type Schema struct {
	root     *jsonschema.Schema
	resolved *jsonschema.Resolved
}

// Compile reads a schema given as JSON text ([]byte, json.RawMessage) or
// as a value that encodes to it (a map[string]any). The schema's own
// `$schema` picks the draft (2020-12 when absent).
func Compile(schema any) (*Schema, error) {
	var raw []byte
	switch s := schema.(type) {
	case []byte:
		raw = s
	case json.RawMessage:
		raw = s
	default:
		var err error
		if raw, err = json.Marshal(schema); err != nil {
			return nil, fmt.Errorf("schema: %w", err)
		}
	}
	var root jsonschema.Schema
	if err := json.Unmarshal(raw, &root); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	resolved, err := root.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return &Schema{root: &root, resolved: resolved}, nil
}

// MustCompile is Compile for a schema built into the program, where an
// invalid schema is a programming error.
func MustCompile(schema any) *Schema {
	s, err := Compile(schema)
	if err != nil {
		panic(err)
	}
	return s
}

// Violation is the first value that does not match its schema: Path names
// it from the root the caller gave ("detail.status", "findings[0].title"),
// Message says what it must be.
type Violation struct {
	Path    string
	Message string
}

func (v *Violation) Error() string { return v.Path + " " + v.Message }

// Validate checks v, a decoded JSON value (map[string]any, []any, string,
// float64, bool, nil), against s. root names v in the violation's path.
// It returns nil or a *Violation.
func (s *Schema) Validate(v any, root string) error {
	err := s.resolved.Validate(v)
	if err == nil {
		return nil
	}
	return locate(s.root, v, root, err)
}

// schemaPath is one "validating /properties/a/items/properties/b: " step
// of the library's error, which names the schema that failed but not the
// value (no array index).
var schemaPath = regexp.MustCompile(`validating (/[^:]*): `)

// locate turns the library's error into a Violation: it follows the
// deepest schema path of the error through the value, and at each items
// step takes the first element that fails on its own (the library checks
// items in order and stops at the first), so the path has the index.
func locate(root *jsonschema.Schema, v any, path string, err error) error {
	msg := err.Error()
	var segs []string
	if m := schemaPath.FindAllStringSubmatch(msg, -1); len(m) > 0 {
		segs = strings.Split(strings.Trim(m[len(m)-1][1], "/"), "/")
	}
	if i := strings.LastIndex(msg, "validating "); i >= 0 {
		if j := strings.Index(msg[i:], ": "); j >= 0 {
			msg = msg[i+j+2:]
		}
	}
	s := root
	for i := 0; i < len(segs); i++ {
		switch {
		case segs[i] == "properties" && i+1 < len(segs):
			// The library writes property names unescaped into its paths.
			name := segs[i+1]
			i++
			obj, _ := v.(map[string]any)
			s, v, path = s.Properties[name], obj[name], path+"."+name
		case segs[i] == "additionalProperties":
			// The library's path has no name here: the first property
			// the schema's properties do not list that fails is the one.
			obj, _ := v.(map[string]any)
			for _, name := range sortedKeys(obj) {
				if _, listed := s.Properties[name]; !listed && fails(s.AdditionalProperties, obj[name]) {
					s, v, path = s.AdditionalProperties, obj[name], path+"."+name
					break
				}
			}
		case segs[i] == "items":
			arr, _ := v.([]any)
			for n, it := range arr {
				if fails(s.Items, it) {
					s, v, path = s.Items, it, path+"["+strconv.Itoa(n)+"]"
					break
				}
			}
		default:
			// A keyword this walk does not follow (allOf, $ref, …): the
			// path stays where it is, the message says the rest.
			return &Violation{Path: path, Message: msg}
		}
		if s == nil {
			return &Violation{Path: path, Message: msg}
		}
	}
	return explain(s, path, msg)
}

// fails reports whether v does not match s on its own.
func fails(s *jsonschema.Schema, v any) bool {
	if s == nil {
		return false
	}
	r, err := s.Resolve(nil)
	return err == nil && r.Validate(v) != nil
}

var quoted = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)

// explain words the library's message for the schema s that failed at
// path, by the keyword it starts with.
func explain(s *jsonschema.Schema, path, msg string) error {
	keyword, _, _ := strings.Cut(msg, ":")
	switch {
	case keyword == "type":
		want := s.Type
		if want == "" {
			want = strings.Join(s.Types, " or ")
		}
		return &Violation{path, "must be " + article(want)}
	case keyword == "enum":
		vals := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			vals[i] = fmt.Sprint(e)
		}
		return &Violation{path, "must be one of " + strings.Join(vals, ", ")}
	case keyword == "required":
		if m := quoted.FindStringSubmatch(msg); m != nil {
			return &Violation{path + "." + m[1], "is required"}
		}
	case strings.HasPrefix(msg, "unexpected additional properties"):
		if m := quoted.FindStringSubmatch(msg); m != nil {
			return &Violation{path + "." + m[1], "is not allowed"}
		}
	case keyword == "minItems" && s.MinItems != nil:
		return &Violation{path, fmt.Sprintf("must have at least %d item%s", *s.MinItems, plural(*s.MinItems))}
	case keyword == "maxItems" && s.MaxItems != nil:
		return &Violation{path, fmt.Sprintf("must have at most %d item%s", *s.MaxItems, plural(*s.MaxItems))}
	case keyword == "minLength" && s.MinLength != nil:
		if *s.MinLength == 1 {
			return &Violation{path, "must not be empty"}
		}
		return &Violation{path, fmt.Sprintf("must be at least %d characters long", *s.MinLength)}
	case keyword == "maxLength" && s.MaxLength != nil:
		return &Violation{path, fmt.Sprintf("must be at most %d characters long", *s.MaxLength)}
	case keyword == "pattern":
		if s.Pattern == `\S` {
			return &Violation{path, "must not be blank"}
		}
		return &Violation{path, fmt.Sprintf("must match %q", s.Pattern)}
	case keyword == "minimum" && s.Minimum != nil:
		return &Violation{path, "must be at least " + strconv.FormatFloat(*s.Minimum, 'f', -1, 64)}
	case keyword == "maximum" && s.Maximum != nil:
		return &Violation{path, "must be at most " + strconv.FormatFloat(*s.Maximum, 'f', -1, 64)}
	}
	return &Violation{path, msg}
}

func article(t string) string {
	switch t {
	case "object", "array", "integer":
		return "an " + t
	}
	return "a " + t
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// AsViolation returns err's Violation, if it is one.
func AsViolation(err error) (*Violation, bool) {
	var v *Violation
	ok := errors.As(err, &v)
	return v, ok
}
