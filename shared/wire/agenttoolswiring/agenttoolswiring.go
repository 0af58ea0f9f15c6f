// Package agenttoolswiring builds the tools of agents (shared/agenttools) the
// same way for the two functions that run agents with them: the
// task-worker (a task's tools) and conversations (a chat reply's, and GET
// /v1/agents/{slug}/tools, which must answer exactly what both offer).
package agenttoolswiring

import (
	"github.com/conclave-ai/conclave/shared/agenttools"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/discovery"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/store/approvalstore"
	"github.com/conclave-ai/conclave/shared/store/clipstore"
	"github.com/conclave-ai/conclave/shared/store/conversationstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/expertgatestore"
	"github.com/conclave-ai/conclave/shared/store/mcppackstore"
	"github.com/conclave-ai/conclave/shared/store/reportstore"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/tools/mcppack"
	"github.com/conclave-ai/conclave/shared/tools/secretstore"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
	"github.com/conclave-ai/conclave/shared/wire/consultationswiring"
	"github.com/conclave-ai/conclave/shared/wire/messagingwiring"
	"github.com/conclave-ai/conclave/shared/wire/sessionwiring"
	"github.com/conclave-ai/conclave/shared/wire/taskwiring"
	"github.com/conclave-ai/conclave/shared/work/approvals"
	"github.com/conclave-ai/conclave/shared/work/reports"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// Remote is the team MCP packs' registry of d (credentials under
// manifest.SecretsPrefix, which the CDK app grants alone): the pack store, the
// credentials in Secrets Manager, the official MCP SDK's client under the
// stage's network policy.
func Remote(d lambdafn.Deps, core *dynamo.Store) *toolpacks.Registry {
	policy := toolpacks.NetPolicy{LoopbackOnly: d.Config.MCPLoopbackOnly}
	return &toolpacks.Registry{Store: mcppackstore.New(core.DB, core.Table), Secrets: secretstore.New(d.AWS),
		MCP: &mcppack.Client{Policy: policy, Version: "1"}, SecretPrefix: manifest.SecretsPrefix(d.Config.Stage), Policy: policy}
}

// New builds the tools on the function's task wiring: delegations and
// sessions start executions with starter; mem is the memory service the
// function already has; gate answers find_colleagues (nil leaves it out);
// model answers the bridging tools (the function's own model port, so
// the team's CostGuard charges their calls too). It fails on a model
// provider the consultation service cannot build.
func New(d lambdafn.Deps, w taskwiring.Wiring, starter workflow.Starter, mem *memory.Service, gate expertgate.Gate, model models.Model) (*agenttools.Tools, error) {
	db, table := w.Core.DB, w.Core.Table
	tools := &agenttools.Tools{Flags: d.Config.Flags, Tasks: w.Tasks, Memories: mem,
		Messages: messagingwiring.Service(w.Core, w.Bus),
		Reports:  &reports.Service{Store: reportstore.New(db, table), Tasks: w.Tasks, Conversations: conversationstore.New(db, table), Bus: w.Bus, Log: d.Log},
		// A chat call the approval policy gates is refused (approvals run
		// in tasks; the worker gates a task's calls itself).
		Approvals: &approvals.Service{Store: approvalstore.New(db, table), Log: d.Log},
		// The bridging pack (shared/tools/toolpacks): the tier-1 model, and the
		// clipboard of the plan or the conversation.
		Model: model, BridgeModelID: routing.TiersOrDefault(d.Config.Tiers)[routing.Tier1],
		Clipboard: &toolpacks.Clipboard{Store: clipstore.New(db, table)},
		MCPPacks:  Remote(d, w.Core)}
	// The consultation tools: the same service as POST /v1/consultations.
	consultations, err := consultationswiring.Service(d, w.Core, w.Bus)
	if err != nil {
		return nil, err
	}
	// A tool's consultation is answered by a task of the specialist's
	// (consultations.RequestInput.Async), created on the function's task
	// wiring.
	consultations.Specialists = w.Tasks
	tools.Consultations = consultations
	// Wired whatever the flags: start_collaboration is offered by its
	// catalog flag (sessions) alone, and the sessions service refuses
	// every call while that flag is off (sessionwiring's Enabled).
	tools.Sessions = sessionwiring.New(d, w.Core, starter, nil, nil)
	if gate != nil {
		// find_colleagues: the gate of GET /v1/agents/recommend.
		tools.Colleagues = &discovery.Service{Dir: expertgatestore.New(db, table), Gate: gate}
	}
	return tools, nil
}
