package taskfake

import (
	"context"
	"hash/fnv"
	"sort"
	"time"

	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// dueShards and dueShard are the adapter's: running tasks' deadlines are
// spread over 8 index partitions, and DueTasks reads up to limit from each.
const dueShards = 8

func dueShard(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % dueShards)
}

// DueTasks implements tasks.Store: running tasks whose deadline is before
// the given time, across teams. It mirrors the adapter's sparse index
// exactly: keys compare as strings at millisecond precision (a deadline in
// the same millisecond as before is not due), each of the 8 shards returns
// up to limit tasks earliest first, and the shards come in order (so up to
// 8 × limit refs).
func (s *Tasks) DueTasks(_ context.Context, before time.Time, limit int) ([]tasks.Ref, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	type due struct {
		sk  string
		ref tasks.Ref
	}
	shards := make([][]due, dueShards)
	bound := memtable.DueKey(before)
	for _, t := range s.st().tasks {
		if t.Status != tasks.Running || t.Deadline == nil {
			continue
		}
		sk := memtable.DueKey(*t.Deadline) + "#" + t.TeamID + "#" + t.ID
		if sk < bound {
			n := dueShard(t.ID)
			shards[n] = append(shards[n], due{sk, tasks.Ref{TeamID: t.TeamID, ID: t.ID}})
		}
	}
	var refs []tasks.Ref
	for _, list := range shards {
		sort.Slice(list, func(i, j int) bool { return list[i].sk < list[j].sk })
		for i, d := range list {
			if limit > 0 && i == limit {
				break
			}
			refs = append(refs, d.ref)
		}
	}
	return refs, nil
}

func cloneEscalation(e *tasks.Escalation) *tasks.Escalation {
	if e == nil {
		return nil
	}
	c := *e
	c.ResolvedAt = memtable.CloneTime(e.ResolvedAt)
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
// with the table locked.
func (s *Tasks) escalationWritable(b, a tasks.Task) bool {
	switch {
	case escalationOpened(b, a):
		_, taken := memtable.Docs(s.tb, memtable.KindEscalation)[memtable.Key{Team: a.TeamID, ID: a.Escalation.ID}]
		return !taken
	case escalationResolved(b, a):
		d, ok := memtable.Docs(s.tb, memtable.KindEscalation)[memtable.Key{Team: a.TeamID, ID: a.Escalation.ID}]
		return ok && memtable.ReadDoc[tasks.EscalationRecord](d).Status == tasks.EscalationOpen
	}
	return true
}

// writeEscalation stores the listing of a's escalation when the change
// opens or resolves it (the consultations' GET /v1/escalations lists it).
// Call with the table locked, after escalationWritable.
func (s *Tasks) writeEscalation(b, a tasks.Task) {
	if escalationOpened(b, a) || escalationResolved(b, a) {
		memtable.Docs(s.tb, memtable.KindEscalation)[memtable.Key{Team: a.TeamID, ID: a.Escalation.ID}] = memtable.Doc(a.EscalationRecord())
	}
}

// OverdueTasks implements tasks.DueStore: the adapter's due entries are
// the DueWatched tasks (its task writes keep them) but those dropped
// since (DropDueEntry), compared as
// its index keys (millisecond precision, then team and id), earliest
// first, up to limit.
func (s *Tasks) OverdueTasks(_ context.Context, before time.Time, limit int) ([]tasks.Ref, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	type due struct {
		sk  string
		ref tasks.Ref
	}
	bound := memtable.DueKey(before)
	var list []due
	for k, t := range s.st().tasks {
		if !t.DueWatched() || s.st().dueOut[k] {
			continue
		}
		if sk := memtable.DueKey(*t.DueAt) + "#" + t.TeamID + "#" + t.ID; sk < bound {
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

// DropDueEntry implements tasks.DueStore: the task's entry leaves the
// index (dueOut) until a write puts it back (dueIn), as the adapter's put
// of the entry without its index keys; a task without an entry is no
// error.
func (s *Tasks) DropDueEntry(_ context.Context, r tasks.Ref) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	if t, ok := s.st().tasks[memtable.Key{Team: r.TeamID, ID: r.ID}]; ok && t.DueAt != nil {
		s.st().dueOut[memtable.Key{Team: r.TeamID, ID: r.ID}] = true
	}
	return nil
}

// dueIn is the adapter's writeDue: a write of a task puts its entry
// (back) in the index when the task is watched and was not, or its due
// date or status changed (b nil: a create). Call with the table locked.
func (s *Tasks) dueIn(b *tasks.Task, a tasks.Task) {
	if a.DueWatched() && (b == nil || !b.DueWatched() || !b.DueAt.Equal(*a.DueAt) || b.Status != a.Status) {
		delete(s.st().dueOut, memtable.Key{Team: a.TeamID, ID: a.ID})
	}
}

// GetBoardPolicy implements tasks.DueStore (the zero policy until one is
// put).
func (s *Tasks) GetBoardPolicy(_ context.Context, teamID string) (tasks.BoardPolicy, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	p := s.st().policies[teamID]
	p.UpdatedAt = memtable.CloneTime(p.UpdatedAt)
	return p, nil
}

// PutBoardPolicy implements tasks.DueStore.
func (s *Tasks) PutBoardPolicy(_ context.Context, teamID string, p tasks.BoardPolicy) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	p.UpdatedAt = memtable.CloneTime(p.UpdatedAt)
	s.st().policies[teamID] = p
	return nil
}
