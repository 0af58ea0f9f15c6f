package app_test

import (
	"io"
	"log/slog"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/app"
	"github.com/conclave-ai/conclave/shared/manifest"
)

func newApp() *app.App {
	return app.New(app.Config{Stage: "test", TableName: "t", BusName: "b"}, aws.Config{Region: "us-east-1"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

func TestEveryManifestFunctionHasAHandler(t *testing.T) {
	a := newApp()
	for _, f := range manifest.Functions {
		h, err := a.Handler(f.Name)
		require.NoError(t, err, f.Name)
		assert.NotNil(t, h, f.Name)
	}
	_, err := a.Handler("nope")
	assert.Error(t, err)
}

// Each HTTP function serves exactly the routes the manifest gives it.
func TestRoutersServeManifestRoutes(t *testing.T) {
	a := newApp()
	for _, f := range manifest.Functions {
		if f.Trigger != manifest.TriggerHTTP {
			continue
		}
		rt, err := a.Router(f.Name)
		require.NoError(t, err)
		var want []string
		for _, r := range f.Routes {
			want = append(want, r.Key())
		}
		got := rt.RouteKeys()
		sort.Strings(want)
		sort.Strings(got)
		assert.Equal(t, want, got, f.Name)
	}
}

// The OpenAPI document lists exactly the manifest's routes.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var doc struct {
		OpenAPI string                    `yaml:"openapi"`
		Paths   map[string]map[string]any `yaml:"paths"`
	}
	require.NoError(t, yaml.Unmarshal(api.OpenAPI, &doc))
	assert.True(t, strings.HasPrefix(doc.OpenAPI, "3."))
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			if method == "parameters" {
				continue
			}
			documented[strings.ToUpper(method)+" "+path] = true
			fields, _ := op.(map[string]any)
			assert.NotEmpty(t, fields["responses"], "%s %s has no responses", method, path)
		}
	}
	routes := map[string]bool{}
	for _, rt := range manifest.Routes() {
		routes[rt.Route.Key()] = true
		assert.True(t, documented[rt.Route.Key()], "route %s is missing from openapi.yaml", rt.Route.Key())
	}
	for k := range documented {
		assert.True(t, routes[k], "openapi.yaml documents %s which no function serves", k)
	}
}

func TestConfigPairsRoundTrip(t *testing.T) {
	m := map[string]string{"delegation": "arn:aws:states:us-east-1:1:stateMachine:x", "activity": "http://q"}
	t.Setenv(app.EnvStateMachines, app.EncodePairs(m))
	assert.Equal(t, m, app.ConfigFromEnv().StateMachines)
}
