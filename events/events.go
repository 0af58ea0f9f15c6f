// Package events holds the schema of every EventBridge detail-type Conclave
// emits and a sample of every trigger event, and validates details against
// their schemas with the project's one JSON Schema validator
// (shared/platform/schemas, over github.com/google/jsonschema-go): every keyword of
// draft 2020-12 holds, so a schema can use any of them.
package events

import (
	"embed"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/conclave-ai/conclave/shared/platform/schemas"
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

// StreamOnly are the detail types stored on a resumable stream only
// (shared/platform/streams: a conversation's messages), never published on the
// bus; their schemas say so.
var StreamOnly = []string{"MessagePosted", "ResultPosted"}

// BusDetailTypes lists the detail-types published on the bus: those with
// a schema but StreamOnly.
func BusDetailTypes() []string {
	var out []string
	for _, dt := range DetailTypes() {
		if !slices.Contains(StreamOnly, dt) {
			out = append(out, dt)
		}
	}
	return out
}

// Validate checks an event detail against the schema of its detail-type.
// A violation names the field from "detail" (detail.status must be one of
// …).
func Validate(detailType string, detail []byte) error {
	schema, ok := compiled()[detailType]
	if !ok {
		return fmt.Errorf("no schema for detail-type %q", detailType)
	}
	var v any
	if err := json.Unmarshal(detail, &v); err != nil {
		return fmt.Errorf("detail is not JSON: %w", err)
	}
	return schema.Validate(v, "detail")
}

// compiled holds every detail-type's schema, compiled once; the schemas
// are embedded, so one that does not compile is a programming error that
// any test of the package finds.
var compiled = sync.OnceValue(func() map[string]*schemas.Schema {
	out := map[string]*schemas.Schema{}
	for _, dt := range DetailTypes() {
		raw, err := FS.ReadFile("schemas/" + dt + ".json")
		if err != nil {
			panic(err)
		}
		s, err := schemas.Compile(raw)
		if err != nil {
			panic(fmt.Sprintf("events: schema %s: %v", dt, err))
		}
		out[dt] = s
	}
	return out
})
