// Package taskstore stores delegated tasks, their events and the agents' task slots on the single table: it implements
// tasks.Store over the shared core (shared/store/dynamo), so a function links it
// only when it serves this domain.
package taskstore

import (
	"github.com/conclave-ai/conclave/shared/store/agentstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
)

// Store is the taskstore half of the single-table store. Its port also
// looks agents up, so it embeds the agent store (and through it the core's
// client, table and helpers).
type Store struct{ *agentstore.Store }

// New returns the store on table.
func New(db dynamo.API, table string) *Store { return &Store{agentstore.New(db, table)} }
