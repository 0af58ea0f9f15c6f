// Package budgetfake is the in-memory fake of budget.Store (team budgets,
// their months and usage counters), as shared/store/budgetstore is the
// DynamoDB one; both are held to the store contract
// (shared/testkit/storetest).
package budgetfake

import (
	"context"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/team/budget"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
)

var _ budget.Store = (*Budgets)(nil)

// Budgets is budget.Store on a memtable.Table. Safe for concurrent use.
type Budgets struct{ tb *memtable.Table }

// New returns the budgets of tb (nil: a table of their own).
func New(tb *memtable.Table) *Budgets {
	if tb == nil {
		tb = memtable.New()
	}
	return &Budgets{tb: tb}
}

// budgetRows are the teams' budgets, months and usage counters, made on
// first use (under the table's lock).
type budgetRows struct {
	budgets map[string]budget.Budget
	months  map[memtable.Key]*budget.Ledger // by team and month
	users   map[userMonth]*budget.UserLedger
	usage   map[memtable.Key]map[usageKey]budget.Usage
}

type userMonth struct{ team, month, user string }

type usageKey struct {
	day string
	budget.Attribution
}

// budgetRows is the budgets' part of the table. Call with the table
// locked.
func (s *Budgets) budgetRows() *budgetRows {
	return memtable.Part(s.tb, "budgets", func() *budgetRows {
		return &budgetRows{budgets: map[string]budget.Budget{}, months: map[memtable.Key]*budget.Ledger{}, users: map[userMonth]*budget.UserLedger{}, usage: map[memtable.Key]map[usageKey]budget.Usage{}}
	})
}

// GetBudget implements budget.Store.
func (s *Budgets) GetBudget(_ context.Context, teamID string) (budget.Budget, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
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
	k := memtable.Key{Team: teamID, ID: month}
	if r.months[k] == nil {
		r.months[k] = &budget.Ledger{}
	}
	return r.months[k]
}

// PutBudget implements budget.Store.
func (s *Budgets) PutBudget(_ context.Context, teamID, month string, b budget.Budget) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	r := s.budgetRows()
	r.budgets[teamID] = b
	apply(r.month(teamID, month), &b)
	return nil
}

// GetLedger implements budget.Store.
func (s *Budgets) GetLedger(_ context.Context, teamID, month string) (budget.Ledger, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	if l := s.budgetRows().months[memtable.Key{Team: teamID, ID: month}]; l != nil {
		return *l, nil
	}
	return budget.Ledger{}, nil
}

// InitMonth implements budget.Store.
func (s *Budgets) InitMonth(_ context.Context, teamID, month string, b *budget.Budget) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	if l := s.budgetRows().month(teamID, month); !l.Initialized {
		apply(l, b)
	}
	return nil
}

// Reserve implements budget.Store.
func (s *Budgets) Reserve(_ context.Context, teamID, month string, amount budget.Nanos) (budget.Ledger, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
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

func (r *budgetRows) user(teamID, month, userID string) *budget.UserLedger {
	k := userMonth{teamID, month, userID}
	if r.users[k] == nil {
		r.users[k] = &budget.UserLedger{UserID: userID}
	}
	return r.users[k]
}

// ReserveUser implements budget.Store: both months under one lock, as
// the adapter's one transaction.
func (s *Budgets) ReserveUser(_ context.Context, teamID, month, userID string, limit, amount budget.Nanos) (budget.Ledger, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	r := s.budgetRows()
	l, u := r.month(teamID, month), r.user(teamID, month, userID)
	// In the adapter's order: an amount over the limit itself is refused
	// before anything is tried; then the team's month, then the person's.
	switch {
	case limit < amount:
		refused := *u
		refused.Limit = limit
		return budget.Ledger{}, &budget.UserExhausted{Ledger: refused}
	case !l.Initialized:
		return budget.Ledger{}, budget.ErrNoLedger
	case l.Limited && l.Limit-l.Spent-l.Reserved < amount:
		return budget.Ledger{}, &budget.Exhausted{Ledger: *l}
	case limit-u.Spent-u.Reserved < amount:
		refused := *u
		refused.Limit = limit
		return budget.Ledger{}, &budget.UserExhausted{Ledger: refused}
	}
	l.Reserved += amount
	u.Reserved += amount
	return *l, nil
}

// ReleaseUser implements budget.Store.
func (s *Budgets) ReleaseUser(_ context.Context, teamID, month, userID string, amount budget.Nanos) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	s.budgetRows().user(teamID, month, userID).Reserved -= amount
	return nil
}

// GetUserLedger implements budget.Store.
func (s *Budgets) GetUserLedger(_ context.Context, teamID, month, userID string) (budget.UserLedger, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	if u := s.budgetRows().users[userMonth{teamID, month, userID}]; u != nil {
		return *u, nil
	}
	return budget.UserLedger{UserID: userID}, nil
}

// Settle implements budget.Store.
func (s *Budgets) Settle(_ context.Context, c budget.Charge) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	r := s.budgetRows()
	l := r.month(c.TeamID, c.Month)
	l.Reserved -= c.Reserved
	l.Spent += c.Cost
	l.Calls++
	if user := c.Attribution.User; user != "" && user != budget.KeyNone {
		u := r.user(c.TeamID, c.Month, user)
		u.Reserved -= c.UserReserved
		u.Spent += c.Cost
		u.Calls++
	}
	k := memtable.Key{Team: c.TeamID, ID: c.Day}
	if r.usage[k] == nil {
		r.usage[k] = map[usageKey]budget.Usage{}
	}
	uk := usageKey{c.Day, c.Attribution}
	r.usage[k][uk] = r.usage[k][uk].Add(budget.Usage{Calls: 1, InputTokens: int64(c.InputTokens), OutputTokens: int64(c.OutputTokens), Cost: c.Cost})
	return nil
}

// Release implements budget.Store.
func (s *Budgets) Release(_ context.Context, teamID, month string, amount budget.Nanos) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	s.budgetRows().month(teamID, month).Reserved -= amount
	return nil
}

// MarkWarned implements budget.Store.
func (s *Budgets) MarkWarned(_ context.Context, teamID, month string) (bool, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	l := s.budgetRows().month(teamID, month)
	if l.Warned {
		return false, nil
	}
	l.Warned = true
	return true, nil
}

// Usage implements budget.Store.
func (s *Budgets) Usage(_ context.Context, teamID, from, to string) ([]budget.UsageRow, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	var out []budget.UsageRow
	for k, rows := range s.budgetRows().usage {
		if k.Team != teamID || k.ID < from || k.ID > to {
			continue
		}
		for uk, u := range rows {
			out = append(out, budget.UsageRow{Day: uk.day, Attribution: uk.Attribution, Usage: u})
		}
	}
	return out, nil
}
