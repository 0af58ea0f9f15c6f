package memstore

import (
	"context"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/platform/streams"
	"github.com/conclave-ai/conclave/shared/work/plans"
)

var _ plans.Store = (*Store)(nil)

// planOf reads a plan's document; its event_seq is its stream's last
// number. Call with the lock held.
func (s *Store) planOf(teamID string, b []byte) plans.Plan {
	p := readDoc[plans.Plan](b)
	p.TeamID = teamID
	p.EventSeq = s.streamHead(teamID, streams.Plan(p.ID))
	return p
}

// CreatePlan implements plans.Store: the plan and its events at once.
func (s *Store) CreatePlan(_ context.Context, p plans.Plan) error {
	if err := streamNumbered(p.EventSeq, p.Events); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.plans == nil {
		s.plans = map[key][]byte{}
	}
	k := key{p.TeamID, p.ID}
	if _, ok := s.plans[k]; ok {
		return apperr.New(apperr.ECONFLICT, "plan %s exists", p.ID)
	}
	if err := s.streamFree(p.TeamID, streams.Plan(p.ID), p.Events); err != nil {
		return err
	}
	s.plans[k] = doc(p)
	s.streamAppend(p.TeamID, streams.Plan(p.ID), p.Events)
	return nil
}

// GetPlan implements plans.Store.
func (s *Store) GetPlan(_ context.Context, teamID, id string) (plans.Plan, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.plans[key{teamID, id}]
	if !ok {
		return plans.Plan{}, apperr.NotFound("plan", id)
	}
	return s.planOf(teamID, b), nil
}

// PutPlan implements plans.Store: conditioned on the stored version, the
// plan and its events at once.
func (s *Store) PutPlan(_ context.Context, p plans.Plan) error {
	if err := streamNumbered(p.EventSeq, p.Events); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{p.TeamID, p.ID}
	b, ok := s.plans[k]
	if !ok || s.planOf(p.TeamID, b).Version != p.Version-1 {
		return plans.ErrChanged
	}
	if err := s.streamFree(p.TeamID, streams.Plan(p.ID), p.Events); err != nil {
		return err
	}
	s.plans[k] = doc(p)
	s.streamAppend(p.TeamID, streams.Plan(p.ID), p.Events)
	return nil
}

// DuePlans implements plans.Store.
func (s *Store) DuePlans(_ context.Context, before time.Time, limit int) ([]plans.Ref, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []plans.Ref
	for k, b := range s.plans {
		p := s.planOf(k.team, b)
		if !p.Status.Terminal() && p.Due().Before(before) && len(out) < limit {
			out = append(out, plans.Ref{TeamID: k.team, ID: k.id})
		}
	}
	return out, nil
}

// ListPlans implements plans.Store, newest first.
func (s *Store) ListPlans(_ context.Context, teamID string, pg paging.Page) ([]plans.Plan, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rows []row[plans.Plan]
	for k, b := range s.plans {
		if k.team == teamID {
			rows = append(rows, row[plans.Plan]{sk: k.id, v: s.planOf(teamID, b)})
		}
	}
	return query(rows, true, "plans:"+teamID, pg, func(plans.Plan) bool { return true })
}
