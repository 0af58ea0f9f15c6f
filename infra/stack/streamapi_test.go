package stack_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/stack"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/platform/settings"
)

// restMethods returns the REST API's methods by route key ("GET
// /v1/plans/{id}/events"), the path read back from each method's chain of
// resources; a route key served twice fails the test.
func restMethods(t *testing.T, m map[string]any) map[string]map[string]any {
	t.Helper()
	type part struct {
		parent any
		path   string
	}
	parts := map[string]part{}
	for id, r := range m["Resources"].(map[string]any) {
		r := r.(map[string]any)
		if r["Type"] == "AWS::ApiGateway::Resource" {
			parts[id] = part{props(r)["ParentId"], props(r)["PathPart"].(string)}
		}
	}
	// pathOf walks up to the API's root resource (a GetAtt of the API's
	// RootResourceId).
	var pathOf func(ref any) string
	pathOf = func(ref any) string {
		r, ok := ref.(map[string]any)["Ref"].(string)
		if !ok {
			require.Contains(t, ref, "Fn::GetAtt", "a resource's parent is a resource or the root")
			return ""
		}
		p, ok := parts[r]
		require.True(t, ok, "no resource %s", r)
		return pathOf(p.parent) + "/" + p.path
	}
	out := map[string]map[string]any{}
	for _, r := range resources(m, "AWS::ApiGateway::Method") {
		p := props(r)
		if p["HttpMethod"] == "OPTIONS" {
			continue // the preflights: cors_test.go and console_test.go
		}
		key := fmt.Sprintf("%s %s", p["HttpMethod"], pathOf(p["ResourceId"]))
		require.NotContains(t, out, key, "%s has two methods", key)
		out[key] = p
	}
	return out
}

// onlyResource returns the template's one resource of type typ, with its
// logical id.
func onlyResource(t *testing.T, m map[string]any, typ string) (string, map[string]any) {
	t.Helper()
	ids := logicalIDs(m, typ)
	require.Len(t, ids, 1, typ)
	return ids[0], m["Resources"].(map[string]any)[ids[0]].(map[string]any)
}

// streamingURI is the template JSON of the response-streaming invocation
// URI of the function whose logical id is fn.
func streamingURI(fn string) string {
	return jsonOf(map[string]any{"Fn::Join": []any{"", []any{
		"arn:", map[string]any{"Ref": "AWS::Partition"}, ":apigateway:", map[string]any{"Ref": "AWS::Region"},
		":lambda:path/2021-11-15/functions/", map[string]any{"Fn::GetAtt": []any{fn, "Arn"}}, "/response-streaming-invocations",
	}}})
}

// The streaming API is a regional REST API serving each stream route of
// the manifest with exactly one method, a Lambda proxy integration that
// streams (the response-streaming invocation of the route's function, for
// the function's whole run up to 15 minutes), and API Gateway may invoke
// each of those functions from this API alone.
func TestStreamAPIServesEveryStreamRouteAsAStream(t *testing.T) {
	// GIVEN the dev template
	_, m := synth(t, "dev")
	routes := manifest.StreamRoutes()
	require.NotEmpty(t, routes)

	// THEN there is one REST API, regional, named after the stage
	api, r := onlyResource(t, m, "AWS::ApiGateway::RestApi")
	assert.Equal(t, "conclave-dev-stream", props(r)["Name"])
	assert.Equal(t, map[string]any{"Types": []any{"REGIONAL"}}, props(r)["EndpointConfiguration"])

	// AND each stream route is one method, and there is no other
	methods := restMethods(t, m)
	require.Len(t, methods, len(routes), "one method per stream route, nothing else")
	functions := map[string]bool{}
	for _, rt := range routes {
		p, ok := methods[rt.Route.Key()]
		if !assert.True(t, ok, "no method for %s", rt.Route.Key()) {
			continue
		}
		assert.Equal(t, map[string]any{"Ref": api}, p["RestApiId"], rt.Route.Key())
		integ := p["Integration"].(map[string]any)
		assert.Equal(t, "AWS_PROXY", integ["Type"], rt.Route.Key())
		assert.Equal(t, "POST", integ["IntegrationHttpMethod"], rt.Route.Key())
		assert.Equal(t, "STREAM", integ["ResponseTransferMode"], rt.Route.Key())
		fn := logicalIDOf(t, m, "conclave-dev-"+rt.Function)
		assert.JSONEq(t, streamingURI(fn), jsonOf(integ["Uri"]), rt.Route.Key())
		f, _ := manifest.Lookup(rt.Function)
		assert.EqualValues(t, min(f.Timeout*1000, 900_000), integ["TimeoutInMillis"], "%s: the function's timeout, at most 15 minutes", rt.Route.Key())
		functions[rt.Function] = true
	}

	// AND API Gateway may invoke each route's function from this API (any
	// of its stages and methods), once
	for name := range functions {
		fn := logicalIDOf(t, m, "conclave-dev-"+name)
		var sources []string
		for _, perm := range resources(m, "AWS::Lambda::Permission") {
			p := props(perm)
			if jsonOf(p["FunctionName"]) == jsonOf(map[string]any{"Fn::GetAtt": []any{fn, "Arn"}}) && strings.Contains(jsonOf(p["SourceArn"]), `{"Ref":"`+api+`"}`) {
				assert.Equal(t, "lambda:InvokeFunction", p["Action"])
				assert.Equal(t, "apigateway.amazonaws.com", p["Principal"])
				sources = append(sources, jsonOf(p["SourceArn"]))
			}
		}
		assert.Equal(t, []string{jsonOf(map[string]any{"Fn::Join": []any{"", []any{
			"arn:", map[string]any{"Ref": "AWS::Partition"}, ":execute-api:", map[string]any{"Ref": "AWS::Region"}, ":",
			map[string]any{"Ref": "AWS::AccountId"}, ":", map[string]any{"Ref": api}, "/*/*/*",
		}}})}, sources, "%s: one permission, for this API", name)
	}
}

// The HTTP API keeps its own routes: a stream route it does not serve
// (every …/events) is on the streaming API alone.
func TestHTTPAPIServesNoStreamOnlyRoute(t *testing.T) {
	// GIVEN the dev template and the routes only the streaming API serves
	_, m := synth(t, "dev")
	http := map[string]bool{}
	for _, rt := range manifest.Routes() {
		http[rt.Route.Key()] = true
	}
	var streamOnly []string
	for _, rt := range manifest.StreamRoutes() {
		if !http[rt.Route.Key()] {
			streamOnly = append(streamOnly, rt.Route.Key())
		}
	}
	assert.Contains(t, streamOnly, "GET /v1/plans/{id}/events")
	// WHEN the HTTP API's routes are read
	served := map[string]bool{}
	for _, r := range resources(m, "AWS::ApiGatewayV2::Route") {
		served[props(r)["RouteKey"].(string)] = true
	}
	// THEN none of those is among them, and every HTTP route is
	for _, key := range streamOnly {
		assert.False(t, served[key], "the HTTP API serves %s", key)
	}
	for key := range http {
		assert.True(t, served[key], "the HTTP API does not serve %s", key)
	}
}

// Every method of the streaming API runs the HTTP API's authorizer
// function as a REQUEST authorizer, with no identity source (a key or a
// bearer token reaches it) and caching
// off (a revoked key stops at once).
func TestStreamAPIAuthorizesEveryMethodWithAKeyOrAToken(t *testing.T) {
	// GIVEN the dev template
	_, m := synth(t, "dev")
	api, _ := onlyResource(t, m, "AWS::ApiGateway::RestApi")
	// THEN its one authorizer is the authorizer function, per request,
	// uncached, on the key header
	authz, r := onlyResource(t, m, "AWS::ApiGateway::Authorizer")
	p := props(r)
	assert.Equal(t, "REQUEST", p["Type"])
	assert.Empty(t, p["IdentitySource"], "no identity source: X-Api-Key or a bearer token")
	assert.EqualValues(t, 0, p["AuthorizerResultTtlInSeconds"], "caching off")
	assert.Equal(t, map[string]any{"Ref": api}, p["RestApiId"])
	authorizerFn := logicalIDOf(t, m, "conclave-dev-authorizer")
	assert.Contains(t, jsonOf(p["AuthorizerUri"]), `{"Fn::GetAtt":["`+authorizerFn+`","Arn"]}`, "the HTTP API's authorizer function")
	// AND API Gateway may invoke the function for it
	var invokes int
	for _, perm := range resources(m, "AWS::Lambda::Permission") {
		pp := props(perm)
		if jsonOf(pp["FunctionName"]) == jsonOf(map[string]any{"Fn::GetAtt": []any{authorizerFn, "Arn"}}) &&
			strings.Contains(jsonOf(pp["SourceArn"]), `"/authorizers/",{"Ref":"`+authz+`"}`) {
			invokes++
		}
	}
	assert.Equal(t, 1, invokes, "a permission for the authorizer")
	// AND every method that is not public runs it
	public := map[string]bool{}
	for _, rt := range manifest.StreamRoutes() {
		public[rt.Route.Key()] = rt.Public
	}
	for key, mp := range restMethods(t, m) {
		if public[key] {
			assert.Equal(t, "NONE", mp["AuthorizationType"], key)
			assert.NotContains(t, mp, "AuthorizerId", key)
			continue
		}
		assert.Equal(t, "CUSTOM", mp["AuthorizationType"], key)
		assert.Equal(t, map[string]any{"Ref": authz}, mp["AuthorizerId"], key)
	}
}

// A public stream route (a function that checks the caller itself, as the
// A2A agent's) gets no authorizer, and says why checkov's open-method
// check does not apply; the others beside it keep the authorizer.
func TestStreamAPIPublicRouteHasNoAuthorizer(t *testing.T) {
	// GIVEN a streaming API with a public route and a private one
	cfg, err := stack.Lookup("dev")
	require.NoError(t, err)
	app := awscdk.NewApp(nil)
	s := awscdk.NewStack(app, jsii.String("PublicStream"), nil)
	fn := func(id string) awslambda.Function {
		return awslambda.NewFunction(s, jsii.String(id), &awslambda.FunctionProps{
			Runtime: awslambda.Runtime_NODEJS_22_X(), Handler: jsii.String("index.handler"),
			Code: awslambda.Code_FromInline(jsii.String("exports.handler = async () => ({})")), Timeout: awscdk.Duration_Seconds(jsii.Number(60)),
		})
	}
	// WHEN it is built
	stack.NewStreamAPI(s, "StreamApi", &stack.StreamAPIProps{
		Stage: stack.NewStage(cfg), Env: cfg,
		Functions: map[string]awslambda.Function{"authorizer": fn("Authorizer"), "a2a-stream": fn("A2AStream")},
		Routes: []manifest.RouteTarget{
			{Route: manifest.Route{Method: "POST", Path: "/a2a/{a2a_id}"}, Function: "a2a-stream", Public: true},
			{Route: manifest.Route{Method: "GET", Path: "/a2a/{a2a_id}/events"}, Function: "a2a-stream"},
		},
	})
	raw, err := json.Marshal(assertions.Template_FromStack(s, nil).ToJSON())
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))

	// THEN the public method runs no authorizer, and says why
	methods := restMethods(t, m)
	require.Len(t, methods, 2)
	public := methods["POST /a2a/{a2a_id}"]
	require.NotNil(t, public)
	assert.Equal(t, "NONE", public["AuthorizationType"])
	assert.NotContains(t, public, "AuthorizerId")
	assert.EqualValues(t, 60_000, public["Integration"].(map[string]any)["TimeoutInMillis"], "the function's timeout")
	var skipped []string
	for _, r := range resources(m, "AWS::ApiGateway::Method") {
		for _, skip := range checkovSkips(r) {
			skipped = append(skipped, fmt.Sprintf("%s %s", props(r)["HttpMethod"], skip))
		}
	}
	assert.Equal(t, []string{"POST CKV_AWS_59"}, skipped, "the public method alone skips the open-method check")
	// AND the private one beside it does
	private := methods["GET /a2a/{a2a_id}/events"]
	require.NotNil(t, private)
	assert.Equal(t, "CUSTOM", private["AuthorizationType"])
	assert.Contains(t, private, "AuthorizerId")
}

// checkovSkips returns the checks a resource's metadata tells checkov to
// skip, each required to say why.
func checkovSkips(r map[string]any) []string {
	meta, _ := r["Metadata"].(map[string]any)
	checkov, _ := meta["checkov"].(map[string]any)
	var out []string
	for _, s := range list(checkov["skip"]) {
		s, _ := s.(map[string]any)
		if s == nil {
			continue
		}
		if c, _ := s["comment"].(string); len(c) > 40 {
			out = append(out, s["id"].(string))
		}
	}
	return out
}

// The stage is the stack's stage, throttled as the HTTP API, without
// X-Ray of its own (the functions' spans are the trace), and
// access-logged to a log group of its own with the HTTP API's fields and
// retention (REST variables; no headers, bodies or keys); checkov's cache
// and X-Ray checks are skipped on it alone, with why.
func TestStreamAPIStageIsThrottledAndLoggedAsTheHTTPAPI(t *testing.T) {
	for _, env := range []string{"dev", "prod"} {
		t.Run(env, func(t *testing.T) {
			// GIVEN the stage's template and configuration
			_, m := synth(t, env)
			cfg, err := stack.Lookup(env)
			require.NoError(t, err)
			_, r := onlyResource(t, m, "AWS::ApiGateway::Stage")
			st := props(r)
			_, hr := onlyResource(t, m, "AWS::ApiGatewayV2::Stage")
			http := props(hr)

			// THEN it is named after the stage, without the gateway's X-Ray
			assert.Equal(t, env, st["StageName"])
			assert.Equal(t, false, st["TracingEnabled"])
			assert.NotEqual(t, true, st["CacheClusterEnabled"], "nothing streamed is cached")
			assert.Equal(t, []string{"CKV_AWS_120", "CKV_AWS_73"}, checkovSkips(r))

			// AND every method is throttled as the HTTP API's routes
			route := http["DefaultRouteSettings"].(map[string]any)
			require.Len(t, st["MethodSettings"], 1)
			ms := st["MethodSettings"].([]any)[0].(map[string]any)
			assert.Equal(t, "*", ms["HttpMethod"])
			assert.Equal(t, "/*", ms["ResourcePath"])
			assert.Equal(t, route["ThrottlingRateLimit"], ms["ThrottlingRateLimit"])
			assert.Equal(t, route["ThrottlingBurstLimit"], ms["ThrottlingBurstLimit"])
			assert.EqualValues(t, cfg.APIRatePerSecond, ms["ThrottlingRateLimit"])
			assert.EqualValues(t, cfg.APIBurst, ms["ThrottlingBurstLimit"])
			assert.Equal(t, false, ms["DataTraceEnabled"], "no bodies in execution logs")

			// AND the access log goes to its own log group, kept as the HTTP
			// API's
			logs := st["AccessLogSetting"].(map[string]any)
			group := logicalIDByName(t, m, "AWS::Logs::LogGroup", "LogGroupName", "/aws/apigateway/conclave-"+env+"-stream")
			assert.Equal(t, map[string]any{"Fn::GetAtt": []any{group, "Arn"}}, logs["DestinationArn"])
			httpGroup := logicalIDByName(t, m, "AWS::Logs::LogGroup", "LogGroupName", "/aws/apigateway/conclave-"+env+"-api")
			res := m["Resources"].(map[string]any)
			for _, k := range []string{"DeletionPolicy", "UpdateReplacePolicy"} {
				assert.Equal(t, res[httpGroup].(map[string]any)[k], res[group].(map[string]any)[k], k)
			}
			assert.Equal(t, props(res[httpGroup].(map[string]any))["RetentionInDays"], props(res[group].(map[string]any))["RetentionInDays"])

			// AND its lines have the HTTP API's fields, in REST variables
			var fields, httpFields map[string]string
			require.NoError(t, json.Unmarshal([]byte(logs["Format"].(string)), &fields), "one JSON object a line")
			require.NoError(t, json.Unmarshal([]byte(http["AccessLogSettings"].(map[string]any)["Format"].(string)), &httpFields))
			assert.ElementsMatch(t, keysOf(httpFields), keysOf(fields), "the HTTP API's fields")
			assert.Equal(t, "$context.resourcePath", fields["route"])
			for _, same := range []string{"request_id", "status", "team_id", "key_id", "ip", "latency_ms", "integration_latency_ms"} {
				assert.Equal(t, httpFields[same], fields[same], same)
			}
			for _, v := range fields {
				for _, secret := range []string{"apikey", "api-key", "header", "body", "input"} {
					assert.NotContains(t, strings.ToLower(v), secret)
				}
			}
		})
	}
}

// The streaming API's 5xx share and p99 wait for the first byte alarm as
// the HTTP API's do, on the API's stage, to the stage's one topic (the
// alarms and the topic in the nested monitoring stack, the stage in the
// application's).
func TestStreamAPIAlarmsAsTheHTTPAPI(t *testing.T) {
	// GIVEN the prod templates
	_, mon, m := synthMonitoring(t, "prod")
	cfg, err := stack.Lookup("prod")
	require.NoError(t, err)
	topics := logicalIDs(mon, "AWS::SNS::Topic")
	require.Len(t, topics, 1)
	stage, _ := onlyResource(t, m, "AWS::ApiGateway::Stage")
	dims := []any{
		map[string]any{"Name": "ApiName", "Value": "conclave-prod-stream"},
		map[string]any{"Name": "Stage", "Value": map[string]any{"Ref": stage}},
	}
	alarms := map[string]map[string]any{}
	for _, a := range resources(mon, "AWS::CloudWatch::Alarm") {
		// (the stage as the application's stack passes it)
		p := fromParent(t, m, props(a)).(map[string]any)
		alarms[p["AlarmName"].(string)] = p
	}
	// THEN the 5xx share is computed from the stage's 5XXError and Count
	rate := alarms["conclave-prod-stream-5xx-rate"]
	require.NotNil(t, rate, "the 5xx rate alarm")
	httpRate := alarms["conclave-prod-api-5xx-rate"]
	for _, k := range []string{"Threshold", "EvaluationPeriods", "DatapointsToAlarm", "ComparisonOperator", "TreatMissingData"} {
		assert.Equal(t, httpRate[k], rate[k], k)
	}
	assert.EqualValues(t, cfg.API5xxPercent, rate["Threshold"])
	used := map[string]any{}
	for _, q := range rate["Metrics"].([]any) {
		q := q.(map[string]any)
		if stat, ok := q["MetricStat"].(map[string]any); ok {
			metric := stat["Metric"].(map[string]any)
			assert.Equal(t, "AWS/ApiGateway", metric["Namespace"])
			assert.Equal(t, dims, metric["Dimensions"])
			assert.Equal(t, "Sum", stat["Stat"])
			used[q["Id"].(string)] = metric["MetricName"]
		} else {
			assert.Equal(t, "IF(requests > 0, 100 * errors / requests, 0)", q["Expression"])
		}
	}
	assert.Equal(t, map[string]any{"errors": "5XXError", "requests": "Count"}, used)
	// AND the p99 wait for the first byte has the HTTP API's latency threshold
	latency := alarms["conclave-prod-stream-latency-p99"]
	require.NotNil(t, latency, "the latency alarm")
	assert.Equal(t, "AWS/ApiGateway", latency["Namespace"])
	assert.Equal(t, "IntegrationLatency", latency["MetricName"])
	assert.Equal(t, dims, latency["Dimensions"])
	assert.Equal(t, "p99", latency["ExtendedStatistic"])
	assert.EqualValues(t, cfg.APILatencyP99Ms, latency["Threshold"])
	assert.Equal(t, alarms["conclave-prod-api-latency-p99"]["EvaluationPeriods"], latency["EvaluationPeriods"])
	// AND both notify the topic on ALARM and on OK
	for _, a := range []map[string]any{rate, latency} {
		assert.Equal(t, []any{map[string]any{"Ref": topics[0]}}, a["AlarmActions"])
		assert.Equal(t, []any{map[string]any{"Ref": topics[0]}}, a["OKActions"])
	}
}

// StreamUrl, beside ApiUrl, is the stage's invoke URL without a trailing
// slash; the REST API construct's own endpoint output is not there; the
// functions that declare STREAM_URL are told it.
func TestStreamURLIsAStackOutput(t *testing.T) {
	// GIVEN the dev template
	_, m := synth(t, "dev")
	api, _ := onlyResource(t, m, "AWS::ApiGateway::RestApi")
	_, stage := onlyResource(t, m, "AWS::ApiGateway::Stage")
	require.Equal(t, "dev", props(stage)["StageName"])
	outputs := m["Outputs"].(map[string]any)
	// THEN StreamUrl is https://<api>.execute-api.<region>.<suffix>/<stage>
	require.Contains(t, outputs, "ApiUrl")
	require.Contains(t, outputs, "StreamUrl")
	url := map[string]any{"Fn::Join": []any{"", []any{
		"https://", map[string]any{"Ref": api}, ".execute-api.", map[string]any{"Ref": "AWS::Region"}, ".",
		map[string]any{"Ref": "AWS::URLSuffix"}, "/dev",
	}}}
	assert.Equal(t, url, outputs["StreamUrl"].(map[string]any)["Value"])
	// AND no other output names the API
	for name, o := range outputs {
		if name != "StreamUrl" {
			assert.NotContains(t, jsonOf(o), `"`+api+`"`, name)
		}
	}
	// AND every function that declares STREAM_URL (the A2A agent's card
	// names its streaming endpoint) is told the same URL, built without a
	// reference to the stage (a function of the API would depend on the
	// stage that depends on it)
	var told []string
	for _, f := range manifest.Functions {
		if !slices.Contains(manifest.Env[f.Name], settings.EnvStreamURL) {
			continue
		}
		told = append(told, f.Name)
		env := props(resourceNamed(t, m, "conclave-dev-"+f.Name))["Environment"].(map[string]any)["Variables"].(map[string]any)
		assert.Equal(t, url, env[settings.EnvStreamURL], f.Name)
	}
	assert.NotEmpty(t, told, "the A2A agent declares STREAM_URL")
}
