// Package providers builds the model port from the environment contract:
// the configured provider by default, and every provider an agent may name
// (agents.Model.Provider). Only the functions granted models link it.
package providers

import (
	"net/http"
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
)

// Remote is the A2A client of agents outside the team (provider a2a):
// the agent store, their credentials in Secrets Manager, the stage's
// network policy (the MCP packs').
func Remote(cfg settings.Config, awsCfg aws.Config, agentStore localmodel.AgentReader) *remote.Client {
	return &remote.Client{Policy: toolpacks.NetPolicy{LoopbackOnly: cfg.MCPLoopbackOnly}, Agents: agentStore, Secrets: secretstore.New(awsCfg)}
}

// New returns a models.Switch over the local model, Bedrock and, when
// OPENAI_BASE_URL is set, the OpenAI-compatible endpoint. An unknown
// MODEL_PROVIDER falls back to the local model, as make run expects. The
// local model reads agents (their scripts and voices) through agentStore.
//
// Every call goes through the team's CostGuard: guard (its Store, Bus and
// Log set; nil Store: no guard, for tests) wraps the switch, knowing each
// provider's default model so a request naming none reserves at its price.
func New(cfg settings.Config, awsCfg aws.Config, agentStore localmodel.AgentReader, guard budget.Guard) models.Model {
	local := localmodel.New(agentStore)
	providers := map[string]models.Model{
		"local":   local,
		"bedrock": bedrock.Model{Client: bedrockruntime.NewFromConfig(awsCfg), DefaultModelID: routing.DefaultTierModels[routing.Tier1]},
		// An agent outside the team answers itself (agents.ProviderA2A).
		agents.ProviderA2A: Remote(cfg, awsCfg, agentStore),
	}
	if cfg.OpenAIBaseURL != "" {
		providers["openai"] = openai.Model{BaseURL: cfg.OpenAIBaseURL, APIKey: cfg.OpenAIAPIKey, HTTP: &http.Client{Timeout: 60 * time.Second}}
	}
	defaults := map[string]string{"local": localmodel.ModelID, "bedrock": routing.DefaultTierModels[routing.Tier1], "openai": "", agents.ProviderA2A: remote.ModelID}
	def, ok := providers[cfg.ModelProvider]
	defaults[""] = defaults[cfg.ModelProvider]
	if !ok {
		def, defaults[""] = local, localmodel.ModelID
	}
	sw := models.Switch{Default: def, Providers: providers}
	if guard.Store == nil {
		return sw
	}
	guard.Model, guard.DefaultModels = sw, defaults
	return &guard
}
