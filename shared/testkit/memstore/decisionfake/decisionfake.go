// Package decisionfake is the in-memory fake of cascade.Store (the routing
// log), as shared/store/decisionstore is the DynamoDB one; both are held
// to the store contract (shared/testkit/storetest). A turn's commit
// writes the decisions (conversationfake).
package decisionfake

import (
	"context"
	"slices"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
)

var _ cascade.Store = (*Decisions)(nil)

// Decisions is cascade.Store on a memtable.Table (memtable.KindDecision).
// Safe for concurrent use.
type Decisions struct{ tb *memtable.Table }

// New returns the routing log of tb (nil: a table of its own).
func New(tb *memtable.Table) *Decisions {
	if tb == nil {
		tb = memtable.New()
	}
	return &Decisions{tb: tb}
}

// Get returns the team's decision, for the stores that read it back
// (conversationfake's replays). The decision's TeamID is empty, as from
// the adapter (it is not in the document). Returns ENOTFOUND. Call with
// the table locked.
func Get(tb *memtable.Table, teamID, id string) (cascade.Decision, error) {
	b, ok := memtable.Docs(tb, memtable.KindDecision)[memtable.Key{Team: teamID, ID: id}]
	if !ok {
		return cascade.Decision{}, apperr.NotFound("routing decision", id)
	}
	return memtable.ReadDoc[cascade.Decision](b), nil
}

// GetDecision implements cascade.Store. Returns ENOTFOUND.
func (s *Decisions) GetDecision(_ context.Context, teamID, id string) (cascade.Decision, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	return Get(s.tb, teamID, id)
}

// ListDecisions implements cascade.Store, newest first: the conversation
// filter selects (the adapter's index), Since bounds the key range by the
// floor id of the time, and strategy, agent (among the selected agents)
// and fallback filter after the limit.
func (s *Decisions) ListDecisions(_ context.Context, teamID string, f cascade.DecisionFilter, p paging.Page) ([]cascade.Decision, string, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	from := ""
	if !f.Since.IsZero() {
		from = ids.Floor("rdec", f.Since)
	}
	var rows []memtable.Row[cascade.Decision]
	for k, b := range memtable.Docs(s.tb, memtable.KindDecision) {
		if k.Team != teamID || k.ID < from {
			continue
		}
		d := memtable.ReadDoc[cascade.Decision](b)
		if f.ConversationID != "" && d.ConversationID != f.ConversationID {
			continue
		}
		rows = append(rows, memtable.Row[cascade.Decision]{SK: k.ID, V: d})
	}
	keep := func(d cascade.Decision) bool {
		if f.Strategy != "" && string(d.Strategy) != f.Strategy {
			return false
		}
		if f.Agent != "" && !slices.Contains(d.SelectedAgents, f.Agent) {
			return false
		}
		return f.Fallback == nil || d.Fallback == *f.Fallback
	}
	return memtable.Query(rows, true, "decisions:"+teamID+":"+f.ConversationID, p, keep)
}

// RecentDecisions implements cascade.Store: up to limit decisions made
// since, newest first.
func (s *Decisions) RecentDecisions(ctx context.Context, teamID string, since time.Time, limit int) ([]cascade.Decision, error) {
	return paging.Collect(limit, paging.MaxLimit, func(p paging.Page) ([]cascade.Decision, string, error) {
		return s.ListDecisions(ctx, teamID, cascade.DecisionFilter{Since: since}, p)
	})
}
