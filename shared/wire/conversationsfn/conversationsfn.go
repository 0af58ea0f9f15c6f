// Package conversationsfn wires the "conversations" HTTP function: chat
// turns routed by the feature flags, the agents' replies through the model
// port with their tools (delegation, reports, sessions, messaging,
// handoff, memories), handoff and the memory context. It links DynamoDB,
// EventBridge, Lambda (the ExpertGate function), Step Functions (a
// delegation or a session started from a reply) and Bedrock.
package conversationsfn

import (
	"github.com/conclave-ai/conclave/shared/agenttools"
	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/api/conversationsapi"
	"github.com/conclave-ai/conclave/shared/aws/eventbus"
	"github.com/conclave-ai/conclave/shared/aws/executions"
	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/routing/chooser"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/store/agentstore"
	"github.com/conclave-ai/conclave/shared/store/conversationstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/mcppackstore"
	"github.com/conclave-ai/conclave/shared/store/memorystore"
	"github.com/conclave-ai/conclave/shared/store/resultstore"
	"github.com/conclave-ai/conclave/shared/store/taskstore"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
	"github.com/conclave-ai/conclave/shared/wire/agenttoolswiring"
	"github.com/conclave-ai/conclave/shared/wire/budgetwiring"
	"github.com/conclave-ai/conclave/shared/wire/gatewiring"
	"github.com/conclave-ai/conclave/shared/wire/httpfn"
	"github.com/conclave-ai/conclave/shared/wire/messagingwiring"
	"github.com/conclave-ai/conclave/shared/wire/planwiring"
	"github.com/conclave-ai/conclave/shared/wire/providers"
	"github.com/conclave-ai/conclave/shared/wire/taskwiring"
	"github.com/conclave-ai/conclave/shared/work/plans"
	"github.com/conclave-ai/conclave/shared/work/reports"
	"github.com/conclave-ai/conclave/shared/work/results"
)

// Build and Router wire the function (Router for tests of its routes).
var Build, Router = httpfn.NewFallible(register)

func register(d lambdafn.Deps, core *dynamo.Store, rt *httpapi.Router) error {
	cfg, err := Config(d, core)
	if err != nil {
		return err
	}
	conversationsapi.ConversationRoutes(rt, conversations.MustNew(cfg))
	// The tools an agent's model receives: served here, where the tool
	// catalog is linked already, from the very Specs of the chat's
	// tools (cfg.Tools) and of the task worker's (the same wiring,
	// agenttoolswiring).
	chat := cfg.Tools.(agenttools.Chat)
	api.AgentToolRoutes(rt, agenttools.Lister{Agents: agentstore.New(core.DB, core.Table), Chat: chat, Task: chat.Tools})
	// The tool packs, with the same catalog's schemas, and the team's
	// MCP packs (registered here: the credential goes to Secrets Manager).
	api.ToolPackRoutes(rt, agenttools.Packs{MCPPacks: agenttoolswiring.Remote(d, core)})
	return nil
}

// Service builds the chat service the function serves, as its routes get
// it (the streams function serves its streamed turns with it too). It
// fails on a model provider it cannot build (providers.New).
func Service(d lambdafn.Deps, core *dynamo.Store) (*conversations.Service, error) {
	cfg, err := Config(d, core)
	if err != nil {
		return nil, err
	}
	return conversations.MustNew(cfg), nil
}

// Config is what Service builds the chat service from: exported so tests
// can check what the environment (FEATURE_FLAGS above all) turns on, such
// as the tools its agents are offered, without a request through the
// router, and change a part (a recording model) before building it. It
// fails on a model provider it cannot build (providers.New).
func Config(d lambdafn.Deps, core *dynamo.Store) (conversations.Config, error) {
	store := conversationstore.New(core.DB, core.Table)
	cfg := d.Config
	bus := eventbus.FromConfig(d.AWS, cfg.BusName)
	model, err := providers.New(cfg, d.AWS, store, budgetwiring.Guard(d, core, bus))
	if err != nil {
		return conversations.Config{}, err
	}
	gate := gatewiring.Gate(d)
	memories := memorystore.New(core.DB, core.Table)
	mem := &memory.Service{Store: memories, Dir: memories, Bus: bus}
	tools, err := chatTools(d, core, mem, gate, model)
	if err != nil {
		return conversations.Config{}, err
	}
	var synth *routing.Synthesizer
	if cfg.Synthesis != "" {
		synth = &routing.Synthesizer{Model: model, ModelID: cfg.Synthesis}
	}
	flags := cfg.Flags.Effective()
	tiers := routing.TiersOrDefault(cfg.Tiers)
	router := &cascade.Router{Gate: gate, Tiers: tiers, Log: d.Log,
		Flags: cascade.Flags{Collaboration: flags.Collaboration, ExpertGate: flags.ExpertGate, Ensemble: flags.Ensemble, RouterModel: flags.RouterModel}}
	if flags.RouterModel {
		// The tier-0 model decides when the gate is unsure, through the
		// same model port (and Bedrock grant) as the agents' replies.
		router.Chooser = chooser.New(model, tiers)
	}
	// Each agent's unread messages in its context, read once the turn
	// commits (docs/agents-context.md).
	inbox := messagingwiring.Service(core, bus)
	// The compound planner: the tier-0 (fast) model, asked only when a
	// message looks compound; a plan runs on the plan machine. Part of
	// collaboration (seed 000: collaboration off is direct dispatch), and
	// its steps are executed tasks (task_delegation): with either flag off
	// there is no planner, so no planner call and no plan.
	var planner conversations.Planner // nil interface: no planner
	if flags.Collaboration && flags.TaskDelegation {
		starter := executions.FromConfig(d.AWS, d.Config.StateMachines)
		planner = &plans.Planner{Plans: planwiring.New(d, core, starter, nil, nil), Model: model, ModelID: tiers[routing.Tier0],
			Packs: &toolpacks.Registry{Store: mcppackstore.New(core.DB, core.Table)}}
	}
	return conversations.Config{Store: store, Agents: store, Router: router, Model: model, Synth: synth, Planner: planner,
		Memories: mem, Bus: bus, Tools: tools, Tail: store, Replays: store, Work: store, Log: d.Log,
		// What an agent's prompt holds beyond the conversation, the reads
		// of the skills' context loaders among it (docs/skills.md).
		Context: conversations.Sources{Memories: mem, Inbox: inbox, MemoryLog: memories, Tasks: Tasks{Store: taskstore.New(core.DB, core.Table)}},
		Inbox:   inbox, ReportParameters: reports.ParametersFrom,
		// A reply that waited for a delegation and was not stored: its
		// result is posted as the result-poster function would have.
		Results: &results.Poster{Store: resultstore.New(core.DB, core.Table), Log: d.Log}}, nil
}

// chatTools are the tools of agents answering in a chat, built as the
// task worker's are (agenttoolswiring): delegations and sessions start their
// executions from here; find_colleagues asks gate.
func chatTools(d lambdafn.Deps, core *dynamo.Store, mem *memory.Service, gate expertgate.Gate, model models.Model) (conversations.Tools, error) {
	starter := executions.FromConfig(d.AWS, d.Config.StateMachines)
	w := taskwiring.New(d, core, starter, nil)
	tools, err := agenttoolswiring.New(d, w, starter, mem, gate, model)
	if err != nil {
		return nil, err
	}
	return agenttools.Chat{Tools: tools}, nil
}
