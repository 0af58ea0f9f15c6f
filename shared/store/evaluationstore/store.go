// Package evaluationstore stores the teams' routing evaluations on the single table: it implements
// evaluations.Store over the shared core (shared/store/dynamo), so a function links it
// only when it serves this domain.
package evaluationstore

import (
	"github.com/conclave-ai/conclave/shared/routing/evaluations"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
)

// Store is the evaluationstore half of the single-table store; the core's client,
// table and helpers are promoted from the embedded *dynamo.Store.
type Store struct{ *dynamo.Store }

var _ evaluations.Store = (*Store)(nil)

// New returns the store on table.
func New(db dynamo.API, table string) *Store { return &Store{dynamo.New(db, table)} }
