package taskfake

import (
	"context"
	"sort"
	"strings"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/agentfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// releaseCheck is the conditions of the adapter's releaseSlot: a handoff's
// ticket still waits; a release that is not forced finds no ticket
// waiting. Call with the table locked.
func (s *Tasks) releaseCheck(teamID, slug string, handoff *tasks.Ticket, force bool) error {
	if handoff != nil {
		if t, ok := s.st().tickets[memtable.Key{Team: handoff.TeamID, ID: handoff.Key}]; !ok || t.Status != tasks.TicketWaiting {
			return &tasks.ConditionFailed{Item: tasks.ItemTicket}
		}
		return nil
	}
	if l := agentfake.LoadIf(s.tb, teamID, slug); !force && l != nil && l.SlotWaiters > 0 {
		return &tasks.ConditionFailed{Item: tasks.ItemWaiting}
	}
	return nil
}

// releaseSlot gives a slot back, to handoff when set (checked by
// releaseCheck). Call with the table locked.
func (s *Tasks) releaseSlot(teamID, slug string, handoff *tasks.Ticket) {
	if handoff != nil {
		k := memtable.Key{Team: handoff.TeamID, ID: handoff.Key}
		t := s.st().tickets[k]
		t.Status = tasks.TicketGranted
		s.st().tickets[k] = t
		agentfake.LoadOf(s.tb, teamID, slug).SlotWaiters--
		return
	}
	agentfake.LoadOf(s.tb, teamID, slug).ActiveTasks--
}

// WaitForSlot implements tasks.TicketStore.
func (s *Tasks) WaitForSlot(_ context.Context, t tasks.Ticket) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	k := memtable.Key{Team: t.TeamID, ID: t.Key}
	if _, ok := s.st().tickets[k]; ok {
		return &tasks.ConditionFailed{Item: tasks.ItemTicket}
	}
	if l := agentfake.LoadIf(s.tb, t.TeamID, t.Agent); l == nil || l.ActiveTasks < tasks.MaxActivePerAgent {
		return &tasks.ConditionFailed{Item: tasks.ItemSlotFree}
	}
	t.Status = tasks.TicketWaiting
	s.st().tickets[k] = t
	agentfake.LoadOf(s.tb, t.TeamID, t.Agent).SlotWaiters++
	return nil
}

// NextTickets implements tasks.TicketStore: the agent's waiting tickets in
// line order (rank, then since to the millisecond, then key, as the
// adapter's index key).
func (s *Tasks) NextTickets(_ context.Context, teamID, agent string, n int) ([]tasks.Ticket, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	var list []tasks.Ticket
	for k, t := range s.st().tickets {
		if k.Team == teamID && t.Agent == agent && t.Status == tasks.TicketWaiting {
			list = append(list, t)
		}
	}
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if a.Rank != b.Rank {
			return a.Rank < b.Rank
		}
		if a.Since.UnixMilli() != b.Since.UnixMilli() {
			return a.Since.UnixMilli() < b.Since.UnixMilli() // the adapter's line key holds milliseconds
		}
		return a.Key < b.Key
	})
	if len(list) > n {
		list = list[:n]
	}
	return list, nil
}

// GetTicket implements tasks.TicketStore.
func (s *Tasks) GetTicket(_ context.Context, teamID, k string) (tasks.Ticket, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	t, ok := s.st().tickets[memtable.Key{Team: teamID, ID: k}]
	if !ok {
		return tasks.Ticket{}, apperr.NotFound("slot ticket", k)
	}
	return t, nil
}

// RefreshToken implements tasks.TicketStore.
func (s *Tasks) RefreshToken(_ context.Context, t tasks.Ticket) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	k := memtable.Key{Team: t.TeamID, ID: t.Key}
	cur, ok := s.st().tickets[k]
	if !ok || cur.Status != tasks.TicketWaiting {
		return &tasks.ConditionFailed{Item: tasks.ItemTicket}
	}
	cur.Token = t.Token
	s.st().tickets[k] = cur
	return nil
}

// DropTicket implements tasks.TicketStore.
func (s *Tasks) DropTicket(_ context.Context, t tasks.Ticket) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	k := memtable.Key{Team: t.TeamID, ID: t.Key}
	if cur, ok := s.st().tickets[k]; !ok || cur.Status != tasks.TicketWaiting {
		return &tasks.ConditionFailed{Item: tasks.ItemTicket}
	}
	delete(s.st().tickets, k)
	agentfake.LoadOf(s.tb, t.TeamID, t.Agent).SlotWaiters--
	return nil
}

// ReleaseTicket implements tasks.TicketStore.
func (s *Tasks) ReleaseTicket(_ context.Context, t tasks.Ticket, handoff *tasks.Ticket, force bool) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	k := memtable.Key{Team: t.TeamID, ID: t.Key}
	if cur, ok := s.st().tickets[k]; !ok || cur.Status != tasks.TicketGranted {
		return &tasks.ConditionFailed{Item: tasks.ItemTicket}
	}
	if err := s.releaseCheck(t.TeamID, t.Agent, handoff, force); err != nil {
		return err
	}
	delete(s.st().tickets, k)
	s.releaseSlot(t.TeamID, t.Agent, handoff)
	return nil
}

// TicketsOf implements tasks.TicketStore.
func (s *Tasks) TicketsOf(_ context.Context, teamID, prefix string) ([]tasks.Ticket, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	var list []tasks.Ticket
	for k, t := range s.st().tickets {
		if k.Team == teamID && strings.HasPrefix(k.ID, prefix) {
			list = append(list, t)
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Key < list[j].Key })
	return list, nil
}
