package manifest

import (
	"slices"

	"github.com/conclave-ai/conclave/shared/platform/settings"
)

// Env maps every function to the environment variables it reads: its
// typed configuration. lambdafn loads exactly these at the cold start
// (settings.Load: a required one missing, or any one malformed, stops the
// start naming it; an optional one absent takes its default), the CDK app
// sets exactly these (those the stage gives a value), the local cloud wires
// each function from them, and docs/operations.md lists them.
//
// The declarations live here, beside the functions, because the manifest is
// where a function's needs are read (its trigger, grants, invokes) and
// where its name is defined; how each variable is written, whether it is
// required and its default belong to the variable and are
// settings.Vars'. They are a map of their own rather than a field of
// Function so that one function's needs read in one line each, and so
// that they can change without touching the entries of functions.go.
var Env = map[string][]string{
	// MCP_LOOPBACK_ONLY: the token path fetches issuers' keys under the
	// stage's network policy (loopback only in the local cloud).
	"authorizer": {table, settings.EnvTeamRateLimit, settings.EnvUserRateLimit, settings.EnvMCPLoopbackOnly},
	// The A2A agent checks keys as the authorizer does (its rate limit
	// too), routes as a chat turn does (the gate, the model tiers) and runs
	// tasks; STAGE names its card's version, STREAM_URL its streaming
	// endpoint.
	"a2a": {table, flags, bus, settings.EnvStateMachines, settings.EnvFunctions, settings.EnvModelTiers,
		settings.EnvTeamRateLimit, settings.EnvUserRateLimit, settings.EnvStage, settings.EnvMCPLoopbackOnly, settings.EnvStreamURL},
	// The same agent on the streaming API.
	"a2a-stream": {table, flags, bus, settings.EnvStateMachines, settings.EnvFunctions, settings.EnvModelTiers,
		settings.EnvTeamRateLimit, settings.EnvUserRateLimit, settings.EnvStage, settings.EnvMCPLoopbackOnly, settings.EnvStreamURL, settings.EnvCORSOrigins},
	// The console tells the page where the streaming API and the sign-in
	// provider are.
	"console": {settings.EnvStreamURL, settings.EnvConsoleIssuer, settings.EnvConsoleClientID},
	"health":  {settings.EnvStage, table, bus, settings.EnvStateMachines, settings.EnvQueues},
	// STAGE and MCP_LOOPBACK_ONLY: an external A2A agent's credential is
	// named by stage, its card fetched under the network policy. The
	// provider, the tiers and the extra models: the models the stage
	// offers agents (GET /v1/models, model.id checked on write).
	"agents": {table, flags, bus, settings.EnvEmbedder, settings.EnvStage, settings.EnvMCPLoopbackOnly,
		settings.EnvModelProvider, settings.EnvModelTiers, settings.EnvExtraModels},
	"team":  {table, flags, settings.EnvMCPLoopbackOnly}, // the issuer URL's policy
	"admin": {table},
	"tasks": {table, flags, bus, settings.EnvStateMachines},
	// Lifecycle and session-steps only complete task tokens: no machine
	// ARNs (a token names its execution).
	"task-lifecycle": {table, bus},
	// STAGE and MCP_LOOPBACK_ONLY: the MCP packs' secrets are named by
	// stage, and their network policy.
	"task-worker": append([]string{table, flags, bus, settings.EnvStateMachines, settings.EnvFunctions, settings.EnvModelTiers,
		settings.EnvStage}, models...),
	// MCP_LOOPBACK_ONLY: the network policy of the A2A agents' cards it
	// fetches again.
	"task-sweeper": {table, flags, bus, settings.EnvStateMachines, settings.EnvMCPLoopbackOnly},
	"conversations": append([]string{table, flags, bus, settings.EnvStateMachines, settings.EnvFunctions,
		settings.EnvModelTiers, settings.EnvSynthesis, settings.EnvStage}, models...),
	// A streamed turn is a chat turn (the conversations function's).
	"streams": append([]string{table, flags, bus, settings.EnvStateMachines, settings.EnvFunctions,
		settings.EnvModelTiers, settings.EnvSynthesis, settings.EnvStage, settings.EnvCORSOrigins}, models...),
	"expert-gate": {table, settings.EnvModelTiers, settings.EnvEmbedder},
	"discovery":   {table, settings.EnvFunctions},
	"routing":     {table, bus, settings.EnvEmbedder},
	"messages":    {table, flags, bus},
	"memories":    {table, flags, bus},
	// The queue consumers dead-letter a message themselves (QUEUE_URLS).
	"message-fanout":     {table, settings.EnvQueues},
	"memory-invalidator": {table, settings.EnvQueues},
	"classifier-fitter":  {table, settings.EnvQueues, settings.EnvEmbedder},
	// FUNCTION_NAMES: the expert-gate function it scores through.
	"routing-evaluator": {table, settings.EnvQueues, settings.EnvFunctions},
	"activity-recorder": {table, settings.EnvQueues},
	"result-poster":     {table, settings.EnvQueues},
	// MCP_LOOPBACK_ONLY: the network policy of the push URLs.
	"a2a-push":         {table, settings.EnvQueues, settings.EnvMCPLoopbackOnly},
	"report-finalizer": {table, bus, settings.EnvQueues},
	// MCP_LOOPBACK_ONLY: the network policy of the A2A agents whose tasks
	// a cancel cancels.
	"sessions": {table, flags, bus, settings.EnvStateMachines, settings.EnvMCPLoopbackOnly},
	// MODEL_TIERS: a stage's turn asks the provider's default model, the
	// tier_1 model (shared/wire/providers), as a plan's lead does.
	"session-steps": append([]string{table, flags, bus, settings.EnvModelTiers}, models...),
	"plans":         {table, flags, bus, settings.EnvStateMachines},
	// STATE_MACHINE_ARNS: a plan's steps are executed tasks.
	"plan-steps": append([]string{table, flags, bus, settings.EnvStateMachines, settings.EnvModelTiers}, models...),
	"reports":    {table, flags, bus, settings.EnvStateMachines},
	// STATE_MACHINE_ARNS: resolving a task's escalation stops or starts
	// the task's execution.
	"consultations": append([]string{table, flags, bus, settings.EnvModelTiers, settings.EnvStateMachines, settings.EnvFunctions}, models...),
}

// Shorthands for the variables most functions read.
const (
	table = settings.EnvTable
	bus   = settings.EnvBus
	flags = settings.EnvFlags
)

// models are the variables of the model port (shared/wire/providers):
// MCP_LOOPBACK_ONLY is the network policy of its A2A provider (agents
// outside the team).
var models = []string{settings.EnvModelProvider, settings.EnvOpenAIBaseURL, settings.EnvOpenAIAPIKey, settings.EnvOpenAIModel, settings.EnvMCPLoopbackOnly}

// EnvVars returns the variables the function name reads, as settings.Vars
// describes them, in declaration order.
func EnvVars(name string) []settings.Var {
	var out []settings.Var
	for _, n := range Env[name] {
		out = append(out, settings.Vars[n])
	}
	return out
}

// Tracing are the variables every function reads: lambdafn sets up the
// function's tracer from them before its builder runs (one trace per
// turn, across every function: architecture decision 13).
var Tracing = []string{settings.EnvTraceEndpoint, settings.EnvTraceSamplePercent, settings.EnvTraceContent}

// Every function declares Tracing, after its own variables, so that the
// CDK app sets them, the local cloud wires them and the cold start checks
// them like any other.
func init() {
	for name, vars := range Env {
		vars = vars[:len(vars):len(vars)]
		for _, v := range Tracing {
			if !slices.Contains(vars, v) {
				vars = append(vars, v)
			}
		}
		Env[name] = vars
	}
}
