package stack_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/stack"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/platform/settings"
)

// The identity provider comes from the context: a Cognito pool with its
// callbacks, or an external issuer with its client id; what cannot mean
// anything stops the synth naming the key.
func TestTheIdentityProviderComesFromTheContext(t *testing.T) {
	cfg, err := configFrom(t, map[string]any{"env": "prod", "cognito": "true",
		"cognito.callbackUrls": "https://chat.example.com/callback, https://app.example.com:8443/", "cognito.domainPrefix": "acme-chat"}, "")
	require.NoError(t, err)
	assert.Equal(t, stack.IdentityConfig{Cognito: true, DomainPrefix: "acme-chat",
		CallbackURLs: []string{"https://chat.example.com/callback", "https://app.example.com:8443/"}}, cfg.Identity)
	cfg, err = configFrom(t, map[string]any{"env": "dev", "cognito": true, "cognito.callbackUrls": []any{"http://localhost:5173/callback"}}, "")
	require.NoError(t, err)
	assert.Equal(t, []string{"http://localhost:5173/callback"}, cfg.Identity.CallbackURLs)
	cfg, err = configFrom(t, map[string]any{"env": "prod", "identity.issuer": "https://example.eu.auth0.com/", "identity.clientId": "abc123"}, "")
	require.NoError(t, err)
	assert.Equal(t, stack.IdentityConfig{Issuer: "https://example.eu.auth0.com", ClientID: "abc123"}, cfg.Identity)
	cfg, err = configFrom(t, map[string]any{"env": "prod"}, "")
	require.NoError(t, err)
	assert.Zero(t, cfg.Identity, "no provider unless asked")

	cb := "https://chat.example.com/callback"
	for _, c := range []struct {
		context map[string]any
		key     string
	}{
		{map[string]any{"cognito": "yes"}, "cognito"},
		{map[string]any{"cognito": true}, "cognito.callbackUrls"},
		{map[string]any{"cognito.callbackUrls": cb}, "cognito=true"},
		{map[string]any{"cognito": true, "cognito.callbackUrls": "http://localhost:5173/cb"}, "cognito.callbackUrls"},
		{map[string]any{"cognito": true, "cognito.callbackUrls": "http://chat.example.com/cb"}, "cognito.callbackUrls"},
		{map[string]any{"cognito": true, "cognito.callbackUrls": cb + "#x"}, "cognito.callbackUrls"},
		{map[string]any{"cognito": true, "cognito.callbackUrls": cb + "," + cb}, "cognito.callbackUrls"},
		{map[string]any{"cognito": true, "cognito.callbackUrls": cb, "cognito.domainPrefix": "my-cognito"}, "cognito.domainPrefix"},
		{map[string]any{"cognito": true, "cognito.callbackUrls": cb, "cognito.domain": "x"}, "cognito.domain"},
		{map[string]any{"identity.issuer": "http://example.com", "identity.clientId": "a"}, "identity.issuer"},
		{map[string]any{"identity.issuer": "https://example.com"}, "identity.clientId"},
		{map[string]any{"identity.issuer": "https://example.com", "identity.clientId": "a", "cognito": true, "cognito.callbackUrls": cb}, "one identity provider"},
	} {
		c.context["env"] = "prod"
		_, err := configFrom(t, c.context, "")
		assert.ErrorContains(t, err, c.key, "%v", c.context)
	}
}

// identityTemplate is the stage's identity stack, alone (nil: none).
func identityTemplate(t *testing.T, cfg stack.EnvConfig) map[string]any {
	t.Helper()
	st := stack.NewIdentityStack(awscdk.NewApp(nil), "Identity", &stack.IdentityStackProps{Env: cfg})
	if st == nil {
		return nil
	}
	return templateJSON(t, assertions.Template_FromStack(st.Stack, nil))
}

// templateJSON is tpl as JSON, the test's own copy.
func templateJSON(t *testing.T, tpl assertions.Template) map[string]any {
	t.Helper()
	raw, err := json.Marshal(tpl.ToJSON())
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

// GIVEN a stage that asks for Cognito WHEN its identity stack is built
// THEN it has a user pool with an admins group and a hosted domain, and
// one client: no secret, the authorization-code flow alone, for exactly
// the listed callbacks; its issuer URL and client id are outputs. A stage
// that does not ask has no identity stack, and the application's stack
// never has a pool.
func TestACognitoPoolExistsOnlyWhenAsked(t *testing.T) {
	cfg, err := stack.Lookup("prod")
	require.NoError(t, err)
	assert.Nil(t, identityTemplate(t, cfg), "prod asked for no provider")
	_, app := synth(t, "dev")
	for _, r := range app["Resources"].(map[string]any) {
		assert.False(t, strings.HasPrefix(r.(map[string]any)["Type"].(string), "AWS::Cognito::"), "the application's stack holds no pool")
	}

	callbacks := []string{"https://chat.example.com/callback", "https://app.example.com/"}
	cfg.Identity = stack.IdentityConfig{Cognito: true, CallbackURLs: callbacks}
	m := identityTemplate(t, cfg)
	require.NotNil(t, m)
	require.Len(t, resources(m, "AWS::Cognito::UserPool"), 1)
	pool := props(resources(m, "AWS::Cognito::UserPool")[0])
	assert.Equal(t, true, pool["AdminCreateUserConfig"].(map[string]any)["AllowAdminCreateUserOnly"], "no self sign-up")
	assert.Equal(t, "ACTIVE", pool["DeletionProtection"], "prod keeps its people")
	assert.Equal(t, "conclave-prod-users", pool["UserPoolName"])
	require.Len(t, resources(m, "AWS::Cognito::UserPoolDomain"), 1)
	groups := resources(m, "AWS::Cognito::UserPoolGroup")
	require.Len(t, groups, 1)
	assert.Equal(t, stack.CognitoAdminGroup, props(groups[0])["GroupName"])

	clients := resources(m, "AWS::Cognito::UserPoolClient")
	require.Len(t, clients, 1)
	c := props(clients[0])
	assert.Equal(t, false, c["GenerateSecret"], "a public client: a browser keeps no secret")
	assert.Equal(t, []any{"code"}, c["AllowedOAuthFlows"], "the code flow alone (with PKCE), no implicit, no client credentials")
	assert.Equal(t, true, c["AllowedOAuthFlowsUserPoolClient"])
	assert.ElementsMatch(t, callbacks, c["CallbackURLs"])
	assert.Equal(t, []any{"ALLOW_REFRESH_TOKEN_AUTH"}, c["ExplicitAuthFlows"], "no password or SRP sign-in through the API")
	assert.Equal(t, []any{"COGNITO"}, c["SupportedIdentityProviders"])
	for _, o := range []string{"IdentityIssuerUrl", "IdentityClientId", "IdentitySignInUrl"} {
		assert.Contains(t, m["Outputs"], o)
	}
}

// An external issuer makes no pool: the application's stack outputs
// what the context names.
func TestAnExternalIssuerIsOutputOnly(t *testing.T) {
	cfg, err := stack.Lookup("prod")
	require.NoError(t, err)
	cfg.Identity = stack.IdentityConfig{Issuer: "https://example.eu.auth0.com", ClientID: "abc123"}
	assert.Nil(t, identityTemplate(t, cfg), "no identity stack")
	s := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("App"), nil)
	stack.OutputIssuer(s, cfg)
	m := templateJSON(t, assertions.Template_FromStack(s, nil))
	outputs := m["Outputs"].(map[string]any)
	assert.Equal(t, "https://example.eu.auth0.com", outputs["IdentityIssuerUrl"].(map[string]any)["Value"])
	assert.Equal(t, "abc123", outputs["IdentityClientId"].(map[string]any)["Value"])
}

// GIVEN a stage that lists origins WHEN it is synthesized THEN the
// streaming functions, and they alone, learn them (CORS_ORIGINS), and the
// console's (the HTTP API's endpoint) after them: the REST API adds
// nothing to a streamed answer, so they echo a listed Origin themselves.
func TestTheStreamingFunctionsLearnTheStagesOrigins(t *testing.T) {
	cfg, err := stack.Lookup("prod")
	require.NoError(t, err)
	origins := []string{"https://chat.example.com", "http://localhost:5173"}
	cfg.CORSOrigins = origins
	app, monitoring := synthStacks(t, cfg, assetDir)
	m := templateJSON(t, app)
	// CORS on adds a preflight method per streaming resource: prod with
	// origins is the largest template a stage makes, and a deploy past
	// CloudFormation's quota of resources a stack fails (the monitoring's
	// are in a nested stack for that reason; docs/operations.md).
	n := len(m["Resources"].(map[string]any))
	nested := len(templateJSON(t, monitoring)["Resources"].(map[string]any))
	t.Logf("prod with CORS on: %d resources of %d, and %d in the nested monitoring stack", n, maxStackResources, nested)
	assert.LessOrEqual(t, n, maxStackResources, "CloudFormation's quota of resources a stack")
	var learned []string
	for _, fn := range resources(m, "AWS::Lambda::Function") {
		name := strings.TrimPrefix(props(fn)["FunctionName"].(string), "conclave-prod-")
		vars := props(fn)["Environment"].(map[string]any)["Variables"].(map[string]any)
		if v, ok := vars[settings.EnvCORSOrigins]; ok {
			assert.Equal(t, map[string]any{"Fn::Join": []any{"", []any{strings.Join(origins, ",") + ",", console(t, m)}}}, v, name)
			learned = append(learned, name)
		}
	}
	assert.ElementsMatch(t, []string{"a2a-stream", "streams"}, learned)
	for _, name := range learned {
		assert.True(t, slices.Contains(manifest.Env[name], settings.EnvCORSOrigins), name)
	}
	// AND a stage that lists none tells them the console's alone
	_, plain := synth(t, "prod")
	for _, name := range learned {
		vars := props(resourceNamed(t, plain, "conclave-prod-"+name))["Environment"].(map[string]any)["Variables"].(map[string]any)
		assert.Equal(t, console(t, plain), vars[settings.EnvCORSOrigins], name)
	}
}

// console is the console's origin in template m: the HTTP API's endpoint.
func console(t *testing.T, m map[string]any) any {
	api, _ := onlyResource(t, m, "AWS::ApiGatewayV2::Api")
	return map[string]any{"Fn::GetAtt": []any{api, "ApiEndpoint"}}
}
