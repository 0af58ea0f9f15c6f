// Package teamstore stores teams and their API keys on the single table: it implements
// teams.Store over the shared core (shared/store/dynamo), so a function links it
// only when it serves this domain.
package teamstore

import (
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/team/teams"
)

// Store is the teamstore half of the single-table store; the core's client,
// table and helpers are promoted from the embedded *dynamo.Store.
type Store struct{ *dynamo.Store }

var _ teams.Store = (*Store)(nil)

// New returns the store on table.
func New(db dynamo.API, table string) *Store { return &Store{dynamo.New(db, table)} }
