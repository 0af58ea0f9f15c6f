package httpapi

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
)

// decodeStrict reads body (one JSON object, nothing after it) into v, which
// must point to a struct. It is as strict as the OpenAPI document's
// schemas: besides refusing what encoding/json refuses (bad syntax, wrong
// types, unknown fields), it refuses what encoding/json would quietly accept
// and the document forbids — a top-level value that is not an object
// (`null` included), `null` for a typed field, a field spelled in another
// case (`{"NAME": …}`), a fractional or out-of-range integer, a number the
// table cannot store (anywhere, metadata included). Errors name the
// field by its JSON path (`skills[0].name`) and the JSON type expected, never
// a Go type.
func decodeStrict(body string, v any) error {
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return syntaxError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return apperr.Invalid("body", "body must hold exactly one JSON object")
	}
	if _, ok := raw.(map[string]any); !ok {
		return apperr.Invalid("body", "body must be a JSON object")
	}
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return fmt.Errorf("decode into non-pointer %T", v)
	}
	if err := check(raw, t.Elem(), ""); err != nil {
		return err
	}
	// The shape is right; encoding/json now fills v (custom unmarshalers
	// such as time.Time's run here, and report their own refusal).
	if err := json.Unmarshal([]byte(body), v); err != nil {
		return unmarshalError(err)
	}
	return nil
}

func syntaxError(err error) error {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return apperr.Invalid("body", "body is not valid JSON (at byte %d)", syn.Offset)
	}
	return apperr.Invalid("body", "body is not valid JSON")
}

// unmarshalError words what encoding/json refused after check accepted the
// shape: only a custom unmarshaler (a time, an enum) can get here.
func unmarshalError(err error) error {
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) && typ.Field != "" {
		return apperr.Invalid(typ.Field, "%s must be %s", typ.Field, jsonType(typ.Type))
	}
	return apperr.Invalid("body", "body has a value that is not valid")
}

// Nullable marks a type whose JSON null is a value of its own, where
// every other field refuses null (a client that sends null almost always
// meant something else): a routing evaluation's expected agent, where
// null is "nobody should take this message".
type Nullable interface{ NullIsAValue() }

var nullableType = reflect.TypeFor[Nullable]()

var (
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
)

// check walks the decoded JSON value against the Go type it will be
// decoded into.
//
// Kept whole: one switch over the kinds a Go type can take, each case a few
// lines; the recursion reads in one place.
func check(val any, t reflect.Type, path string) error {
	name := path
	if name == "" {
		name = "body"
	}
	if t.Kind() == reflect.Interface {
		return checkFree(val, path) // any JSON value, null included (free-form metadata)
	}
	if val == nil {
		if t.Implements(nullableType) || reflect.PointerTo(t).Implements(nullableType) {
			return nil // null is one of its values
		}
		return apperr.Invalid(name, "%s must not be null", name)
	}
	if t.Kind() == reflect.Pointer {
		return check(val, t.Elem(), path)
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		// A string the type parses (time.Time: RFC 3339).
		s, ok := val.(string)
		if !ok {
			return apperr.Invalid(name, "%s must be a string", name)
		}
		if err := reflect.New(t).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			if t == reflect.TypeFor[time.Time]() {
				return apperr.Invalid(name, "%s must be an RFC 3339 date-time, e.g. 2026-11-01T00:00:00Z", name)
			}
			return apperr.Invalid(name, "%s is not valid", name)
		}
		return nil
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		return nil // the type decides (and refuses) itself
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := val.(map[string]any)
		if !ok {
			return apperr.Invalid(name, "%s must be an object", name)
		}
		fields := structFields(t)
		for k, fv := range obj {
			f, ok := fields[k]
			if !ok {
				field := join(path, k)
				if k == "" {
					field = name
				}
				return apperr.Invalid(field, "unknown field %q", join(path, k))
			}
			if err := check(fv, f.typ, join(path, k)); err != nil {
				return err
			}
		}
	case reflect.Map:
		obj, ok := val.(map[string]any)
		if !ok {
			return apperr.Invalid(name, "%s must be an object", name)
		}
		for k, fv := range obj {
			if err := check(fv, t.Elem(), join(path, k)); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		arr, ok := val.([]any)
		if !ok {
			return apperr.Invalid(name, "%s must be an array", name)
		}
		if t.Kind() == reflect.Array && len(arr) > t.Len() {
			return apperr.Invalid(name, "%s must have at most %d items", name, t.Len())
		}
		for i, ev := range arr {
			if err := check(ev, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.String:
		if _, ok := val.(string); !ok {
			return apperr.Invalid(name, "%s must be a string", name)
		}
	case reflect.Bool:
		if _, ok := val.(bool); !ok {
			return apperr.Invalid(name, "%s must be a boolean", name)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := val.(json.Number)
		if !ok {
			return apperr.Invalid(name, "%s must be an integer", name)
		}
		i, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil || reflect.Zero(t).OverflowInt(i) {
			return apperr.Invalid(name, "%s must be an integer (without fraction or exponent) in range", name)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := val.(json.Number)
		if !ok {
			return apperr.Invalid(name, "%s must be an integer", name)
		}
		u, err := strconv.ParseUint(n.String(), 10, 64)
		if err != nil || reflect.Zero(t).OverflowUint(u) {
			return apperr.Invalid(name, "%s must be a non-negative integer in range", name)
		}
	case reflect.Float32, reflect.Float64:
		n, ok := val.(json.Number)
		if !ok {
			return apperr.Invalid(name, "%s must be a number", name)
		}
		f, err := strconv.ParseFloat(n.String(), 64)
		if err != nil || math.IsInf(f, 0) || reflect.Zero(t).OverflowFloat(f) || !storable(f) {
			return apperr.Invalid(name, "%s must be a number in range (0, or a magnitude from 1e-130 to 9.99e125)", name)
		}
	default:
		return apperr.Invalid(name, "%s has an unsupported value", name)
	}
	return nil
}

// checkFree walks a free-form value (metadata) for numbers the table
// cannot store; any other JSON value is accepted.
func checkFree(val any, path string) error {
	switch v := val.(type) {
	case json.Number:
		if f, err := strconv.ParseFloat(v.String(), 64); err != nil || !storable(f) {
			name := path
			if name == "" {
				name = "body"
			}
			return apperr.Invalid(name, "%s must be a number in range (0, or a magnitude from 1e-130 to 9.99e125)", name)
		}
	case map[string]any:
		for k, fv := range v {
			if err := checkFree(fv, join(path, k)); err != nil {
				return err
			}
		}
	case []any:
		for i, ev := range v {
			if err := checkFree(ev, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// storable reports whether DynamoDB can store f: 0, or a magnitude from
// 1e-130 to 9.99e125. Any other number failed the write with a 500 after
// the request had been accepted (the contract test found 1.1e-308 in a
// personality, which the document's 0..1 allows).
func storable(f float64) bool {
	a := math.Abs(f)
	return a == 0 || (a >= 1e-130 && a <= 9.99e125)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// jsonType names the JSON type a Go type is decoded from.
func jsonType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		if reflect.PointerTo(t).Implements(textUnmarshaler) {
			return "a string"
		}
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a valid value"
}

type fieldInfo struct{ typ reflect.Type }

var fieldCache sync.Map // reflect.Type → map[string]fieldInfo

// structFields maps the exact JSON names of t's fields (embedded structs
// flattened, as encoding/json does) to their types.
func structFields(t reflect.Type) map[string]fieldInfo {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]fieldInfo)
	}
	m := map[string]fieldInfo{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" {
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if _, dup := m[name]; !dup {
				m[name] = fieldInfo{typ: f.Type}
			}
		}
	}
	walk(t)
	fieldCache.Store(t, m)
	return m
}
