// Package agentstore stores a team's agents and its default agent on the single table: it implements
// agents.Store over the shared core (shared/store/dynamo), so a function links it
// only when it serves this domain.
package agentstore

import (
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/teamstore"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// Store is the agentstore half of the single-table store. The default
// agent is an attribute of the team item, so it embeds the team store (and
// through it the core's client, table and helpers).
type Store struct{ *teamstore.Store }

var _ agents.Store = (*Store)(nil)

// New returns the store on table.
func New(db dynamo.API, table string) *Store { return &Store{teamstore.New(db, table)} }
