package agenttools

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
)

// Every tool's input is one Go type, the type its handler decodes: the
// schema the model receives is generated from it (jsonschema.For), with
// each field's description from its `jsonschema` tag, required fields
// from the fields without omitempty, no additional properties, and the
// enums and bounds the type states in its constrain method (from the
// domain's own lists and limits: a struct tag cannot name a Go constant).
// The call's arguments are validated against the same schema (the same
// library) before the handler runs: one source of truth for what the model
// is told and what the tool accepts.

// constrainer is an input type stating its enums and bounds.
type constrainer interface {
	constrain(c constraints)
}

// constraints sets enums and bounds on a generated schema's properties.
type constraints struct{ s *jsonschema.Schema }

// prop is the schema of a property by dotted path; a path through an
// array names its items' property ("participants.role"). A path the type
// does not have is a programming error: it panics at start-up (the
// catalog is built in a package variable and a test builds it).
func (c constraints) prop(path string) *jsonschema.Schema {
	s := c.s
	for _, name := range strings.Split(path, ".") {
		if s.Items != nil {
			s = s.Items
		}
		next, ok := s.Properties[name]
		if !ok {
			panic(fmt.Sprintf("agenttools: schema has no property %q", path))
		}
		s = next
	}
	return s
}

func (c constraints) enum(path string, values ...string) {
	p := c.prop(path)
	p.Enum = nil
	for _, v := range values {
		p.Enum = append(p.Enum, v)
	}
}

// length bounds a string property (min 0 leaves the minimum out).
func (c constraints) length(path string, minLen, maxLen int) {
	p := c.prop(path)
	if minLen > 0 {
		p.MinLength = jsonschema.Ptr(minLen)
	}
	p.MaxLength = jsonschema.Ptr(maxLen)
}

// slugPattern is what a slug is made of (agents.ValidSlug, the API
// document's AgentSlug).
const slugPattern = "^[a-z][a-z0-9-]{1,38}[a-z0-9]$"

// slug bounds a property naming an agent.
func (c constraints) slug(path string) {
	p := c.prop(path)
	p.MinLength, p.MaxLength, p.Pattern = jsonschema.Ptr(3), jsonschema.Ptr(40), slugPattern
}

func (c constraints) between(path string, minValue, maxValue float64) {
	p := c.prop(path)
	p.Minimum, p.Maximum = jsonschema.Ptr(minValue), jsonschema.Ptr(maxValue)
}

// items bounds an array property and, when itemMax > 0, each string item.
func (c constraints) items(path string, maxItems, itemMax int) {
	p := c.prop(path)
	p.MaxItems = jsonschema.Ptr(maxItems)
	if itemMax > 0 {
		p.Items.MinLength, p.Items.MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(itemMax)
	}
}

// def is one tool: what the model is told, and what runs.
type def struct {
	spec     models.Tool
	resolved *jsonschema.Resolved
	run      func(t *Tools, ctx context.Context, c caller, input []byte) (result, error)
}

// define builds the tool name whose input is T. It panics when T cannot
// be a tool's input (a programming error, caught by any test of the
// package).
func define[T any](name, description string, run func(t *Tools, ctx context.Context, c caller, in T) (result, error)) def {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("agenttools: %s: %v", name, err))
	}
	// A model omits an optional argument; "null" is not one of its values.
	walk(s, func(sub *jsonschema.Schema) {
		if i := slices.Index(sub.Types, "null"); i >= 0 && len(sub.Types) == 2 {
			sub.Type, sub.Types = sub.Types[1-i], nil
		}
	})
	var zero T
	if k, ok := any(zero).(constrainer); ok {
		k.constrain(constraints{s})
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("agenttools: %s: %v", name, err))
	}
	raw, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("agenttools: %s: %v", name, err))
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		panic(fmt.Sprintf("agenttools: %s: %v", name, err))
	}
	return def{
		spec:     models.Tool{Name: name, Description: description, Schema: schema},
		resolved: resolved,
		run: func(t *Tools, ctx context.Context, c caller, input []byte) (result, error) {
			var in T
			if err := json.Unmarshal(input, &in); err != nil {
				// Validated first: only a value the schema cannot tell
				// apart (a number too large for an int) gets here.
				return invalidArguments("", err.Error())
			}
			return run(t, ctx, c, in)
		},
	}
}

// walk calls f on s and every schema of its properties and items (the
// only keywords a generated input schema nests).
func walk(s *jsonschema.Schema, f func(*jsonschema.Schema)) {
	if s == nil {
		return
	}
	f(s)
	for _, p := range s.Properties {
		walk(p, f)
	}
	walk(s.Items, f)
}

// InvalidArguments is the tool result of a call whose arguments do not
// match the tool's schema: the model reads which field is wrong and why,
// and may call again. Field is a dotted path ("participants.role"), empty
// when the arguments are not a JSON object at all.
type InvalidArguments struct {
	Error   string `json:"error"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// ErrInvalidArguments is InvalidArguments.Error.
const ErrInvalidArguments = "invalid_arguments"

func invalidArguments(field, message string) (result, error) {
	b, _ := json.Marshal(InvalidArguments{Error: ErrInvalidArguments, Field: field, Message: message})
	return text(string(b))
}

// validate checks input against the tool's schema; the result is the tool
// error to answer with, if any.
func (d def) validate(input string) (result, bool) {
	if strings.TrimSpace(input) == "" {
		input = "{}" // a call without arguments (some providers send none)
	}
	var v any
	if err := json.Unmarshal([]byte(input), &v); err != nil {
		res, _ := invalidArguments("", "the arguments are not valid JSON: "+err.Error())
		return res, false
	}
	if err := d.resolved.Validate(v); err != nil {
		field, msg := describe(err)
		res, _ := invalidArguments(field, msg)
		return res, false
	}
	return result{}, true
}

var (
	// schemaPath is a "validating /properties/a/items/properties/b" step
	// of the library's error: the schema the failing value was checked
	// against.
	schemaPath = regexp.MustCompile(`validating (/[^:]*): `)
	// namedProps are the properties a required or additionalProperties
	// failure names (["a" "b"]).
	namedProps = regexp.MustCompile(`^(?:required: missing properties|unexpected additional properties):? \[(.*)\]$`)
	quoted     = regexp.MustCompile(`"([^"]*)"`)
)

// describe turns the validator's error into the field it is about and a
// message without the schema paths. The library reports no field, only
// the path of the schema that failed: its properties are the field's.
func describe(err error) (field, message string) {
	s := err.Error()
	var parts []string
	if m := schemaPath.FindAllStringSubmatch(s, -1); len(m) > 0 {
		for _, seg := range strings.Split(m[len(m)-1][1], "/") {
			switch seg {
			case "", "properties", "items":
			default:
				parts = append(parts, seg)
			}
		}
	}
	message = s
	if i := strings.LastIndex(s, "validating "); i >= 0 {
		if j := strings.Index(s[i:], ": "); j >= 0 {
			message = s[i+j+2:]
		}
	}
	if m := namedProps.FindStringSubmatch(message); m != nil {
		names := quoted.FindAllStringSubmatch(m[1], -1)
		if len(names) > 0 {
			parts = append(parts, names[0][1])
		}
		if strings.HasPrefix(message, "required") {
			message = "required argument missing"
		} else {
			message = "not an argument of this tool"
		}
	}
	return strings.Join(parts, "."), message
}

// ValidateArguments checks a call's arguments against tool's schema (the
// one its model receives): a human's edited arguments of an approval
// (approvals.ArgumentsValidator). EINVALID names the field as
// arguments.<field>.
func ValidateArguments(tool string, arguments []byte) error {
	d, ok := defs[tool]
	if !ok {
		return apperr.Invalid("arguments", "tool %q has no schema", tool)
	}
	res, valid := d.validate(string(arguments))
	if valid {
		return nil
	}
	var ia InvalidArguments
	_ = json.Unmarshal([]byte(res.text), &ia)
	field := "arguments"
	if ia.Field != "" {
		field += "." + ia.Field
	}
	return apperr.Invalid(field, "%s", ia.Message)
}
