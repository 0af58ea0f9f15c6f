// Package messagestore stores agent-to-agent messages and the agents' inboxes on the single table: it implements
// messaging.Store over the shared core (shared/store/dynamo), so a function links it
// only when it serves this domain.
package messagestore

import "github.com/conclave-ai/conclave/shared/store/dynamo"

// Store is the messagestore half of the single-table store; the core's client,
// table and helpers are promoted from the embedded *dynamo.Store.
type Store struct{ *dynamo.Store }

// New returns the store on table.
func New(db dynamo.API, table string) *Store { return &Store{dynamo.New(db, table)} }
