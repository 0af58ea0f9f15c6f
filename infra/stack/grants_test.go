package stack_test

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/stack"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/statemachines"
)

var devNames = manifest.Names{Stage: "dev"}

// grantPair is one action allowed on one resource (the resource as the
// template's JSON: a GetAtt, a Join, "*").
type grantPair struct{ Action, Resource string }

// rolePairs returns every action-resource pair the inline policies of role
// allow.
func rolePairs(t *testing.T, m map[string]any, role string) map[grantPair]bool {
	t.Helper()
	out := map[grantPair]bool{}
	for _, p := range resources(m, "AWS::IAM::Policy") {
		roles, _ := json.Marshal(props(p)["Roles"])
		if !strings.Contains(string(roles), `"`+role+`"`) {
			continue
		}
		for _, st := range props(p)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			st := st.(map[string]any)
			require.Equal(t, "Allow", st["Effect"])
			for _, a := range list(st["Action"]) {
				for _, r := range list(st["Resource"]) {
					res, _ := json.Marshal(r)
					out[grantPair{a.(string), string(res)}] = true
				}
			}
		}
	}
	return out
}

// list is v as a list (a policy's single action or resource is a scalar).
func list(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

// arnOf is the template JSON of the ARN of the resource of type typ whose
// property prop is name.
func arnOf(t *testing.T, m map[string]any, typ, prop, name string) string {
	t.Helper()
	for id, r := range m["Resources"].(map[string]any) {
		r := r.(map[string]any)
		if r["Type"] == typ && (prop == "" || props(r)[prop] == name) {
			b, _ := json.Marshal(map[string]any{"Fn::GetAtt": []any{id, "Arn"}})
			return string(b)
		}
	}
	t.Fatalf("no %s %s", typ, name)
	return ""
}

func indexARN(table, index string) string {
	var getAtt any
	_ = json.Unmarshal([]byte(table), &getAtt)
	b, _ := json.Marshal(map[string]any{"Fn::Join": []any{"", []any{getAtt, "/index/" + index}}})
	return string(b)
}

func actionsOf(pairs map[grantPair]bool) []string {
	set := map[string]bool{}
	for p := range pairs {
		set[p.Action] = true
	}
	out := make([]string, 0, len(set))
	for a := range set {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// Every role of the dev stack allows exactly what is called with it: the
// functions' (checkFunctionRoles) and the state machines'
// (checkMachineRoles). One synth serves both.
func TestRolesAllowExactlyWhatIsCalled(t *testing.T) {
	// GIVEN the dev template
	_, m := synth(t, "dev")
	cfg, err := stack.Lookup("dev")
	require.NoError(t, err)
	require.Empty(t, cfg.Embedder, "dev keeps the default embedder (wordllama)")
	t.Run("functions", func(t *testing.T) { checkFunctionRoles(t, m, cfg) })
	t.Run("state machines", func(t *testing.T) { checkMachineRoles(t, m) })
	// AND without Titan, the gate reads only (the agents, loads, ratings
	// and the team's classifier), and neither it nor the agents function
	// may call Bedrock
	gate := rolePairs(t, m, roleOf(t, m, "conclave-dev-expert-gate"))
	assert.Equal(t, []string{string(manifest.GrantGetItem), string(manifest.GrantQuery), string(manifest.GrantPutSpans)}, actionsOf(gate))
	assert.NotContains(t, actionsOf(rolePairs(t, m, roleOf(t, m, "conclave-dev-agents"))), string(manifest.GrantModels))
	// AND only the functions that register and call MCP packs or A2A
	// agents outside the team reach Secrets Manager: conversations writes
	// a pack's credential, agents an A2A agent's; the functions that run
	// agents (the model port's A2A provider) only read them
	for _, f := range manifest.Functions {
		var secrets []string
		for _, a := range actionsOf(rolePairs(t, m, roleOf(t, m, "conclave-dev-"+f.Name))) {
			if strings.HasPrefix(a, "secretsmanager:") {
				secrets = append(secrets, a)
			}
		}
		switch f.Name {
		case "conversations", "streams":
			// streams links the chat service's wiring, MCP pack
			// registration included (manifest: its grants' comment).
			assert.Equal(t, []string{"secretsmanager:CreateSecret", "secretsmanager:DeleteSecret", "secretsmanager:GetSecretValue", "secretsmanager:PutSecretValue"}, secrets)
		case "agents":
			assert.Equal(t, []string{"secretsmanager:CreateSecret", "secretsmanager:DeleteSecret", "secretsmanager:GetSecretValue", "secretsmanager:PutSecretValue"}, secrets)
		case "task-worker", "consultations", "session-steps", "plan-steps", "task-sweeper", "sessions":
			assert.Equal(t, []string{"secretsmanager:GetSecretValue"}, secrets)
		default:
			assert.Empty(t, secrets, f.Name)
		}
	}
}

// A stage whose embedder is Titan grants the expert-gate and agents
// functions InvokeModel on the Titan model alone (no chat model), the gate
// the skill vectors' writes, and tells both ROUTING_EMBEDDER=titan; every
// role still allows exactly what its code calls (checkFunctionRoles).
func TestATitanStageGrantsTheEmbedder(t *testing.T) {
	// GIVEN the dev stage with the Titan embedder
	cfg, err := stack.Lookup("dev")
	require.NoError(t, err)
	cfg.Embedder = settings.EmbedderTitan
	// WHEN it is synthesized
	raw, err := json.Marshal(synthConfig(t, cfg, assetDir).ToJSON())
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	// THEN every function's role is exactly its stage's grants
	checkFunctionRoles(t, m, cfg)
	// AND the embedder's functions may invoke Titan and nothing else
	titan := titanARN()
	for _, name := range []string{"expert-gate", "agents"} {
		pairs := rolePairs(t, m, roleOf(t, m, "conclave-dev-"+name))
		var models []string
		for p := range pairs {
			if p.Action == string(manifest.GrantModels) {
				models = append(models, p.Resource)
			}
		}
		assert.Equal(t, []string{titan}, models, name)
	}
	gate := rolePairs(t, m, roleOf(t, m, "conclave-dev-expert-gate"))
	table := arnOf(t, m, "AWS::DynamoDB::Table", "", "")
	for _, g := range []manifest.Grant{manifest.GrantQuery, manifest.GrantPutItem, manifest.GrantDeleteItem} {
		assert.True(t, gate[grantPair{string(g), table}], g)
	}
	// AND exactly those two functions are told to use Titan
	for _, f := range resources(m, "AWS::Lambda::Function") {
		env := props(f)["Environment"].(map[string]any)["Variables"].(map[string]any)
		name := strings.TrimPrefix(props(f)["FunctionName"].(string), "conclave-dev-")
		_, embeds := manifest.EmbedderGrants[name]
		if embeds {
			assert.Equal(t, settings.EmbedderTitan, env[settings.EnvEmbedder], name)
		} else {
			assert.NotContains(t, env, settings.EnvEmbedder, name)
		}
	}
}

// titanARN is the template JSON of the Titan model's ARN in the stack's
// partition and region.
func titanARN() string {
	return jsonOf(map[string]any{"Fn::Join": []any{"", []any{"arn:", map[string]any{"Ref": "AWS::Partition"}, ":bedrock:",
		map[string]any{"Ref": "AWS::Region"}, "::foundation-model/" + settings.TitanEmbedModel}}})
}

// The embedder's grants are grants of their functions' entries: a stage
// without Titan takes away only what the manifest holds.
func TestEmbedderGrantsAreManifestGrants(t *testing.T) {
	require.NotEmpty(t, manifest.EmbedderGrants)
	for name, gs := range manifest.EmbedderGrants {
		f, ok := manifest.Lookup(name)
		require.True(t, ok, name)
		for _, g := range gs {
			assert.Contains(t, f.Grants, g, name)
		}
		assert.Equal(t, f.Grants, stack.StageGrants(f, stack.EnvConfig{Embedder: settings.EmbedderTitan}), name)
		assert.Len(t, stack.StageGrants(f, stack.EnvConfig{}), len(f.Grants)-len(gs), name)
	}
}

// checkFunctionRoles: each function's role allows exactly the IAM actions of its manifest
// grants (which infra/grants holds to the calls of its code), each on
// exactly its resources, and nothing else: the table's actions on the
// table, Query on the indexes it names and no other, the bus's on the
// bus, its dead-letter queue alone; lambda:InvokeFunction on exactly the
// functions in its Invokes; the executions' actions on the stage's
// machines (which machine a function starts is the request's, so any of
// them; a machine of another stage is an extra target), the describes on
// the stage's machines and queues; Bedrock on exactly the stage's models,
// or for the embedder's functions (manifest.EmbedderGrants) on the Titan
// model alone, and only in a stage whose embedder is titan
// (stack.StageGrants); xray:PutSpans (every function exports its spans,
// manifest.TracingGrants) on "*", the one action on every resource, as
// X-Ray scopes it to none. What the platform adds on the function's
// behalf is set aside by name: the SQS event source's polling of the
// trigger queue (Lambda's active tracing, whose upload was set aside here
// too, is off).
func checkFunctionRoles(t *testing.T, m map[string]any, cfg stack.EnvConfig) {
	table := arnOf(t, m, "AWS::DynamoDB::Table", "", "")
	bus := arnOf(t, m, "AWS::Events::EventBus", "", "")
	queue := func(name string) string {
		return arnOf(t, m, "AWS::SQS::Queue", "QueueName", devNames.Queue(name))
	}
	targets := grantTargets(t, m, cfg)
	for _, f := range manifest.Functions {
		t.Run(f.Name, func(t *testing.T) {
			// WHEN the pairs its role allows are read, the platform's set aside
			pairs := rolePairs(t, m, roleOf(t, m, "conclave-dev-"+f.Name))
			if f.Trigger == manifest.TriggerSQS {
				trigger := queue(f.Queue)
				for _, a := range []string{"sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueUrl", "sqs:DeleteMessage", "sqs:GetQueueAttributes"} {
					require.True(t, pairs[grantPair{a, trigger}], "the event source polls %s", f.Queue)
					delete(pairs, grantPair{a, trigger})
				}
			}

			// THEN its actions are exactly its stage's grants
			granted := f
			granted.Grants = stack.StageGrants(f, cfg)
			assert.Equal(t, granted.Actions(), actionsOf(pairs))
			// AND each is on exactly the resources it acts on
			want := map[grantPair]bool{}
			for _, g := range granted.Grants {
				switch {
				case g == manifest.GrantModels && slices.Contains(manifest.EmbedderGrants[f.Name], g):
					want[grantPair{string(g), titanARN()}] = true
				case g.Service() == "dynamodb":
					want[grantPair{string(g), table}] = true
				case g.Service() == "events":
					want[grantPair{string(g), bus}] = true
				case g == manifest.GrantDeadLetter:
					want[grantPair{string(g), queue(manifest.Queue{Name: f.Queue}.DLQName())}] = true
				case g == manifest.GrantPutSpans:
					want[grantPair{string(g), `"*"`}] = true
				default:
					require.NotEmpty(t, targets[g], "%s: no resources known for %s; add them above", f.Name, g)
					for _, r := range targets[g] {
						want[grantPair{string(g), r}] = true
					}
				}
			}
			for _, ix := range f.Indexes {
				want[grantPair{string(manifest.GrantQuery), indexARN(table, ix)}] = true
			}
			for _, target := range f.Invokes {
				fn := arnOf(t, m, "AWS::Lambda::Function", "FunctionName", devNames.Function(target))
				want[grantPair{manifest.ActionInvokeFunction, fn}] = true
				want[grantPair{manifest.ActionInvokeFunction, versionsOf(fn)}] = true
			}
			for p := range pairs {
				if p.Action != string(manifest.GrantPutSpans) {
					assert.NotEqual(t, `"*"`, p.Resource, "%s on every resource", p.Action)
				}
			}
			assert.Equal(t, want, pairs)
		})
	}
}

// grantTargets are the resources the manifest's grants name beyond the
// table, the bus and a dead-letter queue, as the template writes them.
func grantTargets(t *testing.T, m map[string]any, cfg stack.EnvConfig) map[manifest.Grant][]string {
	targets := map[manifest.Grant][]string{}
	for _, sm := range manifest.StateMachines {
		name := devNames.StateMachine(sm.Name)
		machine := stackARN(":states:", true, ":stateMachine:"+name)
		targets[manifest.GrantStartExecution] = append(targets[manifest.GrantStartExecution], machine)
		targets[manifest.GrantCallback] = append(targets[manifest.GrantCallback], machine)
		targets[manifest.GrantStopExecution] = append(targets[manifest.GrantStopExecution], stackARN(":states:", true, ":execution:"+name+":*"))
		targets[manifest.GrantDescribeExecution] = append(targets[manifest.GrantDescribeExecution], stackARN(":states:", true, ":execution:"+name+":*"))
		targets[manifest.GrantDescribeStateMachine] = append(targets[manifest.GrantDescribeStateMachine],
			jsonOf(map[string]any{"Ref": logicalIDByName(t, m, "AWS::StepFunctions::StateMachine", "StateMachineName", name)}))
	}
	for id, r := range m["Resources"].(map[string]any) {
		if r.(map[string]any)["Type"] == "AWS::SQS::Queue" {
			targets[manifest.GrantGetQueueAttributes] = append(targets[manifest.GrantGetQueueAttributes], jsonOf(map[string]any{"Fn::GetAtt": []any{id, "Arn"}}))
		}
	}
	require.Len(t, targets[manifest.GrantGetQueueAttributes], len(manifest.Queues)+countDLQs())
	for _, id := range cfg.Models() {
		targets[manifest.GrantModels] = append(targets[manifest.GrantModels],
			stackARN(":bedrock:*::foundation-model/"+id, false, ""),
			stackARN(":bedrock:", true, ":inference-profile/*."+id))
	}
	// Streaming acts on the same models.
	targets[manifest.GrantModelsStream] = targets[manifest.GrantModels]
	// The MCP packs' and the A2A agents' credentials: this stage's two
	// secret prefixes alone.
	secrets := stackARN(":secretsmanager:", true, ":secret:"+manifest.SecretsPrefix("dev")+"*")
	a2aSecrets := stackARN(":secretsmanager:", true, ":secret:"+manifest.A2ASecretsPrefix("dev")+"*")
	for _, g := range []manifest.Grant{manifest.GrantGetSecret, manifest.GrantCreateSecret, manifest.GrantPutSecret, manifest.GrantDeleteSecret} {
		targets[g] = []string{secrets, a2aSecrets}
	}
	return targets
}

// stackARN is the template JSON of an ARN the stack builds with its own
// partition (and, with local, its region and account): "arn:" Partition
// head [":" Region ":" Account tail].
func stackARN(head string, local bool, tail string) string {
	parts := []any{"arn:", map[string]any{"Ref": "AWS::Partition"}, head}
	if local {
		parts = append(parts, map[string]any{"Ref": "AWS::Region"}, ":", map[string]any{"Ref": "AWS::AccountId"}, tail)
	}
	return jsonOf(map[string]any{"Fn::Join": []any{"", parts}})
}

// versionsOf is the template JSON of fn's ARN with ":*" (its versions and
// aliases), which GrantInvoke adds beside the function's own ARN.
func versionsOf(fn string) string {
	var getAtt any
	_ = json.Unmarshal([]byte(fn), &getAtt)
	return jsonOf(map[string]any{"Fn::Join": []any{"", []any{getAtt, ":*"}}})
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// countDLQs is the number of dead-letter queues the manifest's source
// queues have (a dead-letter-only queue is counted as a queue).
func countDLQs() int {
	n := 0
	for _, q := range manifest.Queues {
		if !q.DeadLetterOnly {
			n++
		}
	}
	return n
}

// checkMachineRoles: each state machine's role allows exactly what the Task states of its
// definition do, on the resources they name (statemachines.Actions):
// lambda:InvokeFunction on the functions it invokes, sqs:SendMessage on
// its dead-letter queue, no table or bus action unless a Task performs
// it. The platform's part (log delivery, which needs "*") is set aside by
// name; X-Ray's is not there to set aside (the machines' tracing is off).
func checkMachineRoles(t *testing.T, m map[string]any) {
	platform := map[string]bool{
		"logs:CreateLogDelivery": true, "logs:DeleteLogDelivery": true, "logs:DescribeLogGroups": true,
		"logs:DescribeResourcePolicies": true, "logs:GetLogDelivery": true, "logs:ListLogDeliveries": true,
		"logs:PutResourcePolicy": true, "logs:UpdateLogDelivery": true,
	}
	for _, sm := range manifest.StateMachines {
		t.Run(sm.Name, func(t *testing.T) {
			raw, err := statemachines.Definition(sm.File)
			require.NoError(t, err)
			uses, err := statemachines.Actions(raw)
			require.NoError(t, err)
			// WHEN the pairs its role allows are read, the platform's set aside
			var role string
			for _, r := range resources(m, "AWS::StepFunctions::StateMachine") {
				if props(r)["StateMachineName"] == devNames.StateMachine(sm.Name) {
					role = props(r)["RoleArn"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
				}
			}
			require.NotEmpty(t, role)
			pairs := rolePairs(t, m, role)
			for p := range pairs {
				if platform[p.Action] {
					assert.Equal(t, `"*"`, p.Resource)
					delete(pairs, p)
				}
			}
			// THEN the actions are exactly its Tasks', each on the
			// resources its substitutions name
			want := map[grantPair]bool{}
			for placeholder, actions := range uses {
				ref, err := manifest.ParseRef(sm.Substitutions[placeholder])
				require.NoError(t, err, placeholder)
				for _, a := range actions {
					switch ref.Kind {
					case manifest.RefFunction:
						fn := arnOf(t, m, "AWS::Lambda::Function", "FunctionName", devNames.Function(ref.Name))
						want[grantPair{a, fn}], want[grantPair{a, versionsOf(fn)}] = true, true
					case manifest.RefQueue:
						want[grantPair{a, arnOf(t, m, "AWS::SQS::Queue", "QueueName", devNames.Queue(ref.Name))}] = true
					default:
						t.Fatalf("%s: no check for a %s reference yet", placeholder, ref.Kind)
					}
				}
			}
			assert.Equal(t, want, pairs)
		})
	}
}
