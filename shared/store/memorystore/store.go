// Package memorystore stores shared memories and the agents' cached memory contexts on the single table: it implements
// memory.Store over the shared core (shared/store/dynamo), so a function links it
// only when it serves this domain.
package memorystore

import (
	"github.com/conclave-ai/conclave/shared/store/agentstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
)

// Store is the memorystore half of the single-table store. Its port also
// looks agents up, so it embeds the agent store (and through it the core's
// client, table and helpers).
type Store struct{ *agentstore.Store }

// New returns the store on table.
func New(db dynamo.API, table string) *Store { return &Store{agentstore.New(db, table)} }
