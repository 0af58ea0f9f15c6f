package memstore

import (
	"context"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/team/budget"
)

var _ budget.Store = (*Store)(nil)

// budgetRows are the teams' budgets, months and usage counters, made on
// first use (under the store's mutex).
type budgetRows struct {
	budgets map[string]budget.Budget
	months  map[key]*budget.Ledger // by team and month
	usage   map[key]map[usageKey]budget.Usage
}

type usageKey struct {
	day string
	budget.Attribution
}

func (s *Store) budgetRows() *budgetRows {
	if s.bud == nil {
		s.bud = &budgetRows{budgets: map[string]budget.Budget{}, months: map[key]*budget.Ledger{}, usage: map[key]map[usageKey]budget.Usage{}}
	}
	return s.bud
}

// GetBudget implements budget.Store.
func (s *Store) GetBudget(_ context.Context, teamID string) (budget.Budget, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.budgetRows().budgets[teamID]
	if !ok {
		return budget.Budget{}, apperr.NotFound("budget", teamID)
	}
	return b, nil
}

// apply gives l the budget b (nil: none).
func apply(l *budget.Ledger, b *budget.Budget) {
	l.Initialized = true
	if b != nil {
		l.Limited, l.Limit, l.WarnAt = true, b.Limit, b.WarnAt
	}
}

func (r *budgetRows) month(teamID, month string) *budget.Ledger {
	k := key{teamID, month}
	if r.months[k] == nil {
		r.months[k] = &budget.Ledger{}
	}
	return r.months[k]
}

// PutBudget implements budget.Store.
func (s *Store) PutBudget(_ context.Context, teamID, month string, b budget.Budget) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.budgetRows()
	r.budgets[teamID] = b
	apply(r.month(teamID, month), &b)
	return nil
}

// GetLedger implements budget.Store.
func (s *Store) GetLedger(_ context.Context, teamID, month string) (budget.Ledger, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.budgetRows().months[key{teamID, month}]; l != nil {
		return *l, nil
	}
	return budget.Ledger{}, nil
}

// InitMonth implements budget.Store.
func (s *Store) InitMonth(_ context.Context, teamID, month string, b *budget.Budget) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.budgetRows().month(teamID, month); !l.Initialized {
		apply(l, b)
	}
	return nil
}

// Reserve implements budget.Store.
func (s *Store) Reserve(_ context.Context, teamID, month string, amount budget.Nanos) (budget.Ledger, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.budgetRows().month(teamID, month)
	switch {
	case !l.Initialized:
		return budget.Ledger{}, budget.ErrNoLedger
	case l.Limited && l.Limit-l.Spent-l.Reserved < amount:
		return budget.Ledger{}, &budget.Exhausted{Ledger: *l}
	}
	l.Reserved += amount
	return *l, nil
}

// Settle implements budget.Store.
func (s *Store) Settle(_ context.Context, c budget.Charge) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.budgetRows()
	l := r.month(c.TeamID, c.Month)
	l.Reserved -= c.Reserved
	l.Spent += c.Cost
	l.Calls++
	k := key{c.TeamID, c.Day}
	if r.usage[k] == nil {
		r.usage[k] = map[usageKey]budget.Usage{}
	}
	uk := usageKey{c.Day, c.Attribution}
	r.usage[k][uk] = r.usage[k][uk].Add(budget.Usage{Calls: 1, InputTokens: int64(c.InputTokens), OutputTokens: int64(c.OutputTokens), Cost: c.Cost})
	return nil
}

// Release implements budget.Store.
func (s *Store) Release(_ context.Context, teamID, month string, amount budget.Nanos) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.budgetRows().month(teamID, month).Reserved -= amount
	return nil
}

// MarkWarned implements budget.Store.
func (s *Store) MarkWarned(_ context.Context, teamID, month string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.budgetRows().month(teamID, month)
	if l.Warned {
		return false, nil
	}
	l.Warned = true
	return true, nil
}

// Usage implements budget.Store.
func (s *Store) Usage(_ context.Context, teamID, from, to string) ([]budget.UsageRow, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []budget.UsageRow
	for k, rows := range s.budgetRows().usage {
		if k.team != teamID || k.id < from || k.id > to {
			continue
		}
		for uk, u := range rows {
			out = append(out, budget.UsageRow{Day: uk.day, Attribution: uk.Attribution, Usage: u})
		}
	}
	return out, nil
}
