// Package decisionstore stores routing decisions on the single table: it implements
// the routing decision log over the shared core (shared/store/dynamo), so a function links it
// only when it serves this domain.
package decisionstore

import (
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
)

// Store is the decisionstore half of the single-table store; the core's client,
// table and helpers are promoted from the embedded *dynamo.Store.
type Store struct{ *dynamo.Store }

var _ cascade.Store = (*Store)(nil)

// New returns the store on table.
func New(db dynamo.API, table string) *Store { return &Store{dynamo.New(db, table)} }
