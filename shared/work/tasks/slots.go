package tasks

import (
	"context"
	"errors"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
)

// A workflow stage whose agent is at its MaxActivePerAgent waits for a
// slot instead of failing: its workflow registers a slot ticket (the
// stage's key, the agent, the task token of the state that waits) and
// waits at no cost, with no Lambda polling. The transaction that frees a
// slot of that agent hands it to the best waiting ticket instead (in
// priority order, then oldest): the ticket becomes granted and the agent's
// counter does not move, so a racing delegation cannot take the slot.
// After the commit the waiting state's token is completed; the stage runs
// again and creates its task on the granted ticket (CreateInput.Ticket),
// which takes no second slot. The limit itself never changes: a granted
// ticket counts as one of the agent's tasks until it is used or released.
//
// The store keeps, per agent, how many tickets wait: a slot's release is
// conditioned on none waiting, and fails on ItemWaiting when one does, so
// the common release costs nothing more.

// TicketStatus is a slot ticket's state.
type TicketStatus string

// Ticket states.
const (
	TicketWaiting TicketStatus = "waiting"
	TicketGranted TicketStatus = "granted"
)

// Ticket is a workflow stage's place in line for a slot of its agent.
type Ticket struct {
	TeamID string
	Agent  string
	// Key names the stage, unique in the team (the session, its run and
	// the stage's key): the stage finds its ticket by it.
	Key string
	// Rank and Since order the line: PriorityRank, then oldest.
	Rank  int
	Since time.Time
	// Token is the task token of the state that waits.
	Token  string
	Status TicketStatus
	// Expires is when the wait ends anyway (the session's deadline): an
	// expired waiting ticket is dropped rather than granted.
	Expires time.Time
}

// Items the slot-ticket writes can fail on.
const (
	// ItemWaiting: a slot's release found tickets waiting for one of the
	// agent's slots (the service hands the slot to one and writes again).
	ItemWaiting = "waiting"
	// ItemTicket: the ticket is not in the state the write expects (a
	// handoff whose ticket was granted or dropped meanwhile; a create on a
	// ticket not granted).
	ItemTicket = "ticket"
	// ItemSlotFree: a ticket was not registered because the agent has a
	// free slot now (the stage should take it).
	ItemSlotFree = "slot_free"
)

// TicketStore is what the slot line needs of the store.
type TicketStore interface {
	// WaitForSlot registers t (waiting) and counts it on its agent, only
	// while the agent holds MaxActivePerAgent tasks (ItemSlotFree
	// otherwise); a ticket of that key already there is ItemTicket.
	WaitForSlot(ctx context.Context, t Ticket) error
	// NextTickets returns up to n waiting tickets of the agent, best
	// first (an index, eventually consistent: the handoff's condition
	// settles a stale entry).
	NextTickets(ctx context.Context, teamID, agent string, n int) ([]Ticket, error)
	// GetTicket reads a ticket by its key (ENOTFOUND when there is none).
	GetTicket(ctx context.Context, teamID, key string) (Ticket, error)
	// RefreshToken sets a waiting ticket's token (ItemTicket when it is no
	// longer waiting): a retried waiting state has a new token.
	RefreshToken(ctx context.Context, t Ticket) error
	// DropTicket deletes a waiting ticket and uncounts it (ItemTicket when
	// it is no longer waiting).
	DropTicket(ctx context.Context, t Ticket) error
	// ReleaseTicket deletes a granted ticket and gives its slot back: to
	// handoff when set, else released, conditioned on no ticket waiting
	// unless force (ItemWaiting, ItemTicket).
	ReleaseTicket(ctx context.Context, t Ticket, handoff *Ticket, force bool) error
	// TicketsOf lists the tickets whose key begins with prefix (a
	// session's, when it ends).
	TicketsOf(ctx context.Context, teamID, prefix string) ([]Ticket, error)
}

// SlotGranted is the output the waiting state's token is completed with.
type SlotGranted struct {
	Granted string `json:"granted"` // the ticket's key
	Agent   string `json:"agent"`
}

// errTicketsOff: the service has no ticket store.
var errTicketsOff = errors.New("slot tickets are not available here")

func (s *Service) tickets() (TicketStore, error) {
	if ts, ok := s.Store.(TicketStore); ok {
		return ts, nil
	}
	return nil, errTicketsOff
}

// WaitForSlot puts a stage in line for a slot of its agent: the ticket is
// registered only while the agent is at its limit. ok is false when it
// was not (a slot is free: the stage should run now); ok with a ticket
// of that key already in line or granted is true (a retried step).
func (s *Service) WaitForSlot(ctx context.Context, t Ticket) (ok bool, err error) {
	ts, err := s.tickets()
	if err != nil {
		return false, err
	}
	t.Status, t.Since = TicketWaiting, s.Now.UTC()
	err = ts.WaitForSlot(ctx, t)
	switch failedItem(err) {
	case "":
		return err == nil, err
	case ItemSlotFree:
		return false, nil
	case ItemTicket:
		cur, gerr := ts.GetTicket(ctx, t.TeamID, t.Key)
		if gerr != nil {
			return false, gerr
		}
		if cur.Status == TicketGranted && s.Callbacks != nil {
			// Granted before this retry registered: hand it over now.
			return true, s.Callbacks.Succeed(ctx, t.Token, SlotGranted{Granted: cur.Key, Agent: cur.Agent})
		}
		if cur.Status == TicketWaiting && cur.Token != t.Token {
			// A retried waiting state has a new token: the grant must wake
			// this one. Granted meanwhile: woken now.
			if err := ts.RefreshToken(ctx, t); failedItem(err) == ItemTicket && s.Callbacks != nil {
				return true, s.Callbacks.Succeed(ctx, t.Token, SlotGranted{Granted: cur.Key, Agent: cur.Agent})
			} else if err != nil {
				return false, err
			}
		}
		return true, nil
	default:
		return false, err
	}
}

// GrantedTicket returns the stage's ticket when it is granted (ok false
// when it has none, or one still waiting).
func (s *Service) GrantedTicket(ctx context.Context, teamID, key string) (Ticket, bool, error) {
	ts, err := s.tickets()
	if err != nil {
		return Ticket{}, false, nil
	}
	t, err := ts.GetTicket(ctx, teamID, key)
	if apperr.Is(err, apperr.ENOTFOUND) {
		return Ticket{}, false, nil
	}
	if err != nil {
		return Ticket{}, false, err
	}
	return t, t.Status == TicketGranted, nil
}

// ReleaseTickets ends the tickets whose key begins with prefix (a
// session that ended): waiting ones are dropped, granted ones give their
// slot back (to the next in line). Returns how many it ended.
func (s *Service) ReleaseTickets(ctx context.Context, teamID, prefix string) (int, error) {
	ts, err := s.tickets()
	if err != nil {
		return 0, nil
	}
	list, err := ts.TicketsOf(ctx, teamID, prefix)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range list {
		if err := s.endTicket(ctx, ts, t); err != nil {
			s.Log.WarnContext(ctx, "release slot ticket", "ticket", t.Key, "error", err.Error())
			continue
		}
		n++
	}
	return n, nil
}

// endTicket drops a waiting ticket or releases a granted one.
func (s *Service) endTicket(ctx context.Context, ts TicketStore, t Ticket) error {
	if t.Status == TicketWaiting {
		err := ts.DropTicket(ctx, t)
		if failedItem(err) != ItemTicket {
			return err
		}
		// Granted meanwhile: release it instead.
		if t, err = ts.GetTicket(ctx, t.TeamID, t.Key); err != nil {
			return err
		}
	}
	_, err := s.handOff(ctx, t.TeamID, t.Agent, func(h *Ticket, force bool) error {
		return ts.ReleaseTicket(ctx, t, h, force)
	})
	if failedItem(err) == ItemTicket {
		return nil // used or released by another writer meanwhile
	}
	return err
}

// maxHandoffTries bounds the writes of one release that meets tickets
// granted or dropped by concurrent writers.
const maxHandoffTries = 5

// handOff runs write, which frees a slot of agent: first as a plain
// release (conditioned on no ticket waiting); when tickets wait, handing
// the slot to the best live one; without callbacks to wake a waiter (or
// with no live ticket left) as a forced release. After the commit the
// ticket's waiting state is woken; a waiter that cannot be woken (its
// execution ended) gives the slot straight back. Returns the ticket the
// slot went to, if any.
func (s *Service) handOff(ctx context.Context, teamID, agent string, write func(h *Ticket, force bool) error) (*Ticket, error) {
	var h *Ticket
	force := s.Callbacks == nil
	for try := 0; ; try++ {
		err := write(h, force)
		item := failedItem(err)
		if item == "" {
			if err == nil && h != nil {
				s.wakeTicket(ctx, *h)
			}
			return h, err
		}
		if try >= maxHandoffTries {
			return nil, err
		}
		switch {
		case item == ItemWaiting:
			h, force, err = s.nextTicket(ctx, teamID, agent)
			if err != nil {
				return nil, err
			}
		case item == ItemTicket && h != nil:
			h = nil // taken or dropped meanwhile: look again
		default:
			return nil, err
		}
	}
}

// nextTicket is the best live ticket waiting for agent; expired ones are
// dropped on the way. None left: force the release (the counter of
// waiting tickets was stale).
func (s *Service) nextTicket(ctx context.Context, teamID, agent string) (*Ticket, bool, error) {
	ts, err := s.tickets()
	if err != nil {
		return nil, true, nil
	}
	list, err := ts.NextTickets(ctx, teamID, agent, 5)
	if err != nil {
		return nil, false, err
	}
	for _, t := range list {
		if t.Status != TicketWaiting {
			continue
		}
		if !t.Expires.IsZero() && !s.Now.UTC().Before(t.Expires) {
			if err := ts.DropTicket(ctx, t); err != nil && failedItem(err) != ItemTicket {
				return nil, false, err
			}
			continue
		}
		return &t, false, nil
	}
	return nil, true, nil
}

// wakeTicket completes the waiting state of a ticket granted a slot; a
// state that is gone (its session ended) gives the slot back at once.
func (s *Service) wakeTicket(ctx context.Context, t Ticket) {
	if s.Callbacks == nil {
		return
	}
	err := s.Callbacks.Succeed(ctx, t.Token, SlotGranted{Granted: t.Key, Agent: t.Agent})
	if err == nil {
		return
	}
	s.Log.WarnContext(ctx, "wake a stage granted a slot; giving the slot back", "ticket", t.Key, "agent", t.Agent, "error", err.Error())
	ts, terr := s.tickets()
	if terr != nil {
		return
	}
	t.Status = TicketGranted
	if err := s.endTicket(ctx, ts, t); err != nil {
		s.Log.ErrorContext(ctx, "give back the slot of a ticket nobody waits for", "ticket", t.Key, "error", err.Error())
	}
}
