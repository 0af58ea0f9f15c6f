// Package activitystore stores the team activity log on the single table: it implements
// activity.Store over the shared core (shared/store/dynamo), so a function links it
// only when it serves this domain.
package activitystore

import (
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/team/activity"
)

// Store is the activitystore half of the single-table store; the core's client,
// table and helpers are promoted from the embedded *dynamo.Store.
type Store struct{ *dynamo.Store }

var _ activity.Store = (*Store)(nil)

// New returns the store on table.
func New(db dynamo.API, table string) *Store { return &Store{dynamo.New(db, table)} }
