package stack_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/stack"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/platform/settings"
)

// xrayEndpoint is the template JSON of TRACE_ENDPOINT: the X-Ray OTLP
// endpoint of the stack's region.
var xrayEndpoint = jsonOf(map[string]any{"Fn::Join": []any{"", []any{"https://xray.", map[string]any{"Ref": "AWS::Region"}, ".amazonaws.com/v1/traces"}}})

// Every function of every stage exports its spans to the X-Ray OTLP
// endpoint of the stack's region, at the stage's sample rate, without
// content, and may: xray:PutSpans on "*" (X-Ray scopes it to no
// resource). Lambda's, Step Functions' and the streaming API's own X-Ray
// are off (no second, unrelated trace of a request), and no machine's
// role may upload X-Ray segments.
func TestEveryFunctionExportsItsSpansToTheRegionsXRay(t *testing.T) {
	for stage, percent := range map[string]string{"dev": "100", "prod": "10"} {
		t.Run(stage, func(t *testing.T) {
			// GIVEN the stage's template
			_, m := synth(t, stage)
			names := manifest.Names{Stage: stage}
			for _, f := range manifest.Functions {
				// THEN each function is told where, how much and what
				env := functionEnv(t, m, names.Function(f.Name))
				assert.Equal(t, xrayEndpoint, jsonOf(env[settings.EnvTraceEndpoint]), f.Name)
				assert.Equal(t, percent, env[settings.EnvTraceSamplePercent], f.Name)
				assert.Equal(t, "false", env[settings.EnvTraceContent], f.Name)
				// AND its role may put spans, on every resource
				pairs := rolePairs(t, m, roleOf(t, m, names.Function(f.Name)))
				assert.True(t, pairs[grantPair{string(manifest.GrantPutSpans), `"*"`}], f.Name)
				for p := range pairs {
					assert.False(t, strings.HasPrefix(p.Action, "xray:") && p.Action != string(manifest.GrantPutSpans), "%s: %s", f.Name, p.Action)
				}
			}
			// AND no function, machine or API stage traces with X-Ray itself
			for _, fn := range resources(m, "AWS::Lambda::Function") {
				assert.NotEqual(t, map[string]any{"Mode": "Active"}, props(fn)["TracingConfig"], props(fn)["FunctionName"])
			}
			for _, sm := range resources(m, "AWS::StepFunctions::StateMachine") {
				tc, _ := props(sm)["TracingConfiguration"].(map[string]any)
				assert.NotEqual(t, true, tc["Enabled"], props(sm)["StateMachineName"])
			}
			for _, st := range resources(m, "AWS::ApiGateway::Stage") {
				assert.NotEqual(t, true, props(st)["TracingEnabled"])
			}
			policies, err := json.Marshal(resources(m, "AWS::IAM::Policy"))
			require.NoError(t, err)
			assert.NotContains(t, string(policies), "xray:PutTraceSegments", "nothing uploads X-Ray segments")
		})
	}
}

// The tracing keys come from the context like the other stage keys: the
// sample rate 0 to 100 in any stage, content in any stage but prod, which
// refuses it with why; anything else names the key.
func TestTheContextSetsAStagesTracing(t *testing.T) {
	for stage, percent := range map[string]int{"dev": 100, "staging": 100, "prod": 10, "localstack": 100} {
		cfg, err := configFrom(t, map[string]any{"env": stage}, "")
		require.NoError(t, err)
		assert.Equal(t, percent, cfg.TraceSamplePercent, stage)
		assert.False(t, cfg.TraceContent, stage)
	}
	cfg, err := configFrom(t, map[string]any{"env": "prod", "tracing.samplePercent": "100", "tracing.content": "false"}, "")
	require.NoError(t, err)
	assert.Equal(t, 100, cfg.TraceSamplePercent)
	cfg, err = configFrom(t, map[string]any{"env": "staging", "tracing.samplePercent": 0.0, "tracing.content": true}, "")
	require.NoError(t, err)
	assert.Equal(t, 0, cfg.TraceSamplePercent)
	assert.True(t, cfg.TraceContent)

	for _, c := range []struct {
		context map[string]any
		want    string
	}{
		{map[string]any{"env": "prod", "tracing.content": "true"}, "-c tracing.content=true is refused for prod: spans would carry prompts"},
		{map[string]any{"env": "prod", "tracing.content": true}, "-c tracing.content=true is refused for prod"},
		{map[string]any{"tracing.content": "yes"}, "-c tracing.content must be true or false"},
		{map[string]any{"tracing.samplePercent": "101"}, "-c tracing.samplePercent must be a whole number from 0 to 100"},
		{map[string]any{"tracing.samplePercent": "-1"}, "-c tracing.samplePercent must be a whole number from 0 to 100"},
		{map[string]any{"tracing.samplePercent": 12.5}, "-c tracing.samplePercent must be a whole number from 0 to 100"},
		{map[string]any{"tracing.samplePercent": "ten"}, "-c tracing.samplePercent must be a whole number from 0 to 100"},
		{map[string]any{"tracing.endpoint": "https://collector"}, "-c tracing.endpoint: unknown key (want tracing.samplePercent or tracing.content)"},
	} {
		_, err := configFrom(t, c.context, "")
		assert.ErrorContains(t, err, c.want, "%v", c.context)
	}
}

// A context change of the sample rate (and content, outside prod)
// changes every function's variables, and nothing else of tracing.
func TestATracingContextChangeChangesTheTemplate(t *testing.T) {
	// GIVEN dev deployed with -c tracing.samplePercent=37 -c tracing.content=true
	cfg, err := configFrom(t, map[string]any{"env": "dev", "tracing.samplePercent": "37", "tracing.content": "true"}, "")
	require.NoError(t, err)
	m := synthJSON(t, cfg)
	_, before := synth(t, "dev")
	for _, f := range manifest.Functions {
		// THEN every function records 37% of new traces, with content,
		// where dev's defaults were 100% without
		name := devNames.Function(f.Name)
		env, was := functionEnv(t, m, name), functionEnv(t, before, name)
		assert.Equal(t, "37", env[settings.EnvTraceSamplePercent], f.Name)
		assert.Equal(t, "100", was[settings.EnvTraceSamplePercent], f.Name)
		assert.Equal(t, "true", env[settings.EnvTraceContent], f.Name)
		assert.Equal(t, "false", was[settings.EnvTraceContent], f.Name)
		// AND still to the region's X-Ray
		assert.Equal(t, xrayEndpoint, jsonOf(env[settings.EnvTraceEndpoint]), f.Name)
	}
}

// The stage's dashboard leads to its traces: the CloudWatch console's
// X-Ray traces of the stack's region.
func TestTheDashboardLinksToTheTraces(t *testing.T) {
	_, mon, _ := synthMonitoring(t, "dev")
	dashboards := resources(mon, "AWS::CloudWatch::Dashboard")
	require.Len(t, dashboards, 1)
	body := jsonOf(props(dashboards[0])["DashboardBody"])
	assert.Contains(t, body, `https://console.aws.amazon.com/cloudwatch/home?region=",{"Ref":"AWS::Region"},"#xray:traces/query`)
	assert.Contains(t, body, `X-Trace-Id`)
}

// TraceEndpoint names the stack's region, never a literal one.
func TestTheTraceEndpointIsTheRegions(t *testing.T) {
	assert.True(t, strings.HasPrefix(stack.TraceEndpoint(), "https://xray.${Token["))
	assert.True(t, strings.HasSuffix(stack.TraceEndpoint(), ".amazonaws.com/v1/traces"))
}

// LocalStack's stage sends its spans nowhere: its X-Ray takes no OTLP and
// AWS's endpoint is not the container's to reach, so a flush must not
// wait on it.
func TestLocalStacksFunctionsExportNothing(t *testing.T) {
	_, m := synth(t, "localstack")
	names := manifest.Names{Stage: "localstack"}
	for _, f := range manifest.Functions {
		env := functionEnv(t, m, names.Function(f.Name))
		assert.NotContains(t, env, settings.EnvTraceEndpoint, f.Name)
		assert.Equal(t, "100", env[settings.EnvTraceSamplePercent], f.Name)
	}
}
