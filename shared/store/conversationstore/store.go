// Package conversationstore stores conversations: their messages, participants, handoffs and feedback, and the agents' open-conversation counters on the single table: it implements
// conversations.Store over the shared core (shared/store/dynamo), so a function links it
// only when it serves this domain.
package conversationstore

import (
	"github.com/conclave-ai/conclave/shared/store/agentstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
)

// Store is the conversationstore half of the single-table store. A turn reads the
// team's agents (conversations.AgentDirectory), so it embeds the agent store
// (and through it the core's client, table and helpers).
type Store struct{ *agentstore.Store }

// New returns the store on table.
func New(db dynamo.API, table string) *Store { return &Store{agentstore.New(db, table)} }
