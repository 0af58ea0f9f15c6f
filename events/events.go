// Package events holds the schema of every EventBridge detail-type Conclave
// emits and a sample of every trigger event, and validates details against
// their schemas. The validator covers the JSON Schema keywords the schemas
// use (type, required, properties, additionalProperties, enum); a schema
// using anything else fails validation loudly rather than passing silently.
package events

import (
	"embed"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
)

//go:embed schemas/*.json samples
var FS embed.FS

// DetailTypes lists the detail-types that have a schema.
func DetailTypes() []string {
	entries, _ := FS.ReadDir("schemas")
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".json"))
	}
	sort.Strings(out)
	return out
}

// Validate checks an event detail against the schema of its detail-type.
func Validate(detailType string, detail []byte) error {
	raw, err := FS.ReadFile("schemas/" + detailType + ".json")
	if err != nil {
		return fmt.Errorf("no schema for detail-type %q", detailType)
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		return fmt.Errorf("schema %s: %w", detailType, err)
	}
	var v any
	if err := json.Unmarshal(detail, &v); err != nil {
		return fmt.Errorf("detail is not JSON: %w", err)
	}
	return validate(schema, v, "detail")
}

var known = map[string]bool{"$schema": true, "title": true, "description": true, "type": true, "required": true, "properties": true, "additionalProperties": true, "enum": true}

func validate(schema map[string]any, v any, path string) error {
	for k := range schema {
		if !known[k] {
			return fmt.Errorf("%s: schema keyword %q is not supported by this validator", path, k)
		}
	}
	if t, ok := schema["type"].(string); ok && !hasType(v, t) {
		return fmt.Errorf("%s: want %s, got %T", path, t, v)
	}
	if enum, ok := schema["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			if e == v {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("%s: %v is not one of %v", path, v, enum)
		}
	}
	obj, isObj := v.(map[string]any)
	if !isObj {
		return nil
	}
	if req, ok := schema["required"].([]any); ok {
		for _, r := range req {
			if _, ok := obj[r.(string)]; !ok {
				return fmt.Errorf("%s: missing required %q", path, r)
			}
		}
	}
	props, _ := schema["properties"].(map[string]any)
	for k, val := range obj {
		sub, ok := props[k].(map[string]any)
		if !ok {
			if ap, ok := schema["additionalProperties"].(bool); ok && !ap {
				return fmt.Errorf("%s: unexpected property %q", path, k)
			}
			continue
		}
		if err := validate(sub, val, path+"."+k); err != nil {
			return err
		}
	}
	return nil
}

func hasType(v any, t string) bool {
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
	case "null":
		return v == nil
	}
	return false
}
