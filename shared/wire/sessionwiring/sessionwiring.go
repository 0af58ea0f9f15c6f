// Package sessionwiring builds the session service the session functions
// share (sessions, session-steps, task-sweeper) from the store, the bus,
// the task service and, where granted, Step Functions and the models.
package sessionwiring

import (
	"context"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/store/conversationstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/memorystore"
	"github.com/conclave-ai/conclave/shared/store/sessionstore"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/team/messaging"
	"github.com/conclave-ai/conclave/shared/wire/messagingwiring"
	"github.com/conclave-ai/conclave/shared/wire/taskwiring"
	"github.com/conclave-ai/conclave/shared/work/sessions"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// New builds the session service of d on store. model is nil in functions
// that call no model; workflows and callbacks nil where not granted.
func New(d lambdafn.Deps, core *dynamo.Store, workflows workflow.Starter, callbacks workflow.Callbacks, model models.Model) *sessions.Service {
	w := taskwiring.New(d, core, nil, callbacks)
	store := sessionstore.New(core.DB, core.Table)
	mem := memorystore.New(core.DB, core.Table)
	return &sessions.Service{
		Store: store, Memories: &memory.Service{Store: mem, Dir: mem, Bus: w.Bus}, Tasks: sessions.TaskModel{Svc: w.Tasks}, Model: model, Workflows: workflows, Callbacks: callbacks,
		Bus: w.Bus, Conversations: conversationCheck{conversationstore.New(core.DB, core.Table)}, Notifier: collab{messagingwiring.Service(core, w.Bus)},
		Enabled: d.Config.Flags.On(settings.FlagSessions), Region: d.AWS.Region, Log: d.Log,
	}
}

// conversationCheck validates a session's conversation on the store.
type conversationCheck struct{ store *conversationstore.Store }

func (c conversationCheck) CheckConversation(ctx context.Context, teamID, id string) error {
	_, err := c.store.GetConversation(ctx, teamID, id)
	return err
}

// collab notifies a session's participants through agent messaging.
type collab struct{ msgs *messaging.Service }

func (c collab) Notify(ctx context.Context, s sessions.Session, kind, body string) error {
	_, err := c.msgs.Send(ctx, s.TeamID, s.Lead, messaging.SendInput{Channel: "collab:" + s.ID, Type: kind, Content: body,
		Metadata: map[string]any{"session_id": s.ID, "pattern": string(s.Pattern), "status": string(s.Status)}})
	return err
}
