// Package agentsfn wires the "agents" HTTP function. It links DynamoDB,
// EventBridge (AgentsChanged, for the classifier-fitter),
// and the Bedrock runtime for the Titan embedder: in a stage whose
// ROUTING_EMBEDDER is titan, an agent's skill vectors are computed and
// stored when the agent is written, so the ExpertGate finds them instead
// of calling Bedrock per skill (the stack grants InvokeModel only there).
package agentsfn

import (
	"time"

	"github.com/conclave-ai/conclave/shared/a2a/remote"
	"github.com/conclave-ai/conclave/shared/api/agentsapi"
	"github.com/conclave-ai/conclave/shared/aws/eventbus"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/models/bedrock"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/routing/suggestions"
	"github.com/conclave-ai/conclave/shared/store/agentstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/expertgatestore"
	"github.com/conclave-ai/conclave/shared/store/mcppackstore"
	"github.com/conclave-ai/conclave/shared/store/suggestionstore"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/tools/secretstore"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
	"github.com/conclave-ai/conclave/shared/wire/httpfn"
)

// Build and Router wire the function (Router for tests of its routes).
var Build, Router = httpfn.New(register)

// vectorTimeout bounds the skill vectors' work in a create or update (25
// skills at most, eight calls at a time): past it the agent is answered
// without them, and the gate computes them.
const vectorTimeout = 3 * time.Second

func register(d lambdafn.Deps, core *dynamo.Store, rt *httpapi.Router) {
	svc := agents.NewService(agentstore.New(core.DB, core.Table))
	// AgentsChanged: the classifier-fitter fits the team's classifier.
	svc.Bus = eventbus.FromConfig(d.AWS, d.Config.BusName)
	// External A2A agents (docs/a2a.md, "Outbound"): the card fetched
	// under the stage's network policy, the credential in Secrets Manager.
	svc.Cards = &remote.Client{Policy: toolpacks.NetPolicy{LoopbackOnly: d.Config.MCPLoopbackOnly}}
	svc.Secrets, svc.SecretPrefix = secretstore.New(d.AWS), manifest.A2ASecretsPrefix(d.Config.Stage)
	if d.Config.Embedder == settings.EmbedderTitan {
		svc.Vectors = &expertgate.VectorWriter{Store: expertgatestore.New(core.DB, core.Table), Embedder: bedrock.TitanFromConfig(d.AWS, settings.TitanEmbedModel), Timeout: vectorTimeout}
	}
	// The models the stage offers its agents: its tiers' and its extra
	// models (the ones its Bedrock grants name). POST and PATCH refuse
	// another; GET /v1/models lists them.
	catalog := models.Catalog{Provider: d.Config.ModelProvider, Tiers: map[string]string{}, Extra: d.Config.ExtraModels}
	for tier, id := range routing.DefaultTierModels {
		// Each tier's model as routing.TierModels.Choose reads it.
		if set := d.Config.Tiers[tier]; set != "" {
			id = set
		}
		catalog.Tiers[tier] = id
	}
	svc.Models = catalog
	// The team's MCP packs, which a skill may name beside the built-in
	// ones (skills[].packs): read from the table, never listed on their
	// servers here.
	svc.Packs = &toolpacks.Registry{Store: mcppackstore.New(core.DB, core.Table)}
	agentsapi.AgentRoutes(rt, svc)
	agentsapi.ModelRoutes(rt, catalog)
	agentsapi.SkillRoutes(rt, svc)
	// The examples users' corrections suggest: accepting one updates the
	// agent through svc (validated, versioned, AgentsChanged announced).
	agentsapi.SuggestionRoutes(rt, &suggestions.Service{Store: suggestionstore.New(core.DB, core.Table), Agents: svc})
}
