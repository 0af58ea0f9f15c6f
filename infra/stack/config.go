package stack

import (
	"fmt"
	"math"
	"net/mail"
	"strconv"
	"strings"

	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/conclave-ai/conclave/shared/platform/settings"
)

// EnvConfig is the small per-environment configuration of a stack.
type EnvConfig struct {
	// Name is the stage: it prefixes every physical name (conclave-<name>-…).
	Name string
	// Account and Region pin the stack; empty means the CLI's defaults.
	Account, Region string
	// MemoryScale multiplies every function's manifest memory (1 = as listed).
	MemoryScale float64
	// LogRetentionDays for function, API and state machine logs; a team
	// picks its own per deploy with `-c logRetentionDays=N`
	// (ConfigFromContext), rounded up to a period CloudWatch Logs offers.
	LogRetentionDays int
	// LogPayloads keeps execution data (task instructions, model output)
	// in the state machine logs, at level ALL. Off, the machines log
	// errors only and without data: what an execution carried stays in its
	// history (90 days, access-controlled) instead of in plain logs.
	LogPayloads bool
	// Retain keeps the table, queues and logs when the stack is deleted.
	Retain bool
	// Flags are the feature flags handed to every function as FEATURE_FLAGS,
	// rendered by settings.Flags so the runtime parses exactly what the
	// stack writes. router_model (the tier-0 model deciding when the gate
	// is unsure) is on where the gate is, in dev and staging (every stage's
	// Bedrock grants name its tier-0 model); off in prod with every other
	// flag, and off in the LocalStack stage, as in the local cloud (its
	// routing is the gate's alone). A deploy sets any of them with
	// `-c flags.<name>=true|false` (stagecontext.go).
	Flags settings.Flags
	// Tiers are the routing tiers' models (tier_0, tier_1, tier_2) the
	// deploy chose (`-c models.tier_N=<model id>`); a tier it did not name
	// keeps its default (TierModels). MODEL_TIERS carries them.
	Tiers map[string]string
	// ModelProvider is the agents' default model adapter (MODEL_PROVIDER):
	// bedrock in AWS, local for the LocalStack stage (no Bedrock there).
	ModelProvider string
	// SynthesisModel writes ENSEMBLE replies (SYNTHESIS_MODEL); empty keeps
	// the deterministic merge.
	SynthesisModel string
	// ExtraModels are Bedrock model ids agents of this stage may use
	// besides the routing tiers' (see Models; `-c models.extra=a,b`).
	// EXTRA_MODELS tells the agents function, which offers them.
	ExtraModels []string
	// Embedder is the stage's ROUTING_EMBEDDER (settings.Embedder*): ""
	// keeps the functions' default, the in-process wordllama model.
	// settings.EmbedderTitan calls Amazon Titan Text Embeddings V2 on
	// Bedrock and stores the skill vectors; only then do the expert-gate
	// and agents roles get InvokeModel on that model and the vectors'
	// writes (manifest.EmbedderGrants). No stage uses Titan yet: its
	// routing calibration is not fitted (docs/routing.md, "Titan").
	Embedder string
	// AlarmEmails subscribe to the stage's alarm topic. Set them per deploy
	// with `-c alarmEmails=a@example.com,b@example.com` (ConfigFromContext);
	// other subscribers (chat, paging) attach to the topic, an output.
	AlarmEmails []string
	// API5xxPercent and APILatencyP99Ms are the API alarms' thresholds.
	API5xxPercent   float64
	APILatencyP99Ms int
	// APIRatePerSecond and APIBurst throttle the whole HTTP API (every
	// route, every team together; API Gateway answers 429 above them).
	APIRatePerSecond, APIBurst int
	// TeamRatePerSecond is the most requests one team may make in a second
	// (the authorizer counts them; the route answers 429 above it).
	TeamRatePerSecond int
	// UserRatePerSecond is the most requests one person of a team (a
	// bearer token's user, or the user a key acts for) may make in a
	// second; 0, every stage today, is a fifth of the team's
	// (authorizer.DefaultPerUser). At most TeamRatePerSecond, and only
	// with it: the authorizer counts a person's requests within the
	// team's limit alone.
	UserRatePerSecond int
	// CORSOrigins are the browser origins both APIs answer (-c
	// cors.origins, cors.go); none, the default, turns CORS off.
	CORSOrigins []string
	// Identity is the stage's identity provider, if any (-c cognito=true
	// or -c identity.issuer; identity.go).
	Identity IdentityConfig
	// TraceSamplePercent is the share of new traces the functions record
	// (TRACE_SAMPLE_PERCENT; -c tracing.samplePercent, tracing.go), and
	// TraceContent whether spans carry prompts, completions and tool
	// arguments (TRACE_CONTENT; -c tracing.content, refused in prod).
	TraceSamplePercent int
	TraceContent       bool
	// ReservedConcurrency reserves (and caps) concurrent executions per
	// function: the authorizer keeps capacity however busy the rest is, and
	// the hottest functions cannot take the whole account's. Empty in
	// stages that may run in a new account, whose default limit (10)
	// leaves nothing to reserve.
	ReservedConcurrency map[string]int
}

// Models are the Bedrock model ids the stage's functions may call: the
// three routing tiers', the synthesis model and the extra models. The
// Bedrock grants name exactly these, and the agents function offers
// agents exactly the tiers' and the extra ones (it refuses another
// model.id, which Bedrock would refuse on every reply).
func (c EnvConfig) Models() []string {
	seen := map[string]bool{}
	var out []string
	tiers := c.TierModels()
	for _, id := range append([]string{tiers[routingTier0], tiers[routingTier1], tiers[routingTier2], c.SynthesisModel}, c.ExtraModels...) {
		if id != "" && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// TierModels are the routing tiers' models of the stage: Tiers over the
// defaults.
func (c EnvConfig) TierModels() map[string]string {
	out := map[string]string{routingTier0: tier0, routingTier1: tier1, routingTier2: tier2}
	for _, tier := range sortedKeys(c.Tiers) {
		out[tier] = c.Tiers[tier]
	}
	return out
}

// The routing tiers' default models (routing.DefaultTierModels; a test
// keeps the two equal, infra links no runtime package).
const (
	tier0 = "amazon.nova-micro-v1:0"
	tier2 = "anthropic.claude-3-5-sonnet-20240620-v1:0"
)

// tier1 is the balanced model that synthesizes ensemble replies.
const tier1 = "anthropic.claude-3-5-haiku-20241022-v1:0"

// The routing tiers' names (routing.Tier0…), the names of MODEL_TIERS.
const (
	routingTier0 = "tier_0"
	routingTier1 = "tier_1"
	routingTier2 = "tier_2"
)

// Environments are the stages Conclave deploys to. Feature flags default to
// on in dev and off in prod, where they are turned on deliberately. Every
// trace is recorded in dev, staging and the LocalStack stage (little
// traffic; any turn may be the one to explain); prod keeps one new trace
// in ten: spans are billed as CloudWatch Logs ingestion (Transaction
// Search), a chat turn makes dozens, and at prod's volume a tenth still
// shows every kind of turn many times an hour (a hop follows its parent's
// decision, so a kept trace is whole). A deploy raises it while
// investigating (-c tracing.samplePercent=100).
var Environments = map[string]EnvConfig{
	"dev": {Name: "dev", MemoryScale: 1, LogRetentionDays: 14, Retain: false, LogPayloads: true,
		Flags: settings.Flags{Collaboration: true, ExpertGate: true, Ensemble: true, TaskDelegation: true, Sessions: true, RouterModel: true}, ModelProvider: "bedrock", SynthesisModel: tier1,
		API5xxPercent: 5, APILatencyP99Ms: 20000, APIRatePerSecond: 50, APIBurst: 100, TeamRatePerSecond: 20, TraceSamplePercent: 100},
	"staging": {Name: "staging", MemoryScale: 1, LogRetentionDays: 30, Retain: false,
		Flags: settings.Flags{Collaboration: true, ExpertGate: true, TaskDelegation: true, Sessions: true, RouterModel: true}, ModelProvider: "bedrock", SynthesisModel: tier1,
		API5xxPercent: 1, APILatencyP99Ms: 10000, APIRatePerSecond: 100, APIBurst: 200, TeamRatePerSecond: 20, TraceSamplePercent: 100},
	"prod": {Name: "prod", MemoryScale: 2, LogRetentionDays: 365, Retain: true,
		Flags: settings.Flags{}, ModelProvider: "bedrock", SynthesisModel: tier1,
		API5xxPercent: 1, APILatencyP99Ms: 10000, APIRatePerSecond: 500, APIBurst: 1000, TeamRatePerSecond: 50, TraceSamplePercent: 10,
		// Out of the account's 1,000: the authorizer fronts every request;
		// the task worker and the gate are the ones a burst of work piles
		// onto; the A2A agent's routes are public at the gateway (its card
		// needs no key), so a flood of them is capped at its 50, and its
		// streaming twin's at 50 too; the streaming API's function holds an
		// invocation for as long as a client listens (up to 14 minutes), so
		// its listeners are capped at 150 and can never take the capacity
		// chat turns and tasks need. What is left (300) stays unreserved
		// for the rest.
		ReservedConcurrency: map[string]int{"authorizer": 100, "task-worker": 200, "expert-gate": 150, "a2a": 50, "a2a-stream": 50, "streams": 150}},
	// localstack is the stage deployed by `make localstack-deploy`.
	"localstack": {Name: "localstack", MemoryScale: 1, LogRetentionDays: 1, Retain: false, LogPayloads: true, Account: "000000000000", Region: "us-east-1",
		Flags: settings.Flags{Collaboration: true, ExpertGate: true, Ensemble: true, TaskDelegation: true, Sessions: true}, ModelProvider: "local",
		API5xxPercent: 5, APILatencyP99Ms: 20000, APIRatePerSecond: 50, APIBurst: 100, TeamRatePerSecond: 20, TraceSamplePercent: 100},
}

// Lookup returns the configuration of env.
func Lookup(env string) (EnvConfig, error) {
	c, ok := Environments[env]
	if !ok {
		return EnvConfig{}, fmt.Errorf("unknown environment %q (known: %v)", env, sortedKeys(Environments))
	}
	return c, nil
}

// The context keys a deploy sets (`cdk deploy -c key=value`; a number or a
// list also works from cdk.json's context).
const (
	// ContextEnv names the stage (Environments).
	ContextEnv = "env"
	// ContextAlarmEmails are the alarm topic's email subscribers, comma
	// separated.
	ContextAlarmEmails = "alarmEmails"
	// ContextLogRetentionDays overrides the stage's LogRetentionDays.
	ContextLogRetentionDays = "logRetentionDays"
)

// ConfigFromContext is the configuration a synthesis deploys: the stage the
// app's context names (else fallback, CONCLAVE_ENV for make synth, else
// dev) with what the deploy chose for it: its alarm subscribers, its log
// retention, and its flags, models, embedder and limits (stagecontext.go).
// A value that cannot be what was meant (a retention of "30d", an address
// without a domain, an unknown flag, a malformed model id) is an error,
// not a default: a typo must not silently keep logs a year, page nobody or
// grant a model nobody meant.
func ConfigFromContext(node constructs.Node, fallback string) (EnvConfig, error) {
	get := func(key string) any { return node.TryGetContext(jsii.String(key)) }
	var name string
	if v := get(ContextEnv); v != nil {
		s, ok := v.(string)
		if !ok {
			return EnvConfig{}, fmt.Errorf("-c %s must be a stage name, not %v", ContextEnv, v)
		}
		name = s
	}
	if name == "" {
		name = fallback
	}
	if name == "" {
		name = "dev"
	}
	cfg, err := Lookup(name)
	if err != nil {
		return EnvConfig{}, err
	}
	if v := get(ContextAlarmEmails); v != nil {
		emails, err := parseEmails(v)
		if err != nil {
			return EnvConfig{}, err
		}
		if len(emails) > 0 {
			cfg.AlarmEmails = emails
		}
	}
	if v := get(ContextLogRetentionDays); v != nil && v != "" {
		days, err := parseDays(v)
		if err != nil {
			return EnvConfig{}, err
		}
		cfg.LogRetentionDays = days
	}
	if err := applyStageContext(node, &cfg); err != nil {
		return EnvConfig{}, err
	}
	return cfg, nil
}

// parseEmails reads a comma-separated list (or a JSON list) of bare email
// addresses, the form an SNS email subscription takes.
func parseEmails(v any) ([]string, error) {
	var parts []string
	switch v := v.(type) {
	case string:
		parts = strings.Split(v, ",")
	case []any:
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("%s: %v is not an email address", ContextAlarmEmails, e)
			}
			parts = append(parts, s)
		}
	default:
		return nil, fmt.Errorf("%s must be comma-separated email addresses, got %v", ContextAlarmEmails, v)
	}
	var out []string
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if addr, err := mail.ParseAddress(p); err != nil || addr.Address != p || !strings.Contains(p[strings.LastIndex(p, "@"):], ".") {
			return nil, fmt.Errorf("%s: %q is not an email address", ContextAlarmEmails, p)
		}
		out = append(out, p)
	}
	return out, nil
}

// parseDays reads a whole number of days from 1 to the longest retention
// CloudWatch Logs offers; NewStage rounds it up to a period it offers.
func parseDays(v any) (int, error) {
	var days float64
	switch v := v.(type) {
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return 0, fmt.Errorf("%s must be a whole number of days, got %q", ContextLogRetentionDays, v)
		}
		days = float64(n)
	case float64:
		days = v
	default:
		return 0, fmt.Errorf("%s must be a whole number of days, got %v", ContextLogRetentionDays, v)
	}
	if days != math.Trunc(days) || days < 1 || days > maxRetentionDays {
		return 0, fmt.Errorf("%s must be a whole number of days from 1 to %d, got %v", ContextLogRetentionDays, maxRetentionDays, v)
	}
	return int(days), nil
}
