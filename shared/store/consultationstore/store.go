// Package consultationstore stores consultations between agents on the single table: it implements
// consultations.Store over the shared core (shared/store/dynamo), so a function links it
// only when it serves this domain.
package consultationstore

import (
	"context"

	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/expertgatestore"
	"github.com/conclave-ai/conclave/shared/store/memorystore"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/work/consultations"
)

// Store is the consultationstore half of the single-table store. A
// consultation picks its experts through the expert gate and reads the
// team's recent memories (consultations.Backend), so it embeds the gate's
// store (agents, loads, ratings, and through it the core) and reads
// memories through the memory store.
type Store struct {
	*expertgatestore.Store
	memories *memorystore.Store
}

var _ consultations.Backend = (*Store)(nil)

// New returns the store on table.
func New(db dynamo.API, table string) *Store {
	return &Store{Store: expertgatestore.New(db, table), memories: memorystore.New(db, table)}
}

// RecentMemories implements consultations.Memories
// (memorystore.Store.RecentMemories).
func (s *Store) RecentMemories(ctx context.Context, teamID string, limit int) ([]memory.Memory, error) {
	return s.memories.RecentMemories(ctx, teamID, limit)
}
