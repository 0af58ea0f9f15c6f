package memstore

import (
	"context"
	"sort"
	"strings"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

var _ tasks.TicketStore = (*Store)(nil)

// releaseCheck is the conditions of the adapter's releaseSlot: a handoff's
// ticket still waits; a release that is not forced finds no ticket
// waiting. Call with the lock held.
func (s *Store) releaseCheck(teamID, slug string, handoff *tasks.Ticket, force bool) error {
	if handoff != nil {
		if t, ok := s.tickets[key{handoff.TeamID, handoff.Key}]; !ok || t.Status != tasks.TicketWaiting {
			return &tasks.ConditionFailed{Item: tasks.ItemTicket}
		}
		return nil
	}
	if l := s.loads[key{teamID, slug}]; !force && l != nil && l.slotWaiters > 0 {
		return &tasks.ConditionFailed{Item: tasks.ItemWaiting}
	}
	return nil
}

// releaseSlot gives a slot back, to handoff when set (checked by
// releaseCheck). Call with the lock held.
func (s *Store) releaseSlot(teamID, slug string, handoff *tasks.Ticket) {
	if handoff != nil {
		k := key{handoff.TeamID, handoff.Key}
		t := s.tickets[k]
		t.Status = tasks.TicketGranted
		s.tickets[k] = t
		s.loadOf(teamID, slug).slotWaiters--
		return
	}
	s.loadOf(teamID, slug).activeTasks--
}

// WaitForSlot implements tasks.TicketStore.
func (s *Store) WaitForSlot(_ context.Context, t tasks.Ticket) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tickets == nil {
		s.tickets = map[key]tasks.Ticket{}
	}
	k := key{t.TeamID, t.Key}
	if _, ok := s.tickets[k]; ok {
		return &tasks.ConditionFailed{Item: tasks.ItemTicket}
	}
	if l := s.loads[key{t.TeamID, t.Agent}]; l == nil || l.activeTasks < tasks.MaxActivePerAgent {
		return &tasks.ConditionFailed{Item: tasks.ItemSlotFree}
	}
	t.Status = tasks.TicketWaiting
	s.tickets[k] = t
	s.loadOf(t.TeamID, t.Agent).slotWaiters++
	return nil
}

// NextTickets implements tasks.TicketStore: the agent's waiting tickets in
// line order (rank, then since, then key).
func (s *Store) NextTickets(_ context.Context, teamID, agent string, n int) ([]tasks.Ticket, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var list []tasks.Ticket
	for k, t := range s.tickets {
		if k.team == teamID && t.Agent == agent && t.Status == tasks.TicketWaiting {
			list = append(list, t)
		}
	}
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if a.Rank != b.Rank {
			return a.Rank < b.Rank
		}
		if !a.Since.Equal(b.Since) {
			return a.Since.Before(b.Since)
		}
		return a.Key < b.Key
	})
	if len(list) > n {
		list = list[:n]
	}
	return list, nil
}

// GetTicket implements tasks.TicketStore.
func (s *Store) GetTicket(_ context.Context, teamID, k string) (tasks.Ticket, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tickets[key{teamID, k}]
	if !ok {
		return tasks.Ticket{}, apperr.NotFound("slot ticket", k)
	}
	return t, nil
}

// RefreshToken implements tasks.TicketStore.
func (s *Store) RefreshToken(_ context.Context, t tasks.Ticket) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{t.TeamID, t.Key}
	cur, ok := s.tickets[k]
	if !ok || cur.Status != tasks.TicketWaiting {
		return &tasks.ConditionFailed{Item: tasks.ItemTicket}
	}
	cur.Token = t.Token
	s.tickets[k] = cur
	return nil
}

// DropTicket implements tasks.TicketStore.
func (s *Store) DropTicket(_ context.Context, t tasks.Ticket) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{t.TeamID, t.Key}
	if cur, ok := s.tickets[k]; !ok || cur.Status != tasks.TicketWaiting {
		return &tasks.ConditionFailed{Item: tasks.ItemTicket}
	}
	delete(s.tickets, k)
	s.loadOf(t.TeamID, t.Agent).slotWaiters--
	return nil
}

// ReleaseTicket implements tasks.TicketStore.
func (s *Store) ReleaseTicket(_ context.Context, t tasks.Ticket, handoff *tasks.Ticket, force bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{t.TeamID, t.Key}
	if cur, ok := s.tickets[k]; !ok || cur.Status != tasks.TicketGranted {
		return &tasks.ConditionFailed{Item: tasks.ItemTicket}
	}
	if err := s.releaseCheck(t.TeamID, t.Agent, handoff, force); err != nil {
		return err
	}
	delete(s.tickets, k)
	s.releaseSlot(t.TeamID, t.Agent, handoff)
	return nil
}

// TicketsOf implements tasks.TicketStore.
func (s *Store) TicketsOf(_ context.Context, teamID, prefix string) ([]tasks.Ticket, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var list []tasks.Ticket
	for k, t := range s.tickets {
		if k.team == teamID && strings.HasPrefix(k.id, prefix) {
			list = append(list, t)
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Key < list[j].Key })
	return list, nil
}
