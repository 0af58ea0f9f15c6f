package a2afn

import (
	"context"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/conclave-ai/conclave/shared/app/taskwiring"
	"github.com/conclave-ai/conclave/shared/approvals"
	"github.com/conclave-ai/conclave/shared/authorizer"
	"github.com/conclave-ai/conclave/shared/conversations"
	"github.com/conclave-ai/conclave/shared/dispatch"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/dynamo/approvalstore"
	"github.com/conclave-ai/conclave/shared/dynamo/convstore"
	"github.com/conclave-ai/conclave/shared/dynamo/pushstore"
	"github.com/conclave-ai/conclave/shared/dynamo/teamstore"
	"github.com/conclave-ai/conclave/shared/executions"
	"github.com/conclave-ai/conclave/shared/expertgate"
	"github.com/conclave-ai/conclave/shared/expertgate/gateclient"
	"github.com/conclave-ai/conclave/shared/interop"
	"github.com/conclave-ai/conclave/shared/lambdafn"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/tasktools"
	"github.com/conclave-ai/conclave/shared/teams"
	"github.com/conclave-ai/conclave/shared/toolpacks"
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
	if d.Config.TeamRateLimit > 0 {
		auth.Rate = &authorizer.RateLimit{PerSecond: d.Config.TeamRateLimit, Counter: core}
	}
	callbacks := executions.CallbacksFromConfig(d.AWS)
	w := taskwiring.New(d, core, executions.FromConfig(d.AWS, d.Config.StateMachines), callbacks)
	store := convstore.New(core.DB, core.Table)
	// The chat turn's router, as the conversations function builds it,
	// but for the router model (a model call per message; the gate and
	// the default agent decide here).
	flags := d.Config.Flags.Effective()
	var gate expertgate.Gate
	if fn := d.Config.Functions["expert-gate"]; fn != "" {
		gate = &gateclient.Client{Lambda: lambda.NewFromConfig(d.AWS), FunctionName: fn}
	}
	router := &dispatch.Router{Gate: gate, Tiers: routing.TiersOrDefault(d.Config.Tiers), Log: d.Log,
		Flags: dispatch.Flags{Collaboration: flags.Collaboration, ExpertGate: flags.ExpertGate, Ensemble: flags.Ensemble}}
	conv := &conversations.Service{Store: store, Agents: store, Router: router, Log: d.Log}
	svc := &interop.Service{
		Tasks: w.Tasks, Router: conv, Conversations: contexts{svc: conv, log: d.Log},
		Approvals: &approvals.Service{Store: approvalstore.New(core.DB, core.Table), Bus: w.Bus, Callbacks: callbacks,
			Validate: tasktools.ValidateArguments, Log: d.Log},
		Registry: registry{teams: teamStore, agents: store},
		Version:  "1.0.0-" + d.Config.Stage,
		// Push notifications (docs/a2a.md): the configs on the table, their
		// URLs under the MCP packs' network policy; the a2a-push function
		// sends them.
		Push: pushstore.New(core.DB, core.Table), PushPolicy: toolpacks.NetPolicy{LoopbackOnly: d.Config.MCPLoopbackOnly},
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
