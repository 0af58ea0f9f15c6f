package a2afn

import (
	"context"
	"log/slog"

	"github.com/conclave-ai/conclave/shared/a2a/server"
	"github.com/conclave-ai/conclave/shared/agenttools"
	"github.com/conclave-ai/conclave/shared/aws/executions"
	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/store/approvalstore"
	"github.com/conclave-ai/conclave/shared/store/conversationstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/pushstore"
	"github.com/conclave-ai/conclave/shared/store/teamstore"
	"github.com/conclave-ai/conclave/shared/team/authorizer"
	"github.com/conclave-ai/conclave/shared/team/teams"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
	"github.com/conclave-ai/conclave/shared/wire/gatewiring"
	"github.com/conclave-ai/conclave/shared/wire/taskwiring"
	"github.com/conclave-ai/conclave/shared/work/approvals"
)

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) {
	return New(d).Serve, nil
}

// New wires the agent: its service, the key check and the stores, for
// either API (the a2a-stream function sets Streaming).
func New(d lambdafn.Deps) *Handler {
	core := dynamo.FromConfig(d.AWS, d.Config.TableName)
	teamStore := teamstore.New(core.DB, core.Table)
	auth := &authorizer.Handler{Teams: teams.NewService(teamStore), Log: d.Log}
	auth.Rate = authorizer.NewRateLimit(d.Config.TeamRateLimit, d.Config.UserRateLimit, core)
	callbacks := executions.CallbacksFromConfig(d.AWS)
	w := taskwiring.New(d, core, executions.FromConfig(d.AWS, d.Config.StateMachines), callbacks)
	store := conversationstore.New(core.DB, core.Table)
	// The chat turn's router, as the conversations function builds it,
	// but for the router model (a model call per message; the gate and
	// the default agent decide here).
	flags := d.Config.Flags.Effective()
	router := &cascade.Router{Gate: gatewiring.Gate(d), Tiers: routing.TiersOrDefault(d.Config.Tiers), Log: d.Log,
		Flags: cascade.Flags{Collaboration: flags.Collaboration, ExpertGate: flags.ExpertGate, Ensemble: flags.Ensemble}}
	// No model: this service routes (Choose) and opens and closes
	// conversations; it answers no turn, so the function links no model.
	conv := conversations.MustNew(conversations.Config{Store: store, Agents: store, Router: router, Log: d.Log})
	svc := &server.Service{
		Tasks: w.Tasks, Router: conv, Conversations: contexts{svc: conv, log: d.Log},
		Approvals: &approvals.Service{Store: approvalstore.New(core.DB, core.Table), Bus: w.Bus, Callbacks: callbacks,
			Validate: agenttools.ValidateArguments, Log: d.Log},
		Registry: registry{teams: teamStore, agents: store},
		Version:  "1.0.0-" + d.Config.Stage,
		// Push notifications (docs/a2a.md): the configs on the table, their
		// URLs under the MCP packs' network policy; the a2a-push function
		// sends them.
		Push: pushstore.New(core.DB, core.Table), PushPolicy: toolpacks.NetPolicy{LoopbackOnly: d.Config.MCPLoopbackOnly},
	}
	if !flags.TaskDelegation {
		// A message is answered as an executed task: none without the
		// flag (the door of new work; decisions on tasks already
		// accepted still answer).
		svc.NoTasks = settings.FlagTaskDelegation
	}
	return &Handler{Teams: teamStore, Auth: auth, Service: svc, Log: d.Log, StreamURL: d.Config.StreamURL}
}

// contexts are the A2A contexts: conversations of the team.
type contexts struct {
	svc *conversations.Service
	log *slog.Logger
}

func (c contexts) Open(ctx context.Context, teamID, title string) (string, error) {
	conv, err := c.svc.Create(ctx, teamID, conversations.CreateInput{Title: title})
	return conv.ID, err
}

func (c contexts) Check(ctx context.Context, teamID, id string) error {
	_, err := c.svc.Get(ctx, teamID, id)
	return err
}

// Discard closes a conversation a refused message opened; a failure to
// close it leaves an empty open conversation, which nothing reads.
func (c contexts) Discard(ctx context.Context, teamID, id string) {
	if _, err := c.svc.Close(ctx, teamID, id); err != nil {
		c.log.WarnContext(ctx, "a2a: the refused message's conversation stays open", "conversation_id", id, "error", err.Error())
	}
}
