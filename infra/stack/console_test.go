package stack_test

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/stack"
	"github.com/conclave-ai/conclave/shared/platform/settings"
)

// GIVEN the dev template, a stage that lists no browser origins
// THEN the console's routes are public on the HTTP API, its function is
// told the streaming API's URL, and the streaming API answers the
// console's origin (the HTTP API's endpoint) itself: its preflights name
// it and the streamed answers' functions are told it, so the page can
// stream without a stage listing its own URL.
func TestTheConsoleIsPublicAndItsOriginMayStream(t *testing.T) {
	_, m := synth(t, "dev")
	httpAPI, _ := onlyResource(t, m, "AWS::ApiGatewayV2::Api")
	routes := 0
	for _, r := range resources(m, "AWS::ApiGatewayV2::Route") {
		p := props(r)
		if key, _ := p["RouteKey"].(string); key == "GET /console" || key == "GET /console/{file}" || key == "GET /console/vendor/{file}" {
			routes++
			assert.Equal(t, "NONE", p["AuthorizationType"], key)
		}
	}
	assert.Equal(t, 3, routes, "the console's three routes")

	console := props(resourceNamed(t, m, "conclave-dev-console"))["Environment"].(map[string]any)["Variables"].(map[string]any)
	assert.Contains(t, console, settings.EnvStreamURL)
	assert.NotContains(t, console, settings.EnvConsoleIssuer, "no provider named: keys only")

	ref := `{"Fn::GetAtt":["` + httpAPI + `","ApiEndpoint"]}`
	options := 0
	for _, r := range resources(m, "AWS::ApiGateway::Method") {
		if p := props(r); p["HttpMethod"] == "OPTIONS" {
			options++
			assert.Contains(t, jsonOf(p["Integration"]), ref, "a preflight names the console's origin")
		}
	}
	assert.Positive(t, options, "the streaming API answers preflights")
	streams := props(resourceNamed(t, m, "conclave-dev-streams"))["Environment"].(map[string]any)["Variables"].(map[string]any)
	assert.Contains(t, jsonOf(streams[settings.EnvCORSOrigins]), ref, "a streamed answer names the console's origin")
}

// GIVEN a stage naming an identity provider THEN the console signs people
// in with it.
func TestTheConsoleSignsInWithTheStagesProvider(t *testing.T) {
	cfg, err := stack.Lookup("staging")
	require.NoError(t, err)
	cfg.Identity = stack.IdentityConfig{Issuer: "https://example.eu.auth0.com", ClientID: "console-app"}
	tpl := synthConfig(t, cfg, mustAssetDir(t))
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"FunctionName": "conclave-staging-console",
		"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{
			settings.EnvConsoleIssuer: "https://example.eu.auth0.com", settings.EnvConsoleClientID: "console-app",
		})},
	})
}
