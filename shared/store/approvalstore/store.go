// Package approvalstore stores approval requests and policies on the single table: it implements
// approvals.Store over the shared core (shared/store/dynamo), so a function links it
// only when it serves this domain.
package approvalstore

import "github.com/conclave-ai/conclave/shared/store/dynamo"

// Store is the approvalstore half of the single-table store; the core's client,
// table and helpers are promoted from the embedded *dynamo.Store.
type Store struct{ *dynamo.Store }

// New returns the store on table.
func New(db dynamo.API, table string) *Store { return &Store{dynamo.New(db, table)} }
