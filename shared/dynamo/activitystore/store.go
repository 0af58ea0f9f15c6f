// Package activitystore stores the team activity log on the single table: it implements
// activity.Store over the shared core (shared/dynamo), so a function links it
// only when it serves this domain.
package activitystore

import (
	"github.com/conclave-ai/conclave/shared/activity"
	"github.com/conclave-ai/conclave/shared/dynamo"
)

// Store is the activitystore half of the single-table store; the core's client,
// table and helpers are promoted from the embedded *dynamo.Store.
type Store struct{ *dynamo.Store }

var _ activity.Store = (*Store)(nil)

// New returns the store on table.
func New(db dynamo.API, table string) *Store { return &Store{dynamo.New(db, table)} }
