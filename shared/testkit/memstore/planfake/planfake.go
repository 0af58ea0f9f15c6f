// Package planfake is the in-memory fake of plans.Store (compound plans
// and the sweep's index of them), as shared/store/planstore is the
// DynamoDB one; both are held to the store contract
// (shared/testkit/storetest).
package planfake

import (
	"context"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/platform/streams"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
	"github.com/conclave-ai/conclave/shared/work/plans"
)

var _ plans.Store = (*Plans)(nil)

// Plans is plans.Store on a memtable.Table. Safe for concurrent use.
type Plans struct{ tb *memtable.Table }

// New returns the plans of tb (nil: a table of their own).
func New(tb *memtable.Table) *Plans {
	if tb == nil {
		tb = memtable.New()
	}
	return &Plans{tb: tb}
}

// docs are the plan documents. Call with the table locked.
func (s *Plans) docs() map[memtable.Key][]byte {
	return *memtable.Part(s.tb, "plans", func() *map[memtable.Key][]byte { m := map[memtable.Key][]byte{}; return &m })
}

// planOf reads a plan's document; its event_seq is its stream's last
// number. Call with the table locked.
func (s *Plans) planOf(teamID string, b []byte) plans.Plan {
	p := memtable.ReadDoc[plans.Plan](b)
	p.TeamID = teamID
	p.EventSeq = memtable.Head(s.tb, teamID, streams.Plan(p.ID))
	return p
}

// CreatePlan implements plans.Store: the plan and its events at once.
func (s *Plans) CreatePlan(_ context.Context, p plans.Plan) error {
	if err := memtable.StreamNumbered(p.EventSeq, p.Events); err != nil {
		return err
	}
	s.tb.Lock()
	defer s.tb.Unlock()
	k := memtable.Key{Team: p.TeamID, ID: p.ID}
	if _, ok := s.docs()[k]; ok {
		return apperr.New(apperr.ECONFLICT, "plan %s exists", p.ID)
	}
	if err := memtable.StreamFree(s.tb, p.TeamID, streams.Plan(p.ID), p.Events); err != nil {
		return err
	}
	s.docs()[k] = memtable.Doc(p)
	memtable.StreamAppend(s.tb, p.TeamID, streams.Plan(p.ID), p.Events)
	return nil
}

// GetPlan implements plans.Store.
func (s *Plans) GetPlan(_ context.Context, teamID, id string) (plans.Plan, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	b, ok := s.docs()[memtable.Key{Team: teamID, ID: id}]
	if !ok {
		return plans.Plan{}, apperr.NotFound("plan", id)
	}
	return s.planOf(teamID, b), nil
}

// PutPlan implements plans.Store: conditioned on the stored version, the
// plan and its events at once.
func (s *Plans) PutPlan(_ context.Context, p plans.Plan) error {
	if err := memtable.StreamNumbered(p.EventSeq, p.Events); err != nil {
		return err
	}
	s.tb.Lock()
	defer s.tb.Unlock()
	k := memtable.Key{Team: p.TeamID, ID: p.ID}
	b, ok := s.docs()[k]
	if !ok || s.planOf(p.TeamID, b).Version != p.Version-1 {
		return plans.ErrChanged
	}
	if err := memtable.StreamFree(s.tb, p.TeamID, streams.Plan(p.ID), p.Events); err != nil {
		return err
	}
	s.docs()[k] = memtable.Doc(p)
	memtable.StreamAppend(s.tb, p.TeamID, streams.Plan(p.ID), p.Events)
	return nil
}

// DuePlans implements plans.Store: the plans that have not ended, by
// their backstop (plans.Plan.Due), as the adapter's index lists them
// (dueRefs).
func (s *Plans) DuePlans(_ context.Context, before time.Time, limit int) ([]plans.Ref, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	var list []memtable.DueRow[plans.Ref]
	for k, b := range s.docs() {
		if p := s.planOf(k.Team, b); !p.Status.Terminal() {
			list = append(list, memtable.DueRow[plans.Ref]{At: p.Due(), Team: k.Team, ID: k.ID, Ref: plans.Ref{TeamID: k.Team, ID: k.ID}})
		}
	}
	return memtable.DueRefs(list, before, limit), nil
}

// ListPlans implements plans.Store, newest first.
func (s *Plans) ListPlans(_ context.Context, teamID, userID string, pg paging.Page) ([]plans.Plan, string, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	var rows []memtable.Row[plans.Plan]
	for k, b := range s.docs() {
		if k.Team == teamID {
			rows = append(rows, memtable.Row[plans.Plan]{SK: k.ID, V: s.planOf(teamID, b)})
		}
	}
	return memtable.QueryFill(rows, true, "plans:"+teamID, pg, func(p plans.Plan) bool { return userID == "" || p.UserID == userID })
}
