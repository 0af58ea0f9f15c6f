// Package memoryfake is the in-memory fake of memory.Store and
// memory.Directory (memories, the agents' cached memory contexts, the
// team's agents), as shared/store/memorystore is the DynamoDB one; both
// are held to the store contract (shared/testkit/storetest).
package memoryfake

import (
	"context"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/agentfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
)

var (
	_ memory.Store     = (*Memories)(nil)
	_ memory.Directory = (*Memories)(nil)
)

// Memories is memory.Store on a memtable.Table: the memories
// (memtable.KindMemory), which turns, handoffs, reports and consultations
// write too, and the cached contexts (memtable.KindContext) under the
// team's epoch. Safe for concurrent use.
type Memories struct {
	*agentfake.Agents
	tb *memtable.Table
}

// New returns the memories of tb (nil: a table of their own).
func New(tb *memtable.Table) *Memories {
	if tb == nil {
		tb = memtable.New()
	}
	return &Memories{Agents: agentfake.New(tb), tb: tb}
}

// contextTTL is the adapter's bound on a cached context.
const contextTTL = time.Hour

// PutMemory implements memory.Store. A memory id already taken fails the
// adapter's condition, which it reports as an internal error (EINTERNAL),
// not a conflict; so does this store.
func (s *Memories) PutMemory(_ context.Context, m memory.Memory) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	docs := memtable.Docs(s.tb, memtable.KindMemory)
	k := memtable.Key{Team: m.TeamID, ID: m.ID}
	if _, ok := docs[k]; ok {
		return memtable.Internal("PutMemory: memory " + m.ID + " exists")
	}
	docs[k] = memtable.Doc(m)
	return nil
}

// RecentMemories implements memory.Store: up to limit memories, newest
// first.
func (s *Memories) RecentMemories(ctx context.Context, teamID string, limit int) ([]memory.Memory, error) {
	return paging.Collect(limit, min(limit, paging.MaxLimit), func(p paging.Page) ([]memory.Memory, string, error) {
		return s.ListMemories(ctx, teamID, p)
	})
}

// ListMemories implements memory.Store, newest first. The memories carry
// no TeamID (it is not in the document), as from the adapter.
func (s *Memories) ListMemories(_ context.Context, teamID string, p paging.Page) ([]memory.Memory, string, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	var rows []memtable.Row[memory.Memory]
	for k, b := range memtable.Docs(s.tb, memtable.KindMemory) {
		if k.Team == teamID {
			rows = append(rows, memtable.Row[memory.Memory]{SK: k.ID, V: memtable.ReadDoc[memory.Memory](b)})
		}
	}
	return memtable.Query(rows, true, "memories:"+teamID, p, nil)
}

// GetContext implements memory.Store: the cached context, a miss when
// there is none or it is more than an hour old by the table's clock.
func (s *Memories) GetContext(_ context.Context, teamID, agent string) (memory.Context, bool, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	b, ok := memtable.Docs(s.tb, memtable.KindContext)[memtable.Key{Team: teamID, ID: agent}]
	if !ok {
		return memory.Context{}, false, nil
	}
	c := memtable.ReadDoc[memory.Context](b)
	if memtable.Time(s.tb).Sub(c.BuiltAt) > contextTTL {
		return memory.Context{}, false, nil
	}
	return c, true, nil
}

// MemoryEpoch implements memory.Store (0 before the first invalidation).
func (s *Memories) MemoryEpoch(_ context.Context, teamID string) (int, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	e, _ := memtable.Epoch(s.tb, teamID)
	return e, nil
}

// PutContext implements memory.Store: c is cached only if the team's epoch
// is still epoch; epoch 0 means "never invalidated", as in the adapter's
// condition attribute_not_exists(epoch).
func (s *Memories) PutContext(_ context.Context, teamID string, c memory.Context, epoch int) (bool, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	cur, ok := memtable.Epoch(s.tb, teamID)
	if (epoch > 0 && (!ok || cur != epoch)) || (epoch <= 0 && ok) {
		return false, nil // memories changed while it was built: do not cache
	}
	c.Cached = false
	memtable.Docs(s.tb, memtable.KindContext)[memtable.Key{Team: teamID, ID: c.Agent}] = memtable.Doc(c)
	return true, nil
}

// DropContexts implements memory.Store: the epoch moved on (so contexts
// being built now are not cached) and the agents' cached contexts
// deleted, at once.
func (s *Memories) DropContexts(_ context.Context, teamID string, agentSlugs []string) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	memtable.DropContexts(s.tb, teamID, agentSlugs)
	return nil
}
