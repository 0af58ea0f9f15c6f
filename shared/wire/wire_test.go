package wire_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/api/consoleapi"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/wire"
	"github.com/conclave-ai/conclave/shared/wire/a2afn"
)

func deps() lambdafn.Deps {
	return lambdafn.Deps{
		Config: settings.Config{Stage: "test", TableName: "t", BusName: "b",
			StateMachines: map[string]string{"delegation": "arn:aws:states:us-east-1:1:stateMachine:d"},
			Functions:     map[string]string{"expert-gate": "conclave-test-expert-gate"}, ModelProvider: "local"},
		AWS: aws.Config{Region: "us-east-1"},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

func TestEveryManifestFunctionHasABuilder(t *testing.T) {
	for _, f := range manifest.Functions {
		h, err := wire.Handler(f.Name, deps())
		require.NoError(t, err, f.Name)
		assert.NotNil(t, h, f.Name)
	}
	assert.Len(t, wire.Builders, len(manifest.Functions), "a builder for a function the manifest does not list")
	_, err := wire.Handler("nope", deps())
	assert.Error(t, err)
}

// Each HTTP function serves exactly the routes the manifest gives it; the
// public ones (the A2A agent, the console) serve theirs with a handler of
// their own.
func TestRoutersServeManifestRoutes(t *testing.T) {
	for _, f := range manifest.Functions {
		if f.Trigger != manifest.TriggerHTTP {
			continue
		}
		if f.Public {
			want := map[string][]string{"a2a": {a2afn.RouteCard, a2afn.RouteRPC},
				"console": {consoleapi.RouteIndex, consoleapi.RouteFile, consoleapi.RouteVendor}}[f.Name]
			require.NotNil(t, want, "%s: the public functions are a2a and console", f.Name)
			var got []string
			for _, r := range f.Routes {
				got = append(got, r.Key())
			}
			assert.Equal(t, want, got, f.Name)
			_, isRouter := wire.Routers[f.Name]
			assert.False(t, isRouter)
			continue
		}
		router, ok := wire.Routers[f.Name]
		require.True(t, ok, "no router for %s", f.Name)
		var want []string
		for _, r := range f.Routes {
			want = append(want, r.Key())
		}
		rt, err := router(deps())
		require.NoError(t, err, f.Name)
		for _, k := range rt.RouteKeys() {
			_, known := rt.Bodies[k]
			assert.True(t, known, "%s: the router knows from openapi.yaml whether %s takes a body", f.Name, k)
		}
		got := rt.RouteKeys()
		sort.Strings(want)
		sort.Strings(got)
		assert.Equal(t, want, got, f.Name)
		// A function with a route that writes replays idempotent POSTs;
		// one that only reads keeps no records (httpfn.NewReadOnly), so
		// its code and its grants write nothing.
		writes := false
		for _, r := range f.Routes {
			writes = writes || r.Method != "GET"
		}
		assert.Equal(t, writes, rt.Replays(), "%s: replays idempotent POSTs iff it has a route that is not a GET", f.Name)
	}
}

// The OpenAPI document lists exactly the manifest's routes, of both APIs
// (the streaming API's own paths marked x-conclave-api: streaming, and
// only those).
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var doc struct {
		OpenAPI string                    `yaml:"openapi"`
		Paths   map[string]map[string]any `yaml:"paths"`
	}
	require.NoError(t, yaml.Unmarshal(api.OpenAPI, &doc))
	assert.True(t, strings.HasPrefix(doc.OpenAPI, "3."))
	documented, streamOnly := map[string]bool{}, map[string]bool{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			if method == "parameters" {
				continue
			}
			documented[strings.ToUpper(method)+" "+path] = true
			fields, _ := op.(map[string]any)
			assert.NotEmpty(t, fields["responses"], "%s %s has no responses", method, path)
			streamOnly[strings.ToUpper(method)+" "+path] = fields["x-conclave-api"] == "streaming"
		}
	}
	routes, httpRoutes := map[string]bool{}, map[string]bool{}
	for _, rt := range manifest.Routes() {
		routes[rt.Route.Key()], httpRoutes[rt.Route.Key()] = true, true
		assert.True(t, documented[rt.Route.Key()], "route %s is missing from openapi.yaml", rt.Route.Key())
	}
	for _, rt := range manifest.StreamRoutes() {
		routes[rt.Route.Key()] = true
		assert.True(t, documented[rt.Route.Key()], "streaming route %s is missing from openapi.yaml", rt.Route.Key())
		assert.Equal(t, !httpRoutes[rt.Route.Key()], streamOnly[rt.Route.Key()], "%s: x-conclave-api: streaming marks the streaming API's own paths", rt.Route.Key())
	}
	for k := range documented {
		assert.True(t, routes[k], "openapi.yaml documents %s which no function serves", k)
	}
}

// credentialClients are linked by every function through the SDK's
// default credential chain (config.LoadDefaultConfig), not by our code.
var credentialClients = map[string]bool{"sso": true, "ssooidc": true, "sts": true, "signin": true}

// linkedClients maps each function directory to the AWS SDK service
// clients its binary links, from `go list -deps`.
func linkedClients(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-json=ImportPath,Deps", "../../functions/...").Output()
	require.NoError(t, err)
	const module, sdk = "github.com/conclave-ai/conclave/functions/", "github.com/aws/aws-sdk-go-v2/service/"
	got := map[string][]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			ImportPath string
			Deps       []string
		}
		require.NoError(t, dec.Decode(&p))
		name, ok := strings.CutPrefix(p.ImportPath, module)
		if !ok {
			continue
		}
		set := map[string]bool{}
		for _, d := range p.Deps {
			if rest, ok := strings.CutPrefix(d, sdk); ok {
				client, _, _ := strings.Cut(rest, "/")
				// attributevalue decodes stream records too, so DynamoDB
				// brings the streams types along.
				if client != "internal" && client != "dynamodbstreams" && !credentialClients[client] {
					set[client] = true
				}
			}
		}
		got[name] = []string{}
		for c := range set {
			got[name] = append(got[name], c)
		}
		sort.Strings(got[name])
	}
	return got
}

// A function links exactly the AWS clients its manifest entry is granted:
// no client it may not call, and no grant it has no client for.
func TestFunctionsLinkOnlyGrantedClients(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over every function")
	}
	linked := linkedClients(t)
	require.Len(t, linked, len(manifest.Functions))
	for _, f := range manifest.Functions {
		want := f.Clients()
		if want == nil {
			want = []string{} // a function granted nothing (the console) links no client
		}
		assert.Equal(t, want, linked[f.Name], "%s: linked AWS clients (right) differ from its grants (left)", f.Name)
	}
}

// A route a flag gates answers 409 FeatureDisabled, naming the flag, while
// the flag is off (with the seed's progression: collaboration off turns
// delegation and sessions off too), and is served while it is on.
func TestFlagsGateTheirRoutes(t *testing.T) {
	all := settings.Flags{Collaboration: true, ExpertGate: true, Ensemble: true, TaskDelegation: true, Sessions: true}
	for _, off := range []string{settings.FlagCollaboration, settings.FlagTaskDelegation, settings.FlagSessions} {
		flags := all
		switch off {
		case settings.FlagCollaboration:
			flags.Collaboration = false
		case settings.FlagTaskDelegation:
			flags.TaskDelegation = false
		case settings.FlagSessions:
			flags.Sessions = false
		}
		d := deps()
		d.Config.Flags = flags
		gated := 0
		for _, f := range manifest.Functions {
			if f.Trigger != manifest.TriggerHTTP || f.Public {
				continue
			}
			rt, err := wire.Routers[f.Name](d)
			require.NoError(t, err, f.Name)
			for _, r := range f.Routes {
				flag, isGated := manifest.RouteFlags[r.Key()]
				wantOff := isGated && !flags.On(flag)
				assert.Equal(t, wantOff, rt.Disabled[r.Key()] != "", "%s with %s off", r.Key(), off)
				if !wantOff {
					continue
				}
				gated++
				ev := events.APIGatewayV2HTTPRequest{RouteKey: r.Key(), Body: `{"assignee":"luke"}`,
					RequestContext: events.APIGatewayV2HTTPRequestContext{Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{"team_id": "team_x"}}}}
				ev.RequestContext.HTTP.Method = r.Method
				resp, err := rt.Serve(context.Background(), ev)
				require.NoError(t, err)
				assert.Equal(t, 409, resp.StatusCode, r.Key())
				assert.Contains(t, resp.Body, `"FeatureDisabled"`, r.Key())
				assert.Contains(t, resp.Body, `"`+flag+`"`, r.Key())
			}
		}
		assert.Positive(t, gated, "%s off gates some route", off)
	}
	d := deps()
	d.Config.Flags = all
	for name, router := range wire.Routers {
		rt, err := router(d)
		require.NoError(t, err, name)
		assert.Empty(t, rt.Disabled, "%s: every flag on disables nothing", name)
	}
}
