package reports

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// validate checks v (decoded JSON: map[string]any, []any, string, float64,
// bool, nil) against schema and returns the first violation, naming its
// path, or "" when v is valid. It handles the keywords the templates use
// (type, properties, required, items, enum, minItems, minLength, minimum,
// maximum, additionalProperties); a test fails a template using another.
func validate(schema map[string]any, v any, path string) string {
	if t, ok := schema["type"].(string); ok && !isType(v, t) {
		return fmt.Sprintf("%s must be %s", path, article(t))
	}
	if e, ok := enumOf(schema); ok && !slices.Contains(e, fmt.Sprint(v)) {
		return fmt.Sprintf("%s must be one of %s", path, strings.Join(e, ", "))
	}
	switch x := v.(type) {
	case string:
		if n, ok := number(schema["minLength"]); ok && float64(len(strings.TrimSpace(x))) < n {
			return path + " must not be empty"
		}
	case float64:
		if n, ok := number(schema["minimum"]); ok && x < n {
			return fmt.Sprintf("%s must be at least %v", path, n)
		}
		if n, ok := number(schema["maximum"]); ok && x > n {
			return fmt.Sprintf("%s must be at most %v", path, n)
		}
	case []any:
		if n, ok := number(schema["minItems"]); ok && float64(len(x)) < n {
			return fmt.Sprintf("%s must have at least %v items", path, n)
		}
		if items, ok := schema["items"].(map[string]any); ok {
			for i, it := range x {
				if msg := validate(items, it, fmt.Sprintf("%s[%d]", path, i)); msg != "" {
					return msg
				}
			}
		}
	case map[string]any:
		return validateObject(schema, x, path)
	}
	return ""
}

func validateObject(schema map[string]any, x map[string]any, path string) string {
	for _, r := range stringsOf(schema["required"]) {
		if _, ok := x[r]; !ok {
			return fmt.Sprintf("%s.%s is required", path, r)
		}
	}
	props, _ := schema["properties"].(map[string]any)
	keys := make([]string, 0, len(x))
	for k := range x {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		sub, ok := props[k].(map[string]any)
		if !ok {
			switch ap := schema["additionalProperties"].(type) {
			case bool:
				if !ap {
					return fmt.Sprintf("%s.%s is not allowed", path, k)
				}
			case map[string]any:
				sub = ap
			}
		}
		if sub != nil {
			if msg := validate(sub, x[k], path+"."+k); msg != "" {
				return msg
			}
		}
	}
	return ""
}

func isType(v any, t string) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == math.Trunc(f)
	case "boolean":
		_, ok := v.(bool)
		return ok
	}
	return false
}

func article(t string) string {
	switch t {
	case "object", "array", "integer":
		return "an " + t
	}
	return "a " + t
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// enumOf reads an enum as strings (the templates' enums are strings).
func enumOf(schema map[string]any) ([]string, bool) {
	if e, ok := schema["enum"]; ok {
		return stringsOf(e), true
	}
	return nil, false
}

// stringsOf reads a []string or a decoded []any of strings.
func stringsOf(v any) []string {
	switch x := v.(type) {
	case []string:
		return x
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
