package memstore

import (
	"context"
	"sort"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/messaging"
	"github.com/conclave-ai/conclave/shared/work/consultations"
)

var _ consultations.Store = (*Store)(nil)

func (s *Store) consMaps() {
	if s.consultations == nil {
		s.consultations, s.escalations, s.consActive, s.consIDs = map[key][]byte{}, map[key][]byte{}, map[key]int{}, map[key]map[string]bool{}
	}
}

func (s *Store) consultationOf(teamID string, b []byte) consultations.Consultation {
	c := readDoc[consultations.Consultation](b)
	c.TeamID = teamID
	return c
}

// CreateConsultation implements consultations.Store: the counter's
// condition, then the counter and the consultation together.
func (s *Store) CreateConsultation(ctx context.Context, c consultations.Consultation, limit int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.consMaps()
	if err := s.refTaken(ctx, c.TeamID, consultations.RefKind); err != nil {
		return err
	}
	k, ck := key{c.TeamID, c.ID}, key{c.TeamID, c.RequestingAgent}
	if s.consActive[ck] >= limit {
		return consultations.ErrActiveLimit
	}
	if _, ok := s.consultations[k]; ok {
		return apperr.New(apperr.ECONFLICT, "consultation %s exists", c.ID)
	}
	s.consActive[ck]++
	if s.consIDs[ck] == nil {
		s.consIDs[ck] = map[string]bool{}
	}
	s.consIDs[ck][c.ID] = true
	s.consultations[k] = doc(c)
	s.refSet(ctx, c.TeamID, consultations.RefKind, c.ID)
	return nil
}

// ActiveConsultations implements consultations.Store.
func (s *Store) ActiveConsultations(_ context.Context, teamID, agent string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.consMaps()
	ids := []string{}
	for id := range s.consIDs[key{teamID, agent}] {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, nil
}

// CreateEscalated implements consultations.Store.
func (s *Store) CreateEscalated(ctx context.Context, c consultations.Consultation, e consultations.Escalation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.consMaps()
	if err := s.refTaken(ctx, c.TeamID, consultations.RefKind); err != nil {
		return err
	}
	s.refSet(ctx, c.TeamID, consultations.RefKind, c.ID)
	s.consultations[key{c.TeamID, c.ID}] = doc(c)
	s.escalations[key{e.TeamID, e.ID}] = doc(e)
	return nil
}

// GetConsultation implements consultations.Store.
func (s *Store) GetConsultation(_ context.Context, teamID, id string) (consultations.Consultation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.consMaps()
	b, ok := s.consultations[key{teamID, id}]
	if !ok {
		return consultations.Consultation{}, apperr.NotFound("consultation", id)
	}
	return s.consultationOf(teamID, b), nil
}

// ListConsultations implements consultations.Store, newest first.
func (s *Store) ListConsultations(_ context.Context, teamID string, f consultations.Filter, p paging.Page) ([]consultations.Consultation, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.consMaps()
	var rows []row[consultations.Consultation]
	for k, b := range s.consultations {
		if k.team == teamID {
			rows = append(rows, row[consultations.Consultation]{sk: k.id, v: s.consultationOf(teamID, b)})
		}
	}
	keep := func(c consultations.Consultation) bool {
		return (f.Status == "" || c.Status == f.Status) && (f.Agent == "" || c.RequestingAgent == f.Agent || c.ConsultedAgent == f.Agent)
	}
	return query(rows, true, "consultations:"+teamID, p, keep)
}

// SaveConsultation implements consultations.Store: the version's
// condition first (ErrChanged wins, as in DynamoDB, where the
// consultation is the transaction's first write), then the counter's.
func (s *Store) SaveConsultation(_ context.Context, sv consultations.Save) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.consMaps()
	c := sv.Consultation
	k, ck := key{c.TeamID, c.ID}, key{c.TeamID, c.RequestingAgent}
	if sv.Release && sv.Acquire > 0 {
		return apperr.New(apperr.EINTERNAL, "a save both releases and takes a slot")
	}
	b, ok := s.consultations[k]
	if !ok || readDoc[consultations.Consultation](b).Version != c.Version-1 {
		return consultations.ErrChanged
	}
	if sv.Release && s.consActive[ck] <= 0 {
		return apperr.New(apperr.ECONFLICT, "counter").WithReason("TransactionConflict")
	}
	if sv.Acquire > 0 && s.consActive[ck] >= sv.Acquire {
		return consultations.ErrActiveLimit
	}
	switch {
	case sv.Release:
		s.consActive[ck]--
		delete(s.consIDs[ck], c.ID)
	case sv.Acquire > 0:
		s.consActive[ck]++
		if s.consIDs[ck] == nil {
			s.consIDs[ck] = map[string]bool{}
		}
		s.consIDs[ck][c.ID] = true
	}
	if sv.Escalation != nil {
		s.escalations[key{c.TeamID, sv.Escalation.ID}] = doc(*sv.Escalation)
	}
	if sv.Memory != nil {
		m := *sv.Memory
		m.TeamID = c.TeamID
		s.memories[key{c.TeamID, m.ID}] = doc(m)
	}
	s.consultations[k] = doc(c)
	return nil
}

// GetEscalation implements consultations.Store.
func (s *Store) GetEscalation(_ context.Context, teamID, id string) (consultations.Escalation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.consMaps()
	b, ok := s.escalations[key{teamID, id}]
	if !ok {
		return consultations.Escalation{}, apperr.NotFound("escalation", id)
	}
	e := readDoc[consultations.Escalation](b)
	e.TeamID = teamID
	return e, nil
}

// ListEscalations implements consultations.Store.
func (s *Store) ListEscalations(_ context.Context, teamID string, st consultations.EscalationStatus, p paging.Page) ([]consultations.Escalation, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.consMaps()
	var rows []row[consultations.Escalation]
	for k, b := range s.escalations {
		if k.team == teamID {
			e := readDoc[consultations.Escalation](b)
			e.TeamID = teamID
			rows = append(rows, row[consultations.Escalation]{sk: k.id, v: e})
		}
	}
	return query(rows, true, "escalations:"+string(st)+":"+teamID, p, func(e consultations.Escalation) bool { return e.Status == st })
}

// ResolveEscalation implements consultations.Store.
func (s *Store) ResolveEscalation(_ context.Context, e consultations.Escalation, c consultations.Consultation, msg messaging.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.consMaps()
	ek, k := key{e.TeamID, e.ID}, key{c.TeamID, c.ID}
	if b, ok := s.escalations[ek]; !ok || readDoc[consultations.Escalation](b).Status != consultations.EscalationOpen {
		return apperr.New(apperr.ECONFLICT, "escalation %s is already resolved", e.ID).WithReason("Resolved")
	}
	if b, ok := s.consultations[k]; !ok || readDoc[consultations.Consultation](b).Version != c.Version-1 {
		return consultations.ErrChanged
	}
	s.escalations[ek] = doc(e)
	s.consultations[k] = doc(c)
	s.agentMessages[key{c.TeamID, msg.ID}] = doc(msg)
	ik := key{c.TeamID, msg.To}
	if s.inboxes[ik] == nil {
		s.inboxes[ik] = map[string]inboxRow{}
	}
	s.inboxes[ik][msg.ID] = inboxRow{doc: doc(msg)}
	return nil
}
