// Package servicemodel checks AWS requests against the service models that
// botocore ships (data/<service>/<version>/service-2.json[.gz]), the way an
// AWS front end checks them before a service sees them: required members,
// member types, structures, lists, maps, unions (exactly one member set),
// enums, lengths, ranges and patterns. The local cloud's edge uses it for
// the calls it answers itself (Amazon Bedrock's runtime), so a request the
// real service would refuse with a ValidationException is refused locally
// too.
//
// Only what botocore's JSON encodes is checked; rules a service documents
// in prose (Bedrock's alternating roles, for one) are the caller's.
package servicemodel

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/conclave-ai/conclave/shared/platform/clip"
)

// Model is one service model.
type Model struct {
	Metadata struct {
		Protocol       string `json:"protocol"`
		SigningName    string `json:"signingName"`
		EndpointPrefix string `json:"endpointPrefix"`
		APIVersion     string `json:"apiVersion"`
	} `json:"metadata"`
	Operations map[string]Operation `json:"operations"`
	Shapes     map[string]*Shape    `json:"shapes"`
}

// Operation is one API operation of the model.
type Operation struct {
	Name string `json:"name"`
	HTTP struct {
		Method     string `json:"method"`
		RequestURI string `json:"requestUri"`
	} `json:"http"`
	Input  *Ref `json:"input"`
	Output *Ref `json:"output"`
}

// Ref names a shape.
type Ref struct {
	Shape string `json:"shape"`
}

// Member is a structure member: its shape and, for REST protocols, where it
// travels ("uri", "header", "querystring"; "" is the body).
type Member struct {
	Shape        string `json:"shape"`
	Location     string `json:"location"`
	LocationName string `json:"locationName"`
}

// Shape is one shape of the model, as botocore writes it.
type Shape struct {
	Type     string            `json:"type"`
	Members  map[string]Member `json:"members"`
	Required []string          `json:"required"`
	Member   *Ref              `json:"member"`
	Key      *Ref              `json:"key"`
	Value    *Ref              `json:"value"`
	Min      *float64          `json:"min"`
	Max      *float64          `json:"max"`
	Pattern  string            `json:"pattern"`
	Enum     []string          `json:"enum"`
	Union    bool              `json:"union"`
	Document bool              `json:"document"`
	Payload  string            `json:"payload"`

	pattern *regexp.Regexp
}

// Load reads a service-2.json, gzipped or not, and compiles its patterns.
func Load(path string) (*Model, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if raw, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	var m Model
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for name, s := range m.Shapes {
		if s.Pattern == "" {
			continue
		}
		// Smithy patterns are ECMA 262 and unanchored; AWS front ends
		// match the whole value (Java's String.matches), so anchor them.
		re, err := regexp.Compile(`^(?:` + s.Pattern + `)$`)
		if err != nil {
			return nil, fmt.Errorf("%s: shape %s: pattern %q: %w", path, name, s.Pattern, err)
		}
		s.pattern = re
	}
	return &m, nil
}

// Find returns the newest service-2.json(.gz) of service under botocore's
// data directories below root (a virtualenv: lib/python3*/site-packages/
// botocore/data/<service>/<version>/).
func Find(root, service string) (string, error) {
	var found []string
	for _, pat := range []string{"lib/python3*/site-packages/botocore/data/" + service + "/*/service-2.json*", "botocore/data/" + service + "/*/service-2.json*"} {
		m, _ := filepath.Glob(filepath.Join(root, pat))
		found = append(found, m...)
	}
	if len(found) == 0 {
		return "", fmt.Errorf("no botocore service model of %s under %s (make venv installs botocore with moto)", service, root)
	}
	sort.Strings(found) // versions are dates: the last is the newest
	return found[len(found)-1], nil
}

// Violation is one broken constraint: where (a JSON path such as
// messages[1].content[0].toolUse.name), which rule, and why.
type Violation struct {
	Path    string
	Rule    string // required, type, unknown-member, union, enum, length, range, pattern
	Message string
}

func (v Violation) String() string {
	p := v.Path
	if p == "" {
		p = "request"
	}
	return fmt.Sprintf("%s: %s: %s", p, v.Rule, v.Message)
}

// Error is a request that breaks the model: every violation found (at most
// maxViolations).
type Error struct {
	Violations []Violation
}

func (e *Error) Error() string {
	parts := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		parts[i] = v.String()
	}
	n := len(e.Violations)
	noun := "validation error"
	if n != 1 {
		noun += "s"
	}
	return fmt.Sprintf("%d %s detected: %s", n, noun, strings.Join(parts, "; "))
}

const maxViolations = 10

// Input is a REST request as the operation's input: the URI's labels, the
// headers and the body.
type Input struct {
	URI    map[string]string
	Header map[string]string // by locationName, canonical or not
	Body   []byte
}

// ValidateInput checks a request to operation: members bound to the URI
// and headers, and the body (the payload member's shape, or the input
// structure's body members). It returns nil or an *Error.
func (m *Model) ValidateInput(operation string, in Input) error {
	op, ok := m.Operations[operation]
	if !ok || op.Input == nil {
		return fmt.Errorf("servicemodel: no input of operation %q", operation)
	}
	v := &validator{m: m}
	s := m.Shapes[op.Input.Shape]
	header := map[string]string{}
	for k, val := range in.Header {
		header[strings.ToLower(k)] = val
	}
	names := sortedKeys(s.Members)
	for _, name := range names {
		mem := s.Members[name]
		var val string
		var present bool
		switch mem.Location {
		case "uri":
			val, present = in.URI[mem.LocationName]
		case "header":
			val, present = header[strings.ToLower(mem.LocationName)]
		default:
			continue
		}
		if !present || val == "" {
			if slices.Contains(s.Required, name) {
				v.add(name, "required", "member is required")
			}
			continue
		}
		v.scalar(name, m.Shapes[mem.Shape], val)
	}
	if s.Payload != "" {
		mem := s.Members[s.Payload]
		ps := m.Shapes[mem.Shape]
		if ps.Type == "blob" || ps.Type == "string" {
			v.length(s.Payload, ps, float64(len(in.Body)))
		} else if len(in.Body) > 0 {
			v.document(s.Payload, mem.Shape, in.Body)
		}
	} else {
		body := in.Body
		if len(bytes.TrimSpace(body)) == 0 {
			body = []byte("{}")
		}
		v.body(s, body)
	}
	return v.err()
}

// ValidateShape checks a JSON document against the named shape (an output,
// for one, to check what a local stand-in answers).
func (m *Model) ValidateShape(shape string, doc []byte) error {
	if _, ok := m.Shapes[shape]; !ok {
		return fmt.Errorf("servicemodel: no shape %q", shape)
	}
	v := &validator{m: m}
	v.document("", shape, doc)
	return v.err()
}

type validator struct {
	m          *Model
	violations []Violation
}

func (v *validator) add(path, rule, format string, args ...any) {
	if len(v.violations) < maxViolations {
		v.violations = append(v.violations, Violation{Path: path, Rule: rule, Message: fmt.Sprintf(format, args...)})
	}
}

func (v *validator) err() error {
	if len(v.violations) == 0 {
		return nil
	}
	return &Error{Violations: v.violations}
}

func (v *validator) document(path, shape string, doc []byte) {
	val, err := decode(doc)
	if err != nil {
		v.add(path, "type", "body is not valid JSON: %v", err)
		return
	}
	v.value(path, shape, val)
}

// body checks the input structure's body members (those with no location).
func (v *validator) body(s *Shape, doc []byte) {
	val, err := decode(doc)
	if err != nil {
		v.add("", "type", "body is not valid JSON: %v", err)
		return
	}
	obj, ok := val.(map[string]any)
	if !ok {
		v.add("", "type", "body must be a JSON object, not %s", jsonType(val))
		return
	}
	body := &Shape{Type: "structure", Members: map[string]Member{}}
	for name, mem := range s.Members {
		if mem.Location == "" {
			body.Members[name] = mem
			if slices.Contains(s.Required, name) {
				body.Required = append(body.Required, name)
			}
		}
	}
	v.structure("", body, obj)
}

func decode(doc []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var val any
	if err := dec.Decode(&val); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return val, nil
}

func join(path, member string) string {
	if path == "" {
		return member
	}
	return path + "." + member
}

// value checks val against the shape shapeName at path.
//
// Kept whole: one switch over the service model's shape types, each case
// short; split, a reader would jump between the cases of one switch.
func (v *validator) value(path, shapeName string, val any) {
	s, ok := v.m.Shapes[shapeName]
	if !ok {
		v.add(path, "type", "unknown shape %s in the service model", shapeName)
		return
	}
	if s.Document {
		return // any JSON value
	}
	switch s.Type {
	case "structure":
		obj, ok := val.(map[string]any)
		if !ok {
			v.add(path, "type", "must be an object (%s), not %s", shapeName, jsonType(val))
			return
		}
		v.structure(path, s, obj)
	case "list":
		arr, ok := val.([]any)
		if !ok {
			v.add(path, "type", "must be an array, not %s", jsonType(val))
			return
		}
		v.length(path, s, float64(len(arr)))
		for i, el := range arr {
			v.value(fmt.Sprintf("%s[%d]", path, i), s.Member.Shape, el)
		}
	case "map":
		obj, ok := val.(map[string]any)
		if !ok {
			v.add(path, "type", "must be an object (map), not %s", jsonType(val))
			return
		}
		v.length(path, s, float64(len(obj)))
		for _, k := range sortedKeys(obj) {
			v.value(path+"{key}", s.Key.Shape, k)
			v.value(fmt.Sprintf("%s[%q]", path, k), s.Value.Shape, obj[k])
		}
	case "string":
		str, ok := val.(string)
		if !ok {
			v.add(path, "type", "must be a string, not %s", jsonType(val))
			return
		}
		v.scalar(path, s, str)
	case "integer", "long", "float", "double":
		n, ok := val.(json.Number)
		if !ok {
			v.add(path, "type", "must be a number (%s), not %s", s.Type, jsonType(val))
			return
		}
		f, err := n.Float64()
		if err != nil {
			v.add(path, "type", "must be a number (%s): %v", s.Type, err)
			return
		}
		if (s.Type == "integer" || s.Type == "long") && f != math.Trunc(f) {
			v.add(path, "type", "must be an integer (%s), not %s", s.Type, n)
			return
		}
		if s.Type == "integer" && (f > math.MaxInt32 || f < math.MinInt32) {
			v.add(path, "range", "%s is out of a 32-bit integer's range", n)
			return
		}
		v.rangeOf(path, s, f)
	case "boolean":
		if _, ok := val.(bool); !ok {
			v.add(path, "type", "must be a boolean, not %s", jsonType(val))
		}
	case "blob":
		str, ok := val.(string)
		if !ok {
			v.add(path, "type", "must be a base64 string (blob), not %s", jsonType(val))
			return
		}
		b, err := base64.StdEncoding.DecodeString(str)
		if err != nil {
			v.add(path, "type", "must be base64: %v", err)
			return
		}
		v.length(path, s, float64(len(b)))
	case "timestamp":
		switch val.(type) {
		case json.Number, string:
		default:
			v.add(path, "type", "must be a timestamp (number or string), not %s", jsonType(val))
		}
	default:
		v.add(path, "type", "shape %s has type %s, which this validator does not know", shapeName, s.Type)
	}
}

func (v *validator) structure(path string, s *Shape, obj map[string]any) {
	for _, name := range s.Required {
		if obj[name] == nil {
			v.add(join(path, name), "required", "member is required")
		}
	}
	set := 0
	for _, name := range sortedKeys(obj) {
		val := obj[name]
		mem, ok := s.Members[name]
		if !ok {
			v.add(join(path, name), "unknown-member", "not a member of this structure (members: %s)", strings.Join(sortedKeys(s.Members), ", "))
			continue
		}
		if val == nil {
			continue // null is absent, as the SDKs send it
		}
		set++
		v.value(join(path, name), mem.Shape, val)
	}
	if s.Union && set != 1 {
		v.add(path, "union", "exactly one member must be set, not %d (members: %s)", set, strings.Join(sortedKeys(s.Members), ", "))
	}
}

func (v *validator) scalar(path string, s *Shape, str string) {
	if s.Type != "string" {
		return // a header or label of another type: the SDK formats it
	}
	if len(s.Enum) > 0 && !slices.Contains(s.Enum, str) {
		v.add(path, "enum", "%q is not one of [%s]", clip.Clip(str, 60), strings.Join(s.Enum, ", "))
		return
	}
	v.length(path, s, float64(utf8.RuneCountInString(str)))
	if s.pattern != nil && !s.pattern.MatchString(str) {
		v.add(path, "pattern", "%q does not match %s", clip.Clip(str, 60), s.Pattern)
	}
}

func (v *validator) length(path string, s *Shape, n float64) {
	if s.Min != nil && n < *s.Min {
		v.add(path, "length", "length %v is below the minimum %v", n, *s.Min)
	}
	if s.Max != nil && n > *s.Max {
		v.add(path, "length", "length %v is above the maximum %v", n, *s.Max)
	}
}

func (v *validator) rangeOf(path string, s *Shape, f float64) {
	if s.Min != nil && f < *s.Min {
		v.add(path, "range", "%v is below the minimum %v", f, *s.Min)
	}
	if s.Max != nil && f > *s.Max {
		v.add(path, "range", "%v is above the maximum %v", f, *s.Max)
	}
}

func jsonType(val any) string {
	switch val.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", val)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
