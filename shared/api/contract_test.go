package api_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/tools/catalog"
)

type operation struct {
	Parameters  []map[string]any `yaml:"parameters"`
	RequestBody *struct {
		Content map[string]struct {
			Schema map[string]any `yaml:"schema"`
		} `yaml:"content"`
	} `yaml:"requestBody"`
	Responses map[string]map[string]any `yaml:"responses"`
}

type document struct {
	Paths      map[string]map[string]yaml.Node `yaml:"paths"`
	Components struct {
		Schemas map[string]map[string]any `yaml:"schemas"`
	} `yaml:"components"`
}

func operations(t *testing.T) (document, map[string]operation) {
	t.Helper()
	var doc document
	require.NoError(t, yaml.Unmarshal(api.OpenAPI, &doc))
	ops := map[string]operation{}
	for path, methods := range doc.Paths {
		for method, node := range methods {
			if method == "parameters" {
				continue
			}
			var op operation
			require.NoError(t, node.Decode(&op), "%s %s", method, path)
			ops[strings.ToUpper(method)+" "+path] = op
		}
	}
	return doc, ops
}

// Every operation lists every status the gateway, the authorizer and the
// shared plumbing (httpapi) can answer: new routes are held to it the day
// they are documented.
func TestEveryOperationListsTheStatusesItCanAnswer(t *testing.T) {
	_, ops := operations(t)
	public := map[string]bool{}
	for _, rt := range manifest.Routes() {
		public[rt.Route.Key()] = rt.Public
	}
	for key, op := range ops {
		has := func(code string) bool { _, ok := op.Responses[code]; return ok }
		if public[key] && strings.Contains(key, " /console") {
			// The console's files (docs/console.md): no credential, no
			// body; an unknown name is the API's JSON 404, and the
			// stage's throttle (429) and a failed invocation (API
			// Gateway's 500) apply as to any route.
			for _, code := range []string{"429", "500"} {
				assert.True(t, has(code), "%s does not document %s", key, code)
			}
			if strings.Contains(key, "{") {
				assert.Equal(t, "#/components/responses/NotFound", op.Responses["404"]["$ref"], "%s: a JSON 404", key)
			}
			continue
		}
		if public[key] {
			// The A2A agent's routes (no authorizer, docs/a2a.md): every
			// error is its function's JSON-RPC error object, a 404 for
			// an unknown agent included; no Idempotency-Key (a message
			// has its own id).
			for code, r := range op.Responses {
				if code != "200" {
					assert.Equal(t, "#/components/responses/JSONRPCError", r["$ref"], "%s: %s is a JSON-RPC error", key, code)
				}
			}
			for _, code := range []string{"404", "500", "503"} {
				assert.True(t, has(code), "%s does not document %s", key, code)
			}
			if strings.HasPrefix(key, "POST ") {
				for _, code := range []string{"401", "413", "429"} {
					assert.True(t, has(code), "%s does not document %s", key, code)
				}
			}
			continue
		}
		// Any operation: a bad parameter or a body it does not take (400),
		// no key (401), a refused key (403), a body over 64 KiB (413), the
		// team's rate or the stage's throttle (429), a dependency that did
		// not answer in time (503, shared/platform/httpapi/deadline.go).
		for _, code := range []string{"400", "401", "403", "413", "429", "503"} {
			assert.True(t, has(code), "%s does not document %s", key, code)
		}
		for _, code := range []string{"401", "403"} {
			assert.Equal(t, "#/components/responses/"+map[string]string{"401": "Unauthorized", "403": "Forbidden"}[code], op.Responses[code]["$ref"],
				"%s: %s is API Gateway's {message} shape", key, code)
		}
		if strings.Contains(key, "{") {
			assert.True(t, has("404"), "%s has path ids but no 404", key)
		}
		if strings.HasPrefix(key, "POST ") {
			// Idempotency-Key applies to every POST (httpapi.Router).
			assert.True(t, has("409"), "%s: 409 IdempotencyKeyReused / RequestInProgress", key)
			idem := false
			for _, p := range op.Parameters {
				idem = idem || p["$ref"] == "#/components/parameters/IdempotencyKey"
			}
			assert.True(t, idem, "%s does not document Idempotency-Key", key)
		}
	}
}

// Request bodies are as strict as the decoder: unknown fields are refused
// (additionalProperties: false on every object, nested ones included).
func TestRequestBodiesRefuseUnknownFields(t *testing.T) {
	doc, ops := operations(t)
	var walk func(where string, s map[string]any, seen map[string]bool)
	walk = func(where string, s map[string]any, seen map[string]bool) {
		if ref, ok := s["$ref"].(string); ok {
			name := strings.TrimPrefix(ref, "#/components/schemas/")
			if seen[name] {
				return
			}
			seen[name] = true
			walk(where+"→"+name, doc.Components.Schemas[name], seen)
			return
		}
		if s["type"] == "object" {
			props, _ := s["properties"].(map[string]any)
			if len(props) > 0 {
				assert.Equal(t, false, s["additionalProperties"], "%s: an object the API decodes strictly", where)
			}
			for name, p := range props {
				if m, ok := p.(map[string]any); ok {
					walk(where+"."+name, m, seen)
				}
			}
		}
		if items, ok := s["items"].(map[string]any); ok {
			walk(where+"[]", items, seen)
		}
	}
	for key, op := range ops {
		if op.RequestBody == nil {
			continue
		}
		for ct, c := range op.RequestBody.Content {
			assert.Equal(t, "application/json", ct, key)
			walk(key, c.Schema, map[string]bool{})
		}
	}
}

// The router's body rule comes from the document and knows every route.
func TestBodyRoutesCoverEveryRoute(t *testing.T) {
	bodies := api.BodyRoutes()
	for _, rt := range manifest.Routes() {
		_, ok := bodies[rt.Route.Key()]
		assert.True(t, ok, rt.Route.Key())
	}
	assert.True(t, bodies["POST /v1/agents"])
	assert.False(t, bodies["POST /v1/agents/{slug}/pause"])
	assert.True(t, bodies["POST /v1/tasks/{id}/cancel"], "an optional body is still a body")
}

// The tools a skill may declare are the catalog's, and every route a flag
// gates documents its 409 FeatureDisabled.
func TestToolCatalogAndGatedRoutesAreDocumented(t *testing.T) {
	doc, ops := operations(t)
	items, _ := doc.Components.Schemas["ToolList"]["items"].(map[string]any)
	var enum []string
	for _, v := range items["enum"].([]any) {
		enum = append(enum, v.(string))
	}
	assert.Equal(t, catalog.Names(), enum)
	for key := range manifest.RouteFlags {
		op, ok := ops[key]
		require.True(t, ok, key)
		assert.Contains(t, op.Responses, "409", "%s can answer 409 FeatureDisabled", key)
	}
}
