package stack_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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

// synthesized is one stage's templates (the application's stack and its
// nested monitoring stack), synthesized once for every test that only
// reads them: a synthesis runs the CDK in Node for seconds, and a dozen
// tests read the same two stages (reproducible_test synthesizes afresh, as
// it must).
type synthesized struct {
	tpl, monitoring    assertions.Template
	raw, monitoringRaw []byte
}

var (
	synthMu    sync.Mutex
	synthCache = map[string]synthesized{}
)

// synth builds the stack of env with placeholder function binaries and
// returns its template, as JSON (the test's own copy) and as an
// assertions.Template (shared: its assertions only read it).
func synth(t *testing.T, env string) (assertions.Template, map[string]any) {
	t.Helper()
	s := synthCached(t, env)
	return s.tpl, jsonObject(t, s.raw)
}

// synthMonitoring is synth for the stage's nested monitoring stack
// (monitoring.go): its template, and the application's template whose
// AWS::CloudFormation::Stack resource passes the parameters (fromParent).
func synthMonitoring(t *testing.T, env string) (assertions.Template, map[string]any, map[string]any) {
	t.Helper()
	s := synthCached(t, env)
	return s.monitoring, jsonObject(t, s.monitoringRaw), jsonObject(t, s.raw)
}

func synthCached(t *testing.T, env string) synthesized {
	t.Helper()
	synthMu.Lock()
	s, ok := synthCache[env]
	synthMu.Unlock()
	if ok {
		return s
	}
	// Outside the lock: a synthesis that fails ends this test (FailNow),
	// and must not leave the next test waiting on the lock.
	cfg, err := stack.Lookup(env)
	require.NoError(t, err)
	s.tpl, s.monitoring = synthStacks(t, cfg, assetDir)
	s.raw, err = json.Marshal(s.tpl.ToJSON())
	require.NoError(t, err)
	s.monitoringRaw, err = json.Marshal(s.monitoring.ToJSON())
	require.NoError(t, err)
	handOff(t, env, s.raw, s.monitoringRaw)
	synthMu.Lock()
	synthCache[env] = s
	synthMu.Unlock()
	return s
}

func jsonObject(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

// handOff writes a stage's templates into CONCLAVE_TEMPLATES_DIR, when
// set: make test's cfn-lint lints these instead of synthesizing the
// stages again in a process of its own (the CDK bindings compiled twice
// at once, and a second load of the CDK library). Each is written whole,
// then renamed, so the linter never reads half a file; the nested
// monitoring stack's first, because the linter waits for
// <stage>.template.json alone and then reads both.
func handOff(t *testing.T, env string, raw, monitoringRaw []byte) {
	dir := os.Getenv("CONCLAVE_TEMPLATES_DIR")
	if dir == "" {
		return
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, f := range []struct {
		name string
		raw  []byte
	}{{env + ".monitoring.template.json", monitoringRaw}, {env + ".template.json", raw}} {
		tmp := filepath.Join(dir, f.name+".tmp")
		require.NoError(t, os.WriteFile(tmp, f.raw, 0o644))
		require.NoError(t, os.Rename(tmp, filepath.Join(dir, f.name)))
	}
}

// assetDir holds the placeholder binaries of the shared syntheses, for
// the whole run (TestMain).
var assetDir string

func TestMain(m *testing.M) {
	os.Setenv("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")
	os.Setenv("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
	dir, err := os.MkdirTemp("", "conclave-stack-test-")
	if err == nil {
		err = writeAssets(dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "placeholder assets:", err)
		os.Exit(1)
	}
	assetDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// writeAssets writes a placeholder bootstrap for every manifest function
// into dir, as make build would.
func writeAssets(dir string) error {
	for _, f := range manifest.Functions {
		if err := os.MkdirAll(filepath.Join(dir, f.Name), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f.Name, "bootstrap"), []byte("placeholder"), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// mustAssetDir writes a placeholder bootstrap for every manifest function,
// as make build would, into a directory removed when the test ends.
func mustAssetDir(tb testing.TB) string {
	tb.Helper()
	dist := tb.TempDir()
	require.NoError(tb, writeAssets(dist))
	return dist
}

// synthConfig synthesizes the stack of one stage configuration and
// returns the application's template.
func synthConfig(t *testing.T, cfg stack.EnvConfig, dist string) assertions.Template {
	t.Helper()
	tpl, _ := synthStacks(t, cfg, dist)
	return tpl
}

// synthStacks synthesizes the stack of one stage configuration and returns
// its template and the template of its nested monitoring stack (one
// synthesis: the second Template_FromStack reads the app's assembly).
func synthStacks(t *testing.T, cfg stack.EnvConfig, dist string) (tpl, monitoring assertions.Template) {
	t.Helper()
	env := cfg.Name
	// The context of cdk.json, so the tests assert what `cdk deploy`
	// deploys; awscdk.NewApp(nil) alone would use the legacy defaults.
	flags, err := stack.ContextFromFile("../cdk.json")
	require.NoError(t, err)
	require.NotEmpty(t, flags, "cdk.json has the recommended feature flags")
	app := awscdk.NewApp(&awscdk.AppProps{Context: &flags})
	st := stack.NewConclaveStack(app, "Test-"+env, &stack.Props{Env: cfg, AssetDir: dist})
	return assertions.Template_FromStack(st.Stack, nil), assertions.Template_FromStack(st.Monitoring.Stack, nil)
}

func resources(m map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, r := range m["Resources"].(map[string]any) {
		r := r.(map[string]any)
		if r["Type"] == typ {
			out = append(out, r)
		}
	}
	return out
}

func props(r map[string]any) map[string]any { return r["Properties"].(map[string]any) }

func TestDevStack(t *testing.T) {
	// GIVEN the dev environment WHEN the stack is synthesized
	tpl, m := synth(t, "dev")
	// THEN each check holds on the one template
	for _, c := range []struct {
		name  string
		check func(*testing.T, assertions.Template, map[string]any)
	}{
		{"one arm64 provided.al2023 function per manifest entry, without Lambda's X-Ray, with its own log group", checkDevFunctions},
		{"every manifest route exists behind the Lambda authorizer", checkDevRoutes},
		{"the single table has PITR, TTL and the GSIs", checkDevTable},
		{"queues have dead-letter queues after two retries", checkDevQueues},
		{"the bus routes events to queues through rules", checkDevRules},
		{"state machines are Standard, logged, without X-Ray, deployed from statemachines/", checkDevStateMachines},
		{"permissions are least privilege", checkDevLeastPrivilege},
		{"functions invoke exactly the functions and models the manifest lists", checkDevInvokes},
	} {
		t.Run(c.name, func(t *testing.T) { c.check(t, tpl, m) })
	}
}

// checkDevFunctions checks function settings, runtime, tracing and logs.
func checkDevFunctions(t *testing.T, tpl assertions.Template, m map[string]any) {
	fns := resources(m, "AWS::Lambda::Function")
	require.Len(t, fns, len(manifest.Functions))
	names := map[string]bool{}
	for _, f := range fns {
		p := props(f)
		names[p["FunctionName"].(string)] = true
		assert.Equal(t, "provided.al2023", p["Runtime"])
		assert.Equal(t, []any{"arm64"}, p["Architectures"])
		assert.Equal(t, "bootstrap", p["Handler"])
		// (Our spans are the trace: tracing_test.go.)
		assert.NotContains(t, p, "TracingConfig", "Lambda's own X-Ray would be a second trace")
		assert.Contains(t, p["LoggingConfig"], "LogGroup")
		// (Which variables each function gets: env_test.go.)
		env := p["Environment"].(map[string]any)["Variables"].(map[string]any)
		if name := strings.TrimPrefix(p["FunctionName"].(string), "conclave-dev-"); slices.Contains(manifest.Env[name], settings.EnvTable) {
			assert.Contains(t, env, "TABLE_NAME", name) // every function but the console, which reads no table
		}
		want := map[string]any{"STAGE": "dev", "FEATURE_FLAGS": "collaboration=true,ensemble=true,expert_gate=true,router_model=true,sessions=true,task_delegation=true"}
		for k, v := range want {
			if _, set := env[k]; set {
				assert.Equal(t, v, env[k], p["FunctionName"])
			}
		}
	}
	for _, f := range manifest.Functions {
		assert.True(t, names["conclave-dev-"+f.Name], f.Name)
		fn, _ := manifest.Lookup(f.Name)
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
			"FunctionName": "conclave-dev-" + f.Name, "MemorySize": fn.MemoryMB, "Timeout": fn.Timeout,
		})
	}
	// One per function and machine, and each API's access log.
	tpl.ResourceCountIs(jsii.String("AWS::Logs::LogGroup"), jsii.Number(float64(len(manifest.Functions)+len(manifest.StateMachines)+2)))
	tpl.HasResourceProperties(jsii.String("AWS::Logs::LogGroup"), map[string]any{"LogGroupName": "/aws/lambda/conclave-dev-agents", "RetentionInDays": 14})
}

// checkDevRoutes checks the HTTP API routes and their authorizer.
func checkDevRoutes(t *testing.T, tpl assertions.Template, m map[string]any) {
	routes := resources(m, "AWS::ApiGatewayV2::Route")
	require.Len(t, routes, len(manifest.Routes()))
	keys := map[string]map[string]any{}
	for _, r := range routes {
		p := props(r)
		keys[p["RouteKey"].(string)] = p
	}
	public := 0
	for _, rt := range manifest.Routes() {
		p, ok := keys[rt.Route.Key()]
		require.True(t, ok, rt.Route.Key())
		if rt.Public {
			// A public route (the A2A agent's, the console's): no
			// authorizer at all, its function checks the key itself or
			// needs none.
			public++
			assert.Equal(t, "NONE", p["AuthorizationType"], rt.Route.Key())
			assert.NotContains(t, p, "AuthorizerId", rt.Route.Key())
			continue
		}
		assert.Equal(t, "CUSTOM", p["AuthorizationType"], rt.Route.Key())
		assert.Contains(t, p, "AuthorizerId", rt.Route.Key())
	}
	assert.Equal(t, 5, public, "the A2A card and JSON-RPC routes and the console's three, no other")
	tpl.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Authorizer"), map[string]any{
		"AuthorizerType": "REQUEST", "AuthorizerPayloadFormatVersion": "2.0", "EnableSimpleResponses": true,
		"AuthorizerResultTtlInSeconds": 0,
	})
	// No identity source: a key or a bearer token reaches the authorizer
	// (an identity source would require each).
	_, authz := onlyResource(t, m, "AWS::ApiGatewayV2::Authorizer")
	assert.Empty(t, props(authz)["IdentitySource"], "no identity source")
	tpl.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Integration"), map[string]any{"PayloadFormatVersion": "2.0"})
}

// checkDevTable checks the single table.
func checkDevTable(t *testing.T, tpl assertions.Template, m map[string]any) {
	tpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
		"TableName":                        "conclave-dev-main",
		"BillingMode":                      "PAY_PER_REQUEST",
		"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
		"TimeToLiveSpecification":          map[string]any{"AttributeName": "expires_at", "Enabled": true},
		"KeySchema":                        []any{map[string]any{"AttributeName": "pk", "KeyType": "HASH"}, map[string]any{"AttributeName": "sk", "KeyType": "RANGE"}},
	})
	table := resources(m, "AWS::DynamoDB::Table")[0]
	assert.Len(t, props(table)["GlobalSecondaryIndexes"], len(manifest.MainTable.GSIs))
	assert.Equal(t, "Delete", table["DeletionPolicy"], "dev data is disposable")
}

// checkDevQueues checks the queues and their dead-letter queues.
func checkDevQueues(t *testing.T, tpl assertions.Template, m map[string]any) {
	for _, q := range manifest.Queues {
		if q.DeadLetterOnly {
			tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{"QueueName": "conclave-dev-" + q.Name})
			continue
		}
		tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
			"QueueName":     "conclave-dev-" + q.Name,
			"RedrivePolicy": map[string]any{"maxReceiveCount": q.MaxReceiveCount, "deadLetterTargetArn": assertions.Match_AnyValue()},
		})
	}
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
		"FunctionResponseTypes": []any{"ReportBatchItemFailures"}, "BatchSize": 10,
	})
}

// checkDevRules checks the bus rules.
func checkDevRules(t *testing.T, tpl assertions.Template, m map[string]any) {
	tpl.HasResourceProperties(jsii.String("AWS::Events::EventBus"), map[string]any{"Name": "conclave-dev-bus"})
	tpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]any{
		"EventPattern": map[string]any{"source": []any{"conclave"}},
		"Targets":      assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{"Id": assertions.Match_AnyValue()})}),
	})
}

// checkDevStateMachines checks the state machines.
func checkDevStateMachines(t *testing.T, tpl assertions.Template, m map[string]any) {
	sms := resources(m, "AWS::StepFunctions::StateMachine")
	require.Len(t, sms, len(manifest.StateMachines))
	for _, sm := range sms {
		p := props(sm)
		assert.Equal(t, "STANDARD", p["StateMachineType"])
		assert.Equal(t, map[string]any{"Enabled": false}, p["TracingConfiguration"], "Step Functions' own X-Ray would be a second trace")
		assert.Equal(t, "ALL", p["LoggingConfiguration"].(map[string]any)["Level"])
		def, _ := json.Marshal(p["DefinitionString"])
		assert.Contains(t, string(def), "arn:aws:states:::lambda:invoke")
		subs := p["DefinitionSubstitutions"].(map[string]any)
		for _, want := range manifest.StateMachines {
			if p["StateMachineName"] == "conclave-dev-"+want.Name {
				for k := range want.Substitutions {
					assert.Contains(t, subs, k)
				}
			}
		}
	}
}

// checkDevLeastPrivilege checks that no role gets more than it uses.
func checkDevLeastPrivilege(t *testing.T, tpl assertions.Template, m map[string]any) {
	for _, r := range resources(m, "AWS::IAM::Role") {
		arns, _ := json.Marshal(props(r)["ManagedPolicyArns"])
		assert.NotContains(t, string(arns), "FullAccess")
		assert.NotContains(t, string(arns), "AdministratorAccess")
	}
	for _, r := range resources(m, "AWS::IAM::Policy") {
		doc, _ := json.Marshal(props(r)["PolicyDocument"])
		assert.NotContains(t, string(doc), `"Action":"*"`)
		assert.NotContains(t, string(doc), `"dynamodb:*"`)
	}
	// The authorizer reads keys and counts the team's requests (an
	// update); it puts and deletes nothing and scans nothing.
	policy := policyOf(t, m, "conclave-dev-authorizer")
	assert.Contains(t, policy, "dynamodb:GetItem")
	assert.Contains(t, policy, "dynamodb:UpdateItem")
	assert.NotContains(t, policy, "dynamodb:PutItem")
	assert.NotContains(t, policy, "dynamodb:Scan")
	// The worker may put events; the authorizer may not.
	assert.Contains(t, policyOf(t, m, "conclave-dev-task-worker"), "events:PutEvents")
	assert.NotContains(t, policy, "events:PutEvents")
}

// checkDevInvokes checks the Invoke and model grants against the manifest.
func checkDevInvokes(t *testing.T, tpl assertions.Template, m map[string]any) {
	// GrantInvoke references the target by its logical id, looked up by
	// name so the check does not depend on how constructs nest.
	expertGate := logicalIDOf(t, m, "conclave-dev-expert-gate")
	cfg, err := stack.Lookup("dev")
	require.NoError(t, err)
	for _, f := range manifest.Functions {
		policy := policyOf(t, m, "conclave-dev-"+f.Name)
		calls := strings.Contains(policy, "lambda:InvokeFunction") && strings.Contains(policy, `"`+expertGate+`"`)
		assert.Equal(t, slices.Contains(f.Invokes, "expert-gate"), calls, f.Name)
		// (The Titan embedder's InvokeModel only in a titan stage:
		// TestATitanStageGrantsTheEmbedder.)
		assert.Equal(t, slices.Contains(stack.StageGrants(f, cfg), manifest.GrantModels), strings.Contains(policy, "bedrock:InvokeModel"), f.Name)
		// Exactly the functions that end tasks may wake a waiting parent.
		assert.Equal(t, slices.Contains(f.Grants, manifest.GrantCallback), strings.Contains(policy, "states:SendTaskSuccess"), f.Name)
		// Only the health function describes resources.
		assert.Equal(t, slices.Contains(f.Grants, manifest.GrantDescribeStateMachine), strings.Contains(policy, "states:DescribeStateMachine"), f.Name)
	}
	// The functions that call models, invoke the gate or synthesize
	// replies learn how (which functions get which variables:
	// env_test.go).
	for _, f := range resources(m, "AWS::Lambda::Function") {
		env := props(f)["Environment"].(map[string]any)["Variables"].(map[string]any)
		if _, ok := env["MODEL_PROVIDER"]; ok {
			assert.Equal(t, "bedrock", env["MODEL_PROVIDER"])
		}
		if _, ok := env["FUNCTION_NAMES"]; ok {
			assert.Contains(t, env["FUNCTION_NAMES"], "expert-gate=conclave-dev-expert-gate")
		}
	}
	conversations := props(resourceNamed(t, m, "conclave-dev-conversations"))["Environment"].(map[string]any)["Variables"].(map[string]any)
	assert.NotEmpty(t, conversations["SYNTHESIS_MODEL"])
	assert.Equal(t, "bedrock", conversations["MODEL_PROVIDER"])
}

// policyOf returns the inline policy documents attached to a function's role.
func policyOf(t *testing.T, m map[string]any, functionName string) string {
	t.Helper()
	role := roleOf(t, m, functionName)
	var docs []string
	for _, p := range resources(m, "AWS::IAM::Policy") {
		roles, _ := json.Marshal(props(p)["Roles"])
		if strings.Contains(string(roles), `"`+role+`"`) {
			doc, _ := json.Marshal(props(p)["PolicyDocument"])
			docs = append(docs, string(doc))
		}
	}
	return strings.Join(docs, "\n")
}

// logicalIDOf returns the logical id of the function called functionName.
func logicalIDOf(t *testing.T, m map[string]any, functionName string) string {
	t.Helper()
	for id, r := range m["Resources"].(map[string]any) {
		r := r.(map[string]any)
		if r["Type"] == "AWS::Lambda::Function" && props(r)["FunctionName"] == functionName {
			return id
		}
	}
	t.Fatalf("no function %s", functionName)
	return ""
}

// roleOf returns the logical id of the role of the function called
// functionName.
func roleOf(t *testing.T, m map[string]any, functionName string) string {
	t.Helper()
	for _, f := range resources(m, "AWS::Lambda::Function") {
		if props(f)["FunctionName"] == functionName {
			return props(f)["Role"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
		}
	}
	t.Fatalf("no function %s", functionName)
	return ""
}

func TestProdStackRetainsDataAndTurnsFlagsOff(t *testing.T) {
	// GIVEN the prod environment WHEN the stack is synthesized
	tpl, m := synth(t, "prod")
	// THEN data survives stack deletion and flags are off
	table := resources(m, "AWS::DynamoDB::Table")[0]
	assert.Equal(t, "Retain", table["DeletionPolicy"])
	assert.Equal(t, true, props(table)["DeletionProtectionEnabled"])
	tpl.HasResourceProperties(jsii.String("AWS::Logs::LogGroup"), map[string]any{"LogGroupName": "/aws/lambda/conclave-prod-agents", "RetentionInDays": 365})
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"FunctionName": "conclave-prod-agents",
		"MemorySize":   1024,
		"Environment":  map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{"FEATURE_FLAGS": "collaboration=false,ensemble=false,expert_gate=false,router_model=false,sessions=false,task_delegation=false"})},
	})
}

func TestUnknownEnvironmentIsRejected(t *testing.T) {
	_, err := stack.Lookup("qa-typo")
	assert.ErrorContains(t, err, "unknown environment")
}
