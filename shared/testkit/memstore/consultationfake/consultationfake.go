// Package consultationfake is the in-memory fake of consultations.Store
// and consultations.Backend (consultations, their requesters' counters,
// escalations, and what the consultation service reads besides: agents,
// loads, ratings, memories), as shared/store/consultationstore is the
// DynamoDB one; both are held to the store contract
// (shared/testkit/storetest).
package consultationfake

import (
	"context"
	"sort"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/team/messaging"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/expertgatefake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memoryfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/messagefake"
	"github.com/conclave-ai/conclave/shared/work/consultations"
)

var (
	_ consultations.Store   = (*Consultations)(nil)
	_ consultations.Backend = (*Consultations)(nil)
)

// Consultations is consultations.Backend on a memtable.Table: its
// consultations and counters; the escalations (memtable.KindEscalation),
// which overdue tasks list too; and what a save, an escalation's answer
// or the service's reads touch beside them (memories, agent messages and
// inboxes, the expert gate's agents and ratings). Safe for concurrent
// use.
type Consultations struct {
	*expertgatefake.Gate
	memories *memoryfake.Memories
	tb       *memtable.Table
}

// New returns the consultations of tb (nil: a table of their own).
func New(tb *memtable.Table) *Consultations {
	if tb == nil {
		tb = memtable.New()
	}
	return &Consultations{Gate: expertgatefake.New(tb), memories: memoryfake.New(tb), tb: tb}
}

// RecentMemories implements consultations.Memories (memoryfake's).
func (s *Consultations) RecentMemories(ctx context.Context, teamID string, limit int) ([]memory.Memory, error) {
	return s.memories.RecentMemories(ctx, teamID, limit)
}

// state is the consultations' part of the table.
type state struct {
	consultations map[memtable.Key][]byte          // consultation documents
	active        map[memtable.Key]int             // active consultations by team and requester
	ids           map[memtable.Key]map[string]bool // the ids of those consultations (the counter's record)
}

// st is the consultations' part of the table. Call with the table locked.
func (s *Consultations) st() *state {
	return memtable.Part(s.tb, "consultations", func() *state {
		return &state{consultations: map[memtable.Key][]byte{}, active: map[memtable.Key]int{}, ids: map[memtable.Key]map[string]bool{}}
	})
}

func (s *Consultations) consultationOf(teamID string, b []byte) consultations.Consultation {
	c := memtable.ReadDoc[consultations.Consultation](b)
	c.TeamID = teamID
	return c
}

// CreateConsultation implements consultations.Store: the counter's
// condition, then the counter and the consultation together.
func (s *Consultations) CreateConsultation(ctx context.Context, c consultations.Consultation, limit int) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	if err := memtable.RefTaken(ctx, s.tb, c.TeamID, consultations.RefKind); err != nil {
		return err
	}
	k, ck := memtable.Key{Team: c.TeamID, ID: c.ID}, memtable.Key{Team: c.TeamID, ID: c.RequestingAgent}
	if s.st().active[ck] >= limit {
		return consultations.ErrActiveLimit
	}
	if _, ok := s.st().consultations[k]; ok {
		return apperr.New(apperr.ECONFLICT, "consultation %s exists", c.ID)
	}
	s.st().active[ck]++
	if s.st().ids[ck] == nil {
		s.st().ids[ck] = map[string]bool{}
	}
	s.st().ids[ck][c.ID] = true
	s.st().consultations[k] = memtable.Doc(c)
	memtable.RefSet(ctx, s.tb, c.TeamID, consultations.RefKind, c.ID)
	return nil
}

// ActiveConsultations implements consultations.Store.
func (s *Consultations) ActiveConsultations(_ context.Context, teamID, agent string) ([]string, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	ids := []string{}
	for id := range s.st().ids[memtable.Key{Team: teamID, ID: agent}] {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, nil
}

// CreateEscalated implements consultations.Store: the consultation and
// its escalation, each created only where none has its id (ECONFLICT,
// reason TransactionConflict, as the adapter reports that cancellation),
// with no slot taken.
func (s *Consultations) CreateEscalated(ctx context.Context, c consultations.Consultation, e consultations.Escalation) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	if err := memtable.RefTaken(ctx, s.tb, c.TeamID, consultations.RefKind); err != nil {
		return err
	}
	_, consTaken := s.st().consultations[memtable.Key{Team: c.TeamID, ID: c.ID}]
	_, escTaken := memtable.Docs(s.tb, memtable.KindEscalation)[memtable.Key{Team: e.TeamID, ID: e.ID}]
	if consTaken || escTaken {
		return memtable.Conflict("consultation's create")
	}
	memtable.RefSet(ctx, s.tb, c.TeamID, consultations.RefKind, c.ID)
	s.st().consultations[memtable.Key{Team: c.TeamID, ID: c.ID}] = memtable.Doc(c)
	memtable.Docs(s.tb, memtable.KindEscalation)[memtable.Key{Team: e.TeamID, ID: e.ID}] = memtable.Doc(e)
	return nil
}

// GetConsultation implements consultations.Store.
func (s *Consultations) GetConsultation(_ context.Context, teamID, id string) (consultations.Consultation, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	b, ok := s.st().consultations[memtable.Key{Team: teamID, ID: id}]
	if !ok {
		return consultations.Consultation{}, apperr.NotFound("consultation", id)
	}
	return s.consultationOf(teamID, b), nil
}

// ListConsultations implements consultations.Store, newest first.
func (s *Consultations) ListConsultations(_ context.Context, teamID string, f consultations.Filter, p paging.Page) ([]consultations.Consultation, string, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	var rows []memtable.Row[consultations.Consultation]
	for k, b := range s.st().consultations {
		if k.Team == teamID {
			rows = append(rows, memtable.Row[consultations.Consultation]{SK: k.ID, V: s.consultationOf(teamID, b)})
		}
	}
	keep := func(c consultations.Consultation) bool {
		return (f.Status == "" || c.Status == f.Status) && (f.Agent == "" || c.RequestingAgent == f.Agent || c.ConsultedAgent == f.Agent)
	}
	return memtable.Query(rows, true, "consultations:"+teamID, p, keep)
}

// SaveConsultation implements consultations.Store: the version's
// condition first (ErrChanged wins, as in DynamoDB, where the
// consultation is the transaction's first write), then the counter's,
// then those of the escalation and memory it creates (an id taken is
// ECONFLICT, reason TransactionConflict).
func (s *Consultations) SaveConsultation(_ context.Context, sv consultations.Save) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	c := sv.Consultation
	k, ck := memtable.Key{Team: c.TeamID, ID: c.ID}, memtable.Key{Team: c.TeamID, ID: c.RequestingAgent}
	if sv.Release && sv.Acquire > 0 {
		return apperr.New(apperr.EINTERNAL, "a save both releases and takes a slot")
	}
	b, ok := s.st().consultations[k]
	if !ok || memtable.ReadDoc[consultations.Consultation](b).Version != c.Version-1 {
		return consultations.ErrChanged
	}
	if sv.Release && s.st().active[ck] <= 0 {
		return apperr.New(apperr.ECONFLICT, "counter").WithReason("TransactionConflict")
	}
	if sv.Acquire > 0 && s.st().active[ck] >= sv.Acquire {
		return consultations.ErrActiveLimit
	}
	if sv.Escalation != nil {
		if _, taken := memtable.Docs(s.tb, memtable.KindEscalation)[memtable.Key{Team: c.TeamID, ID: sv.Escalation.ID}]; taken {
			return memtable.Conflict("consultation's change")
		}
	}
	if sv.Memory != nil {
		if _, taken := memtable.Docs(s.tb, memtable.KindMemory)[memtable.Key{Team: c.TeamID, ID: sv.Memory.ID}]; taken {
			return memtable.Conflict("consultation's change")
		}
	}
	switch {
	case sv.Release:
		s.st().active[ck]--
		delete(s.st().ids[ck], c.ID)
	case sv.Acquire > 0:
		s.st().active[ck]++
		if s.st().ids[ck] == nil {
			s.st().ids[ck] = map[string]bool{}
		}
		s.st().ids[ck][c.ID] = true
	}
	if sv.Escalation != nil {
		memtable.Docs(s.tb, memtable.KindEscalation)[memtable.Key{Team: c.TeamID, ID: sv.Escalation.ID}] = memtable.Doc(*sv.Escalation)
	}
	if sv.Memory != nil {
		// The memory's author's cached context ends with it (the epoch
		// moves on), in the adapter's same transaction.
		m := *sv.Memory
		m.TeamID = c.TeamID
		memtable.Docs(s.tb, memtable.KindMemory)[memtable.Key{Team: c.TeamID, ID: m.ID}] = memtable.Doc(m)
		memtable.DropContexts(s.tb, c.TeamID, []string{m.Author})
	}
	s.st().consultations[k] = memtable.Doc(c)
	return nil
}

// GetEscalation implements consultations.Store.
func (s *Consultations) GetEscalation(_ context.Context, teamID, id string) (consultations.Escalation, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	b, ok := memtable.Docs(s.tb, memtable.KindEscalation)[memtable.Key{Team: teamID, ID: id}]
	if !ok {
		return consultations.Escalation{}, apperr.NotFound("escalation", id)
	}
	e := memtable.ReadDoc[consultations.Escalation](b)
	e.TeamID = teamID
	return e, nil
}

// ListEscalations implements consultations.Store.
func (s *Consultations) ListEscalations(_ context.Context, teamID string, st consultations.EscalationStatus, p paging.Page) ([]consultations.Escalation, string, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	var rows []memtable.Row[consultations.Escalation]
	for k, b := range memtable.Docs(s.tb, memtable.KindEscalation) {
		if k.Team == teamID {
			e := memtable.ReadDoc[consultations.Escalation](b)
			e.TeamID = teamID
			rows = append(rows, memtable.Row[consultations.Escalation]{SK: k.ID, V: e})
		}
	}
	return memtable.Query(rows, true, "escalations:"+string(st)+":"+teamID, p, func(e consultations.Escalation) bool { return e.Status == st })
}

// ResolveEscalation implements consultations.Store: the escalation (still
// open: ECONFLICT, reason Resolved), the consultation (at the version
// read: ErrChanged), the answer and its inbox entry (each new), at once.
func (s *Consultations) ResolveEscalation(_ context.Context, e consultations.Escalation, c consultations.Consultation, msg messaging.Message) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	ek, k := memtable.Key{Team: e.TeamID, ID: e.ID}, memtable.Key{Team: c.TeamID, ID: c.ID}
	if b, ok := memtable.Docs(s.tb, memtable.KindEscalation)[ek]; !ok || memtable.ReadDoc[consultations.Escalation](b).Status != consultations.EscalationOpen {
		return apperr.New(apperr.ECONFLICT, "escalation %s is already resolved", e.ID).WithReason("Resolved")
	}
	if b, ok := s.st().consultations[k]; !ok || memtable.ReadDoc[consultations.Consultation](b).Version != c.Version-1 {
		return consultations.ErrChanged
	}
	msgs, inbox := memtable.Docs(s.tb, memtable.KindAgentMessage), memtable.Docs(s.tb, memtable.KindInbox)
	if _, taken := msgs[memtable.Key{Team: c.TeamID, ID: msg.ID}]; taken {
		return memtable.Conflict("resolution")
	}
	if _, taken := inbox[messagefake.InboxKey(c.TeamID, msg.To, msg.ID)]; taken {
		return memtable.Conflict("resolution")
	}
	memtable.Docs(s.tb, memtable.KindEscalation)[ek] = memtable.Doc(e)
	s.st().consultations[k] = memtable.Doc(c)
	msgs[memtable.Key{Team: c.TeamID, ID: msg.ID}] = memtable.Doc(msg)
	inbox[messagefake.InboxKey(c.TeamID, msg.To, msg.ID)] = memtable.Doc(msg)
	return nil
}
