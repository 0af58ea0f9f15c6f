package stack_test

import (
	"encoding/json"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/stack"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
)

// The origins come from -c cors.origins (a string) or a cdk.json list;
// plain-HTTP loopback origins only in dev; anything else stops the synth
// naming the key.
func TestCORSOriginsComeFromTheContext(t *testing.T) {
	cfg, err := configFrom(t, map[string]any{"env": "prod", "cors.origins": " https://chat.example.com, https://app.example.com:8443"}, "")
	require.NoError(t, err)
	assert.Equal(t, []string{"https://chat.example.com", "https://app.example.com:8443"}, cfg.CORSOrigins)
	cfg, err = configFrom(t, map[string]any{"env": "dev", "cors.origins": []any{"http://localhost:5173", "http://127.0.0.1:5173"}}, "")
	require.NoError(t, err)
	assert.Equal(t, []string{"http://localhost:5173", "http://127.0.0.1:5173"}, cfg.CORSOrigins)
	cfg, err = configFrom(t, map[string]any{"env": "prod"}, "")
	require.NoError(t, err)
	assert.Empty(t, cfg.CORSOrigins, "no origins, no CORS")

	for _, c := range []struct {
		env    string
		origin any
	}{
		{"prod", "http://localhost:5173"}, {"staging", "http://127.0.0.1:5173"}, {"dev", "http://localhost"},
		{"dev", "http://chat.example.com"}, {"dev", "https://chat.example.com/"}, {"dev", "https://chat.example.com/app"},
		{"dev", "*"}, {"dev", "https://*.example.com"}, {"dev", "https://Chat.example.com"}, {"dev", "https://chat.example.com:0"},
		{"dev", "https://u:p@chat.example.com"}, {"dev", "https://chat.example.com?x=1"}, {"dev", "chat.example.com"},
		{"dev", "https://a.example.com,https://a.example.com"}, {"dev", 5173.0}, {"dev", []any{true}},
	} {
		_, err := configFrom(t, map[string]any{"env": c.env, "cors.origins": c.origin}, "")
		assert.ErrorContains(t, err, "-c cors.origins", "%s %v", c.env, c.origin)
	}
}

// corsTemplate builds both APIs alone (placeholder functions) for cfg.
func corsTemplate(t *testing.T, cfg stack.EnvConfig) map[string]any {
	t.Helper()
	app := awscdk.NewApp(nil)
	s := awscdk.NewStack(app, jsii.String("Cors"), nil)
	fns := map[string]awslambda.Function{}
	for _, f := range manifest.Functions {
		fns[f.Name] = awslambda.NewFunction(s, jsii.String("Fn"+f.Name), &awslambda.FunctionProps{
			Runtime: awslambda.Runtime_NODEJS_22_X(), Handler: jsii.String("index.handler"),
			Code: awslambda.Code_FromInline(jsii.String("exports.handler = async () => ({})")), Timeout: awscdk.Duration_Seconds(jsii.Number(60)),
		})
	}
	stage := stack.NewStage(cfg)
	stack.NewAPI(s, "HttpApi", &stack.APIProps{Stage: stage, Env: cfg, Functions: fns})
	stack.NewStreamAPI(s, "StreamApi", &stack.StreamAPIProps{Stage: stage, Env: cfg, Functions: fns})
	return templateJSON(t, assertions.Template_FromStack(s, nil))
}

// GIVEN a stage with origins WHEN its APIs are built THEN the HTTP API's
// gateway answers preflights for exactly those origins, and every
// resource of the streaming API has an OPTIONS method without the
// authorizer that names them; without origins neither API has CORS.
func TestAPIsAnswerPreflightsForTheStagesOrigins(t *testing.T) {
	cfg, err := stack.Lookup("prod")
	require.NoError(t, err)
	origins := []string{"https://chat.example.com", "https://app.example.com"}
	cfg.CORSOrigins = origins
	m := corsTemplate(t, cfg)

	apis := resources(m, "AWS::ApiGatewayV2::Api")
	require.Len(t, apis, 1)
	cors, ok := props(apis[0])["CorsConfiguration"].(map[string]any)
	require.True(t, ok, "the HTTP API has a CorsConfiguration")
	assert.ElementsMatch(t, origins, cors["AllowOrigins"])
	assert.ElementsMatch(t, manifest.CORSHeaders, cors["AllowHeaders"])
	assert.ElementsMatch(t, manifest.CORSExposeHeaders, cors["ExposeHeaders"])
	assert.ElementsMatch(t, []any{"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}, cors["AllowMethods"])
	assert.EqualValues(t, 7200, cors["MaxAge"])
	assert.NotContains(t, cors, "AllowCredentials", "the credential is a header, never a cookie")

	var options int
	for _, r := range resources(m, "AWS::ApiGateway::Method") {
		p := props(r)
		if p["HttpMethod"] != "OPTIONS" {
			continue
		}
		options++
		assert.Equal(t, "NONE", p["AuthorizationType"], "a preflight carries no credential")
		integ, _ := json.Marshal(p["Integration"])
		assert.Contains(t, string(integ), `"Type":"MOCK"`)
		for _, o := range origins {
			assert.Contains(t, string(integ), o)
		}
	}
	assert.Equal(t, len(resources(m, "AWS::ApiGateway::Resource"))+1, options, "one OPTIONS method per resource and the root")

	cfg.CORSOrigins = nil
	m = corsTemplate(t, cfg)
	assert.NotContains(t, props(resources(m, "AWS::ApiGatewayV2::Api")[0]), "CorsConfiguration")
	for _, r := range resources(m, "AWS::ApiGateway::Method") {
		assert.NotEqual(t, "OPTIONS", props(r)["HttpMethod"])
	}
}
