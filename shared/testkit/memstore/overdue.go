package memstore

import (
	"context"
	"sort"
	"time"

	"github.com/conclave-ai/conclave/shared/work/tasks"
)

var _ tasks.DueStore = (*Store)(nil)

func cloneEscalation(e *tasks.Escalation) *tasks.Escalation {
	if e == nil {
		return nil
	}
	c := *e
	c.ResolvedAt = cloneTime(e.ResolvedAt)
	return &c
}

// escalationOpened and escalationResolved are the changes of a task that
// write its escalation's listing, as in the adapter's transaction.
func escalationOpened(b, a tasks.Task) bool { return b.Escalation == nil && a.Escalation != nil }

func escalationResolved(b, a tasks.Task) bool {
	return b.Escalation != nil && a.Escalation != nil && b.Escalation.Status == tasks.EscalationOpen &&
		a.Escalation.Status == tasks.EscalationResolved
}

// escalationWritable is the adapter's condition on the listing: a new one
// is created where none is, a resolved one replaces an open one. Call
// with the lock held.
func (s *Store) escalationWritable(b, a tasks.Task) bool {
	s.consMaps()
	switch {
	case escalationOpened(b, a):
		_, taken := s.escalations[key{a.TeamID, a.Escalation.ID}]
		return !taken
	case escalationResolved(b, a):
		d, ok := s.escalations[key{a.TeamID, a.Escalation.ID}]
		return ok && readDoc[tasks.EscalationRecord](d).Status == tasks.EscalationOpen
	}
	return true
}

// writeEscalation stores the listing of a's escalation when the change
// opens or resolves it (the consultations' GET /v1/escalations lists it).
// Call with the lock held, after escalationWritable.
func (s *Store) writeEscalation(b, a tasks.Task) {
	if escalationOpened(b, a) || escalationResolved(b, a) {
		s.escalations[key{a.TeamID, a.Escalation.ID}] = doc(a.EscalationRecord())
	}
}

// OverdueTasks implements tasks.DueStore: the adapter's due entries are
// exactly the DueWatched tasks (its task writes keep them), compared as
// its index keys (millisecond precision, then team and id), earliest
// first, up to limit.
func (s *Store) OverdueTasks(_ context.Context, before time.Time, limit int) ([]tasks.Ref, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	type due struct {
		sk  string
		ref tasks.Ref
	}
	bound := dueKey(before)
	var list []due
	for _, t := range s.tasks {
		if !t.DueWatched() {
			continue
		}
		if sk := dueKey(*t.DueAt) + "#" + t.TeamID + "#" + t.ID; sk < bound {
			list = append(list, due{sk, tasks.Ref{TeamID: t.TeamID, ID: t.ID}})
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].sk < list[j].sk })
	refs := []tasks.Ref{}
	for i, d := range list {
		if limit > 0 && i == limit {
			break
		}
		refs = append(refs, d.ref)
	}
	return refs, nil
}

// DropDueEntry implements tasks.DueStore: the entries here are derived
// from the tasks, so there is nothing left behind to drop.
func (s *Store) DropDueEntry(context.Context, tasks.Ref) error { return nil }

// GetBoardPolicy implements tasks.DueStore.
func (s *Store) GetBoardPolicy(_ context.Context, teamID string) (tasks.BoardPolicy, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.boardPolicies[teamID]
	p.UpdatedAt = cloneTime(p.UpdatedAt)
	return p, nil
}

// PutBoardPolicy implements tasks.DueStore.
func (s *Store) PutBoardPolicy(_ context.Context, teamID string, p tasks.BoardPolicy) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.boardPolicies == nil {
		s.boardPolicies = map[string]tasks.BoardPolicy{}
	}
	p.UpdatedAt = cloneTime(p.UpdatedAt)
	s.boardPolicies[teamID] = p
	return nil
}
