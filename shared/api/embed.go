package api

import (
	_ "embed"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// OpenAPI is the API's OpenAPI 3 document; a test keeps it equal to the
// manifest's routes.
//
//go:embed openapi.yaml
var OpenAPI []byte

// BodyRoutes maps every documented route key ("POST /v1/agents") to
// whether its operation has a requestBody. The router refuses a body on
// the others (httpapi.Router.Bodies), so the document, not each handler,
// says which routes take one: a new route is covered the day it is
// documented.
var BodyRoutes = sync.OnceValue(func() map[string]bool {
	var doc struct {
		Paths map[string]map[string]yaml.Node `yaml:"paths"`
	}
	if err := yaml.Unmarshal(OpenAPI, &doc); err != nil {
		panic("openapi.yaml: " + err.Error()) // embedded and tested: cannot happen
	}
	out := map[string]bool{}
	for path, ops := range doc.Paths {
		for method, node := range ops {
			if method == "parameters" {
				continue
			}
			var op struct {
				RequestBody any `yaml:"requestBody"`
			}
			if err := node.Decode(&op); err != nil {
				panic("openapi.yaml: " + err.Error())
			}
			out[strings.ToUpper(method)+" "+path] = op.RequestBody != nil
		}
	}
	return out
})
