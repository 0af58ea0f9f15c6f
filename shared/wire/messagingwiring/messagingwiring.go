// Package messagingwiring builds the agent-messaging service the functions
// that send or deliver agent messages share. Its directory resolves a
// channel's members across domains (a task's agents, a session's
// participants), so a function that sends messages serves those domains
// too, and its manifest entry names them.
package messagingwiring

import (
	"context"

	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/messagestore"
	"github.com/conclave-ai/conclave/shared/store/sessionstore"
	"github.com/conclave-ai/conclave/shared/store/taskstore"
	"github.com/conclave-ai/conclave/shared/team/messaging"
)

// Service is the messaging service on core's table; bus is nil in a
// function that publishes nothing (pass a nil interface, not a nil
// *eventbus.Bus).
func Service(core *dynamo.Store, bus messaging.Publisher) *messaging.Service {
	return &messaging.Service{Store: messagestore.New(core.DB, core.Table), Dir: Directory(core), Bus: bus}
}

// Directory is messaging.Directory on core's table: agents and tasks from
// the task store, sessions from the session store.
func Directory(core *dynamo.Store) messaging.Directory {
	return directory{taskstore.New(core.DB, core.Table), sessionstore.New(core.DB, core.Table)}
}

type directory struct {
	*taskstore.Store
	sessions *sessionstore.Store
}

// SessionAgents implements messaging.Directory.
func (d directory) SessionAgents(ctx context.Context, teamID, sessionID string) ([]string, error) {
	return d.sessions.SessionAgents(ctx, teamID, sessionID)
}
