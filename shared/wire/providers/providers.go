// Package providers builds the model port from the environment contract:
// the configured provider by default, and every provider an agent may name
// (agents.Model.Provider). Only the functions granted models link it.
package providers

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	"github.com/conclave-ai/conclave/shared/a2a/remote"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/models/bedrock"
	"github.com/conclave-ai/conclave/shared/models/localmodel"
	"github.com/conclave-ai/conclave/shared/models/openai"
	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/budget"
	"github.com/conclave-ai/conclave/shared/tools/secretstore"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
	"github.com/conclave-ai/conclave/shared/wire/localmodelwiring"
)

// AgentReader reads the agent a model request is attributed to: the agent
// store, or a store whose port looks agents up too.
type AgentReader interface {
	// GetAgent returns ENOTFOUND for an unknown agent.
	GetAgent(ctx context.Context, teamID, slug string) (agents.Agent, error)
}

// Local is the local model over r's agents (localmodelwiring.New): the
// provider of the local cloud and the tests.
func Local(r AgentReader) localmodel.Model { return localmodelwiring.New(r) }

// Remote is the A2A client of agents outside the team (provider a2a):
// the agent store, their credentials in Secrets Manager, the stage's
// network policy (the MCP packs').
func Remote(cfg settings.Config, awsCfg aws.Config, agentStore AgentReader) *remote.Client {
	return &remote.Client{Policy: toolpacks.NetPolicy{LoopbackOnly: cfg.MCPLoopbackOnly}, Agents: agentStore, Secrets: secretstore.New(awsCfg)}
}

// New returns a models.Switch over the local model, Bedrock and, when
// OPENAI_BASE_URL is set, the OpenAI-compatible endpoint (every call
// naming OPENAI_MODEL when it is set), with
// MODEL_PROVIDER's as the default. A MODEL_PROVIDER it does not build
// (unset, misspelt, or openai without its endpoint) is an error naming
// the providers it knows: falling back to the local model would have a
// stage answer with scripted text and no error anywhere. The local model
// reads agents (their scripts and voices) through agentStore.
//
// Every call goes through the team's CostGuard: guard (its Store, Bus and
// Log set; nil Store: no guard, for tests) wraps the switch, knowing each
// provider's default model so a request naming none reserves at its price.
func New(cfg settings.Config, awsCfg aws.Config, agentStore AgentReader, guard budget.Guard) (models.Model, error) {
	// A request naming no model asks the stage's tier_1 model (MODEL_TIERS,
	// else the routing default, as routing.TierModels.Choose reads it): the
	// stage's Bedrock grants name its tiers' models, not the defaults'.
	tier1 := cfg.Tiers[routing.Tier1]
	if tier1 == "" {
		tier1 = routing.DefaultTierModels[routing.Tier1]
	}
	providers := map[string]models.Model{
		"local":   Local(agentStore),
		"bedrock": bedrock.Model{Client: bedrockruntime.NewFromConfig(awsCfg), DefaultModelID: tier1},
		// An agent outside the team answers itself (agents.ProviderA2A).
		agents.ProviderA2A: Remote(cfg, awsCfg, agentStore),
	}
	if cfg.OpenAIBaseURL != "" {
		// OPENAI_MODEL, when set, is the model of every call (a local
		// server's), so also what a request naming none reserves at.
		providers["openai"] = openai.Model{BaseURL: cfg.OpenAIBaseURL, APIKey: cfg.OpenAIAPIKey, ServedModelID: cfg.OpenAIModel,
			HTTP: &http.Client{Timeout: 60 * time.Second}}
	}
	// a2a is an agent's provider, never a stage's default: a remote
	// agent answers only for itself.
	def, ok := providers[cfg.ModelProvider]
	if !ok || cfg.ModelProvider == agents.ProviderA2A {
		return nil, unknown(cfg.ModelProvider, providers)
	}
	defaults := map[string]string{"local": localmodel.ModelID, "bedrock": tier1, "openai": cfg.OpenAIModel, agents.ProviderA2A: remote.ModelID}
	defaults[""] = defaults[cfg.ModelProvider]
	// Every call is a chat span of the turn's trace, named by the GenAI
	// conventions' provider names.
	for name, m := range providers {
		providers[name] = models.Traced{Model: m, Provider: genAIProviders[name], DefaultModelID: defaults[name]}
	}
	def = providers[cfg.ModelProvider]
	sw := models.Switch{Default: def, Providers: providers}
	if guard.Store == nil {
		return sw, nil
	}
	guard.Model, guard.DefaultModels = sw, defaults
	return &guard, nil
}

// genAIProviders are the providers' gen_ai.provider.name: the
// conventions' own names where they have one.
var genAIProviders = map[string]string{"local": "conclave.local", "bedrock": "aws.bedrock", "openai": "openai", agents.ProviderA2A: "a2a"}

// unknown is the error of a default provider New does not build.
func unknown(name string, providers map[string]models.Model) error {
	var known []string
	for p := range providers {
		if p != agents.ProviderA2A {
			known = append(known, p)
		}
	}
	slices.Sort(known)
	hint := ""
	if name == "openai" {
		hint = " (openai needs " + settings.EnvOpenAIBaseURL + ")"
	}
	return fmt.Errorf("%s=%q is not a model provider this function builds%s: want one of %s",
		settings.EnvModelProvider, name, hint, strings.Join(known, ", "))
}
