// Package suggestionstore stores the agents' example suggestions on the single table: it implements
// suggestions.Store over the shared core (shared/store/dynamo), so a function links it
// only when it serves this domain.
package suggestionstore

import (
	"github.com/conclave-ai/conclave/shared/routing/suggestions"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
)

// Store is the suggestionstore half of the single-table store; the core's client,
// table and helpers are promoted from the embedded *dynamo.Store.
type Store struct{ *dynamo.Store }

var _ suggestions.Store = (*Store)(nil)

// New returns the store on table.
func New(db dynamo.API, table string) *Store { return &Store{dynamo.New(db, table)} }
