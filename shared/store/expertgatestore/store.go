// Package expertgatestore stores skill vectors, agent loads and the teams' routing classifiers on the single table: it implements
// the expert gate's inputs over the shared core (shared/store/dynamo), so a function links it
// only when it serves this domain.
package expertgatestore

import (
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/store/agentstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
)

// Store is the expertgatestore half of the single-table store. The gate also
// reads the active agents, so it embeds the agent store (and through it the
// core's client, table and helpers).
type Store struct{ *agentstore.Store }

var (
	_ expertgate.Source          = (*Store)(nil)
	_ expertgate.VectorStore     = (*Store)(nil)
	_ expertgate.ClassifierStore = (*Store)(nil)
)

// New returns the store on table.
func New(db dynamo.API, table string) *Store { return &Store{agentstore.New(db, table)} }
