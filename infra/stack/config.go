package stack

import (
	"fmt"

	"github.com/conclave-ai/conclave/shared/settings"
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
	// picks its own per deploy with `-c logRetentionDays=N`.
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
	// stack writes.
	Flags settings.Flags
	// ModelProvider is the agents' default model adapter (MODEL_PROVIDER):
	// bedrock in AWS, local for the LocalStack stage (no Bedrock there).
	ModelProvider string
	// SynthesisModel writes ENSEMBLE replies (SYNTHESIS_MODEL); empty keeps
	// the deterministic merge.
	SynthesisModel string
	// AlarmEmails subscribe to the stage's alarm topic. Set them per deploy
	// with `-c alarmEmails=a@example.com,b@example.com` (infra/main.go);
	// other subscribers (chat, paging) attach to the topic, an output.
	AlarmEmails []string
	// API5xxPercent and APILatencyP99Ms are the API alarms' thresholds.
	API5xxPercent   float64
	APILatencyP99Ms int
}

// tier1 is the balanced model that synthesizes ensemble replies.
const tier1 = "anthropic.claude-3-5-haiku-20241022-v1:0"

// Environments are the stages Conclave deploys to. Feature flags default to
// on in dev and off in prod, where they are turned on deliberately.
var Environments = map[string]EnvConfig{
	"dev": {Name: "dev", MemoryScale: 1, LogRetentionDays: 14, Retain: false, LogPayloads: true,
		Flags: settings.Flags{Collaboration: true, ExpertGate: true, Ensemble: true}, ModelProvider: "bedrock", SynthesisModel: tier1,
		API5xxPercent: 5, APILatencyP99Ms: 20000},
	"staging": {Name: "staging", MemoryScale: 1, LogRetentionDays: 30, Retain: false,
		Flags: settings.Flags{Collaboration: true, ExpertGate: true}, ModelProvider: "bedrock", SynthesisModel: tier1,
		API5xxPercent: 1, APILatencyP99Ms: 10000},
	"prod": {Name: "prod", MemoryScale: 2, LogRetentionDays: 365, Retain: true,
		Flags: settings.Flags{}, ModelProvider: "bedrock", SynthesisModel: tier1,
		API5xxPercent: 1, APILatencyP99Ms: 10000},
	// localstack is the stage deployed by `make localstack-deploy`.
	"localstack": {Name: "localstack", MemoryScale: 1, LogRetentionDays: 1, Retain: false, LogPayloads: true, Account: "000000000000", Region: "us-east-1",
		Flags: settings.Flags{Collaboration: true, ExpertGate: true, Ensemble: true}, ModelProvider: "local",
		API5xxPercent: 5, APILatencyP99Ms: 20000},
}

// Lookup returns the configuration of env.
func Lookup(env string) (EnvConfig, error) {
	c, ok := Environments[env]
	if !ok {
		return EnvConfig{}, fmt.Errorf("unknown environment %q (known: %v)", env, sortedKeys(Environments))
	}
	return c, nil
}
