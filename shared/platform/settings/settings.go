// Package settings is the environment contract between the CDK app, which
// sets each function's environment, and the runtime, which reads it: the
// variable names, the name=value pair encoding and the feature flags. It
// imports only the standard library, so the CDK synth links none of the
// runtime and both sides cannot drift apart.
package settings

import (
	"sort"
	"strconv"
	"strings"
)

// The environment variables a function may read. A function reads only the
// ones it declares (manifest.Env) and the CDK app sets only those; Load
// checks each as its entry in Vars says: a required one that is missing or
// any that is malformed stops the function's cold start.
const (
	EnvStage         = "STAGE"
	EnvTable         = "TABLE_NAME"
	EnvBus           = "EVENT_BUS_NAME"
	EnvStateMachines = "STATE_MACHINE_ARNS" // name=arn,name=arn
	EnvQueues        = "QUEUE_URLS"         // name=url,name=url
	EnvFunctions     = "FUNCTION_NAMES"     // name=physical name (functions it invokes)
	EnvFlags         = "FEATURE_FLAGS"      // collaboration=true,expert_gate=true,ensemble=false
	EnvModelProvider = "MODEL_PROVIDER"     // local (default), bedrock or openai
	EnvModelTiers    = "MODEL_TIERS"        // tier_0=model id,tier_1=…,tier_2=…
	// EnvExtraModels are the model ids agents of the stage may name
	// besides the tiers' (model id,model id): with the tiers', the models
	// the stage offers (GET /v1/models) and the only ones its Bedrock
	// grants name.
	EnvExtraModels   = "EXTRA_MODELS"
	EnvSynthesis     = "SYNTHESIS_MODEL" // model id that synthesizes ENSEMBLE replies; empty merges
	EnvOpenAIBaseURL = "OPENAI_BASE_URL"
	// EnvEmbedder picks the ExpertGate's semantic signal: wordllama (the
	// default: the static model packaged with the function), titan
	// (Amazon Titan Text Embeddings V2 on Bedrock, TitanEmbedModel, with
	// the skill vectors stored in the table) or none (lexical only).
	// Anything else fails the expert-gate function's start.
	EnvEmbedder     = "ROUTING_EMBEDDER"
	EnvOpenAIAPIKey = "OPENAI_API_KEY"
	// EnvOpenAIModel is the model every call to the OpenAI-compatible
	// endpoint names, whatever model id the call carries: a local server
	// (Ollama, llama.cpp, vLLM) serves the models it has, not the tiers'
	// Bedrock ids (docs/local-cloud.md). Absent: each call names its own.
	EnvOpenAIModel = "OPENAI_MODEL"
	// EnvTeamRateLimit is the most requests per second one team may make
	// (the authorizer's; 0 or unset: no per-team limit).
	EnvTeamRateLimit = "TEAM_RATE_LIMIT"
	// EnvUserRateLimit is the most requests per second one person of a
	// team may make (a bearer token's user, or the user a key acts for);
	// 0 or unset: a fifth of the team's (authorizer.DefaultPerUser). It
	// is counted only under a team's limit, so without TEAM_RATE_LIMIT
	// it limits nothing (the CDK app refuses that stage).
	EnvUserRateLimit = "USER_RATE_LIMIT"
	// EnvMCPLoopbackOnly=true keeps MCP packs to loopback servers
	// (toolpacks.NetPolicy): set by the local cloud alone, whose tests
	// start their MCP server on 127.0.0.1 and must reach nothing else.
	// The CDK app never sets it: deployed, a pack reaches public https
	// servers only.
	EnvMCPLoopbackOnly = "MCP_LOOPBACK_ONLY"
	// EnvStreamURL is the streaming API's base URL (the REST API stage's
	// invoke URL, no trailing slash): the A2A agent card lists the
	// agent's streaming endpoint under it and says streaming: true. The
	// CDK app sets it from the REST API, the local cloud from its
	// streaming port; absent, the card offers no streaming.
	EnvStreamURL = "STREAM_URL"
	// EnvCORSOrigins are the browser origins the stage's APIs answer (-c
	// cors.origins). The streaming API's functions echo a listed Origin
	// themselves: a REST proxy integration passes their headers untouched,
	// so no gateway adds it to a streamed answer. Absent: no CORS headers.
	EnvCORSOrigins = "CORS_ORIGINS"
	// EnvConsoleIssuer and EnvConsoleClientID are the OpenID Connect
	// provider the console signs people in with (authorization code with
	// PKCE) and the console's client id there: the stage's -c
	// console.issuer and console.client_id, the local issuer in the local
	// cloud. Absent: the console signs in with an API key only.
	EnvConsoleIssuer   = "CONSOLE_OIDC_ISSUER"
	EnvConsoleClientID = "CONSOLE_OIDC_CLIENT_ID"
	// EnvTraceEndpoint is where a function sends its spans: an OTLP/HTTP
	// traces URL (shared/platform/tracing). Deployed, the region's X-Ray
	// OTLP endpoint (https://xray.<region>.amazonaws.com/v1/traces), signed
	// with the function's role; locally, the edge's. Absent: spans are
	// made (the answers' X-Trace-Id) and sent nowhere.
	EnvTraceEndpoint = "TRACE_ENDPOINT"
	// EnvTraceSamplePercent is the share of new traces recorded, 0-100
	// (a hop's trace follows its parent's decision).
	EnvTraceSamplePercent = "TRACE_SAMPLE_PERCENT"
	// EnvTraceContent=true records prompts, completions and tool
	// arguments as span events; off unless a stage turns it on (never in
	// prod: they are the team's data).
	EnvTraceContent = "TRACE_CONTENT"
)

// Flag names in FEATURE_FLAGS.
const (
	FlagCollaboration = "collaboration"
	FlagExpertGate    = "expert_gate"
	FlagEnsemble      = "ensemble"
	// FlagTaskDelegation turns on tasks, delegation and reports (the
	// seed's enable_task_delegation, phase 4).
	FlagTaskDelegation = "task_delegation"
	// FlagSessions turns on collaboration sessions (off in prod until
	// turned on deliberately).
	FlagSessions = "sessions"
	// FlagRouterModel lets the tier-0 model decide who answers when the
	// ExpertGate is unsure (shared/routing/cascade, docs/routing.md); it needs the
	// gate.
	FlagRouterModel = "router_model"
)

// Flags are the feature flags of a stage. A flag that is missing is off
// (the safe default, as in prod).
type Flags struct {
	Collaboration  bool
	ExpertGate     bool
	Ensemble       bool
	TaskDelegation bool
	Sessions       bool
	RouterModel    bool
}

// Effective are the flags as they act: the seed's phases build on each
// other ("Feature Flag Progression": routing, then the gate, then
// delegation, then full collaboration), so a flag whose phase needs an
// earlier one that is off is off. The gate and the ensemble are routing
// (collaboration); the router model decides only when the gate is unsure,
// so it needs the gate; delegation needs collaboration; sessions run their
// stages as tasks, so they need delegation.
func (f Flags) Effective() Flags {
	f.ExpertGate = f.ExpertGate && f.Collaboration
	f.Ensemble = f.Ensemble && f.Collaboration
	f.RouterModel = f.RouterModel && f.ExpertGate
	f.TaskDelegation = f.TaskDelegation && f.Collaboration
	f.Sessions = f.Sessions && f.TaskDelegation
	return f
}

// On reports whether the named flag is on (effective; "" is always on).
func (f Flags) On(name string) bool {
	e := f.Effective()
	switch name {
	case "":
		return true
	case FlagCollaboration:
		return e.Collaboration
	case FlagExpertGate:
		return e.ExpertGate
	case FlagEnsemble:
		return e.Ensemble
	case FlagTaskDelegation:
		return e.TaskDelegation
	case FlagSessions:
		return e.Sessions
	case FlagRouterModel:
		return e.RouterModel
	}
	return false
}

// FlagNames are the flags FEATURE_FLAGS may set.
var FlagNames = []string{FlagCollaboration, FlagExpertGate, FlagEnsemble, FlagTaskDelegation, FlagSessions, FlagRouterModel}

// ParseFlags reads "collaboration=true,expert_gate=true,ensemble=false".
func ParseFlags(s string) Flags {
	m := ParsePairs(s)
	on := func(k string) bool { return m[k] == "true" }
	return Flags{Collaboration: on(FlagCollaboration), ExpertGate: on(FlagExpertGate), Ensemble: on(FlagEnsemble),
		TaskDelegation: on(FlagTaskDelegation), Sessions: on(FlagSessions), RouterModel: on(FlagRouterModel)}
}

// String encodes the flags for FEATURE_FLAGS, every flag named, sorted.
func (f Flags) String() string {
	b := func(v bool) string {
		if v {
			return "true"
		}
		return "false"
	}
	return EncodePairs(map[string]string{FlagCollaboration: b(f.Collaboration), FlagExpertGate: b(f.ExpertGate), FlagEnsemble: b(f.Ensemble),
		FlagTaskDelegation: b(f.TaskDelegation), FlagSessions: b(f.Sessions), FlagRouterModel: b(f.RouterModel)})
}

// EncodePairs renders name=value pairs sorted by name, so the same map
// always gives the same variable (and the same template).
func EncodePairs(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ",")
}

// ParseList reads "a,b": the non-empty items, trimmed, in order (nil for
// none).
func ParseList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// ParsePairs is the inverse of EncodePairs; malformed parts are skipped.
func ParsePairs(s string) map[string]string {
	out := map[string]string{}
	for _, p := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(p, "="); ok {
			out[k] = v
		}
	}
	return out
}

// Config is everything a function may learn from its environment.
type Config struct {
	Stage         string
	TableName     string
	BusName       string
	StateMachines map[string]string
	Queues        map[string]string
	Functions     map[string]string
	Flags         Flags
	ModelProvider string
	// Tiers maps a model tier (tier_0…) to a model id; empty keeps the
	// defaults of the routing package.
	Tiers map[string]string
	// ExtraModels is EnvExtraModels (nil: the tiers' models alone).
	ExtraModels   []string
	Synthesis     string
	OpenAIBaseURL string
	OpenAIAPIKey  string
	// OpenAIModel is EnvOpenAIModel ("" when calls name their own).
	OpenAIModel string
	// TeamRateLimit is EnvTeamRateLimit.
	TeamRateLimit int
	// UserRateLimit is EnvUserRateLimit (0: a fifth of the team's).
	UserRateLimit int
	// Embedder is EnvEmbedder ("" is the default, wordllama).
	Embedder string
	// MCPLoopbackOnly is EnvMCPLoopbackOnly.
	MCPLoopbackOnly bool
	// StreamURL is EnvStreamURL ("" when the stage has no streaming API).
	StreamURL string
	// CORSOrigins is EnvCORSOrigins (nil: none).
	CORSOrigins []string
	// ConsoleIssuer and ConsoleClientID are EnvConsoleIssuer and
	// EnvConsoleClientID ("": API keys only).
	ConsoleIssuer, ConsoleClientID string
	// TraceEndpoint is EnvTraceEndpoint ("": spans are not sent).
	TraceEndpoint string
	// TraceSamplePercent is EnvTraceSamplePercent (Load's default: 100).
	TraceSamplePercent int
	// TraceContent is EnvTraceContent.
	TraceContent bool
}

// Embedders EnvEmbedder may name.
const (
	EmbedderWordLlama = "wordllama"
	EmbedderTitan     = "titan"
	EmbedderNone      = "none"
)

// TitanEmbedModel is the Bedrock model EmbedderTitan calls (InvokeModel).
// It lives in this contract because both sides need it: the runtime calls
// it, and the CDK app grants bedrock:InvokeModel on its foundation-model
// ARN alone.
const TitanEmbedModel = "amazon.titan-embed-text-v2:0"

// TitanEmbedDimensions is the vector length the stage asks of Titan
// (shared/models/bedrock TitanDimensions, which says why 512).
const TitanEmbedDimensions = 512

// FromLookup reads every variable of Config through get (a map in tests),
// leniently: a missing variable reads as empty, a malformed number as 0.
// Tests use it to wire a function from a hand-written environment;
// functions start through Load, which is strict.
func FromLookup(get func(string) string) Config {
	return Config{
		Stage:         get(EnvStage),
		TableName:     get(EnvTable),
		BusName:       get(EnvBus),
		StateMachines: ParsePairs(get(EnvStateMachines)),
		Queues:        ParsePairs(get(EnvQueues)),
		Functions:     ParsePairs(get(EnvFunctions)),
		Flags:         ParseFlags(get(EnvFlags)),
		ModelProvider: get(EnvModelProvider),
		Tiers:         ParsePairs(get(EnvModelTiers)),
		ExtraModels:   ParseList(get(EnvExtraModels)),
		Synthesis:     get(EnvSynthesis),
		OpenAIBaseURL: get(EnvOpenAIBaseURL),
		OpenAIAPIKey:  get(EnvOpenAIAPIKey),
		OpenAIModel:   get(EnvOpenAIModel),
		TeamRateLimit: atoi(get(EnvTeamRateLimit)),
		UserRateLimit: atoi(get(EnvUserRateLimit)),
		Embedder:      get(EnvEmbedder),

		MCPLoopbackOnly: get(EnvMCPLoopbackOnly) == "true",
		StreamURL:       get(EnvStreamURL),
		CORSOrigins:     ParseList(get(EnvCORSOrigins)),
		ConsoleIssuer:   get(EnvConsoleIssuer),
		ConsoleClientID: get(EnvConsoleClientID),

		TraceEndpoint:      get(EnvTraceEndpoint),
		TraceSamplePercent: atoi(get(EnvTraceSamplePercent)),
		TraceContent:       get(EnvTraceContent) == "true",
	}
}

// atoi is a non-negative number, or 0 for anything else.
func atoi(s string) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return 0
	}
	return n
}
