// Package conversationsfn wires the "conversations" HTTP function: chat
// turns routed by the feature flags, the agents' replies through the model
// port with their tools (delegation, reports, sessions, messaging,
// handoff, memories), handoff and the memory context. It links DynamoDB,
// EventBridge, Lambda (the ExpertGate function), Step Functions (a
// delegation or a session started from a reply) and Bedrock.
package conversationsfn

import (
	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/api/convapi"
	"github.com/conclave-ai/conclave/shared/app/budgetwiring"
	"github.com/conclave-ai/conclave/shared/app/httpfn"
	"github.com/conclave-ai/conclave/shared/app/messagingwiring"
	"github.com/conclave-ai/conclave/shared/app/planwiring"
	"github.com/conclave-ai/conclave/shared/app/taskwiring"
	"github.com/conclave-ai/conclave/shared/app/toolwiring"
	"github.com/conclave-ai/conclave/shared/conversations"
	"github.com/conclave-ai/conclave/shared/dispatch"
	"github.com/conclave-ai/conclave/shared/dispatch/routermodel"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/dynamo/agentstore"
	"github.com/conclave-ai/conclave/shared/dynamo/convstore"
	"github.com/conclave-ai/conclave/shared/dynamo/memorystore"
	"github.com/conclave-ai/conclave/shared/dynamo/packstore"
	"github.com/conclave-ai/conclave/shared/dynamo/resultstore"
	"github.com/conclave-ai/conclave/shared/dynamo/taskstore"
	"github.com/conclave-ai/conclave/shared/eventbus"
	"github.com/conclave-ai/conclave/shared/executions"
	"github.com/conclave-ai/conclave/shared/expertgate"
	"github.com/conclave-ai/conclave/shared/httpapi"
	"github.com/conclave-ai/conclave/shared/lambdafn"
	"github.com/conclave-ai/conclave/shared/memory"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/models/providers"
	"github.com/conclave-ai/conclave/shared/plans"
	"github.com/conclave-ai/conclave/shared/reports"
	"github.com/conclave-ai/conclave/shared/results"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/tasktools"
	"github.com/conclave-ai/conclave/shared/toolpacks"
)

// Build and Router wire the function (Router for tests of its routes).
var Build, Router = httpfn.New(register)

func register(d lambdafn.Deps, core *dynamo.Store, rt *httpapi.Router) {
	svc := Service(d, core)
	convapi.ConversationRoutes(rt, svc)
	// The tools an agent's model receives: served here, where the tool
	// catalog is linked already, from the very Specs of the chat's
	// tools (svc.Tools) and of the task worker's (the same wiring,
	// toolwiring).
	chat := svc.Tools.(tasktools.Chat)
	api.AgentToolRoutes(rt, tasktools.Lister{Agents: agentstore.New(core.DB, core.Table), Chat: chat, Task: chat.Tools})
	// The tool packs, with the same catalog's schemas, and the team's
	// MCP packs (registered here: the credential goes to Secrets Manager).
	api.ToolPackRoutes(rt, tasktools.Packs{Remote: toolwiring.Remote(d, core)})
}

// Service builds the chat service the function serves, as its routes get
// it: exported so tests can check what the environment (FEATURE_FLAGS
// above all) turns on, such as the tools its agents are offered, without
// a request through the router.
func Service(d lambdafn.Deps, core *dynamo.Store) *conversations.Service {
	store := convstore.New(core.DB, core.Table)
	cfg := d.Config
	bus := eventbus.FromConfig(d.AWS, cfg.BusName)
	model := providers.New(cfg, d.AWS, store, budgetwiring.Guard(d, core, bus))
	gate := toolwiring.Gate(d)
	var synth *routing.Synthesizer
	if cfg.Synthesis != "" {
		synth = &routing.Synthesizer{Model: model, ModelID: cfg.Synthesis}
	}
	flags := cfg.Flags.Effective()
	tiers := routing.TiersOrDefault(cfg.Tiers)
	router := &dispatch.Router{Gate: gate, Tiers: tiers, Log: d.Log,
		Flags: dispatch.Flags{Collaboration: flags.Collaboration, ExpertGate: flags.ExpertGate, Ensemble: flags.Ensemble, RouterModel: flags.RouterModel}}
	if flags.RouterModel {
		// The tier-0 model decides when the gate is unsure, through the
		// same model port (and Bedrock grant) as the agents' replies.
		router.Chooser = routermodel.New(model, tiers)
	}
	memories := memorystore.New(core.DB, core.Table)
	mem := &memory.Service{Store: memories, Dir: memories, Bus: bus}
	svc := &conversations.Service{Store: store, Agents: store, Router: router, Model: model, Synth: synth,
		Memories: mem, Bus: bus, Tools: chatTools(d, core, mem, gate, model), Tail: store, Replays: store, Log: d.Log,
		// The reads of the skills' context loaders (docs/skills.md).
		MemoryLog: memories, Tasks: taskstore.New(core.DB, core.Table), ReportParameters: reports.ParametersFrom,
		// Each agent's unread messages in its context, read once the turn
		// commits (docs/agents-context.md).
		Inbox: messagingwiring.Service(core, bus),
		// A reply that waited for a delegation and was not stored: its
		// result is posted as the result-poster function would have.
		Results: &results.Poster{Store: resultstore.New(core.DB, core.Table), Log: d.Log}}
	// The compound planner: the tier-0 (fast) model, asked only when a
	// message looks compound; a plan runs on the plan machine.
	starter := executions.FromConfig(d.AWS, d.Config.StateMachines)
	svc.Planner = &plans.Planner{Plans: planwiring.New(d, core, starter, nil, nil), Model: model, ModelID: tiers[routing.Tier0],
		Packs: &toolpacks.Registry{Store: packstore.New(core.DB, core.Table)}}
	return svc
}

// chatTools are the tools of agents answering in a chat, built as the
// task worker's are (toolwiring): delegations and sessions start their
// executions from here; find_colleagues asks gate.
func chatTools(d lambdafn.Deps, core *dynamo.Store, mem *memory.Service, gate expertgate.Gate, model models.Model) conversations.Tools {
	starter := executions.FromConfig(d.AWS, d.Config.StateMachines)
	w := taskwiring.New(d, core, starter, nil)
	return tasktools.Chat{Tools: toolwiring.New(d, w, starter, mem, gate, model)}
}
