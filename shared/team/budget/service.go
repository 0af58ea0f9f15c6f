package budget

import (
	"context"
	"math"
	"sort"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/authctx"
	"github.com/conclave-ai/conclave/shared/platform/clock"
)

// Service answers the budget and usage routes.
type Service struct {
	Store Store
	// Now is the clock (the month and the range bounds); nil is the wall
	// clock.
	Now clock.Func
}

// PutInput is the body of PUT /v1/budget.
type PutInput struct {
	MonthlyLimitUSD *float64 `json:"monthly_limit_usd"`
	// WarnAt is the share of the limit whose crossing warns; nil is
	// DefaultWarnAt.
	WarnAt *float64 `json:"warn_at,omitempty"`
	// PerUserUSD is what one person's work may spend in a month, within
	// the team's limit; nil is no per-person limit.
	PerUserUSD *float64 `json:"per_user_usd,omitempty"`
}

// Status is the answer of GET and PUT /v1/budget. MonthlyLimitUSD and
// WarnAt are null for a team without a budget (no limit).
type Status struct {
	MonthlyLimitUSD *float64   `json:"monthly_limit_usd"`
	WarnAt          *float64   `json:"warn_at"`
	PerUserUSD      *float64   `json:"per_user_usd"`
	Month           string     `json:"month"`
	SpentUSD        float64    `json:"spent_usd"`
	ReservedUSD     float64    `json:"reserved_usd"`
	Calls           int64      `json:"calls"`
	Warned          bool       `json:"warned"`
	UpdatedAt       *time.Time `json:"updated_at,omitempty"`
}

// Get returns the team's budget and its spend this month (UTC).
func (s *Service) Get(ctx context.Context, teamID string) (Status, error) {
	month := MonthOf(s.Now.UTC())
	st := Status{Month: month}
	b, err := s.Store.GetBudget(ctx, teamID)
	switch {
	case apperr.Is(err, apperr.ENOTFOUND):
	case err != nil:
		return Status{}, err
	default:
		limit, warn, at := b.Limit.Dollars(), b.WarnAt, b.UpdatedAt
		st.MonthlyLimitUSD, st.WarnAt, st.UpdatedAt = &limit, &warn, &at
		if b.PerUser > 0 {
			perUser := b.PerUser.Dollars()
			st.PerUserUSD = &perUser
		}
	}
	l, err := s.Store.GetLedger(ctx, teamID, month)
	if err != nil {
		return Status{}, err
	}
	st.SpentUSD, st.ReservedUSD, st.Calls, st.Warned = l.Spent.Dollars(), l.Reserved.Dollars(), l.Calls, l.Warned
	return st, nil
}

// Put sets the team's budget; it applies at once to this month. Returns
// EINVALID (naming the field).
func (s *Service) Put(ctx context.Context, teamID string, in PutInput) (Status, error) {
	if in.MonthlyLimitUSD == nil {
		return Status{}, apperr.Invalid("monthly_limit_usd", "monthly_limit_usd is required")
	}
	limit := *in.MonthlyLimitUSD
	if math.IsNaN(limit) || limit <= 0 || limit > MaxMonthlyLimitUSD {
		return Status{}, apperr.Invalid("monthly_limit_usd", "monthly_limit_usd must be more than 0 and at most %d", MaxMonthlyLimitUSD)
	}
	warn := DefaultWarnAt
	if in.WarnAt != nil {
		warn = *in.WarnAt
	}
	if math.IsNaN(warn) || warn <= 0 || warn > 1 {
		return Status{}, apperr.Invalid("warn_at", "warn_at must be a share of the limit: more than 0 and at most 1")
	}
	var perUser Nanos
	if p := in.PerUserUSD; p != nil {
		if math.IsNaN(*p) || *p <= 0 || *p > MaxMonthlyLimitUSD {
			return Status{}, apperr.Invalid("per_user_usd", "per_user_usd must be more than 0 and at most %d", MaxMonthlyLimitUSD)
		}
		if *p > limit {
			return Status{}, apperr.Invalid("per_user_usd", "per_user_usd must be at most monthly_limit_usd (%g)", limit)
		}
		perUser = USD(*p)
	}
	now := s.Now.UTC()
	if err := s.Store.PutBudget(ctx, teamID, MonthOf(now), Budget{Limit: USD(limit), WarnAt: warn, PerUser: perUser, UpdatedAt: now}); err != nil {
		return Status{}, err
	}
	return s.Get(ctx, teamID)
}

// Groups of GET /v1/usage.
const (
	ByAgent        = "agent"
	ByModel        = "model"
	ByConversation = "conversation"
	BySession      = "session"
	ByDay          = "day"
	ByUser         = "user"
)

// MaxUsageDays bounds a usage query's range (from..to, inclusive): about a
// quarter.
const MaxUsageDays = 92

// UsageQuery is GET /v1/usage's query: from and to are UTC dates
// (YYYY-MM-DD, inclusive); empty, they are the first day of this month and
// today. A member (authctx.CallerOf) reads their own usage only, whatever
// the group.
type UsageQuery struct {
	From, To, GroupBy string
}

// UsageLine is one key's usage in US dollars.
type UsageLine struct {
	Key          string  `json:"key"`
	Calls        int64   `json:"calls"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	USD          float64 `json:"usd"`
}

// UsageReport is GET /v1/usage's answer: the items by key (most expensive
// first, then by key) and their total.
type UsageReport struct {
	From    string `json:"from"`
	To      string `json:"to"`
	GroupBy string `json:"group_by"`
	// UserID is set when the report is one person's own (a member's).
	UserID string      `json:"user_id,omitempty"`
	Items  []UsageLine `json:"items"`
	Total  UsageLine   `json:"total"`
}

func line(key string, u Usage) UsageLine {
	return UsageLine{Key: key, Calls: u.Calls, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, USD: u.Cost.Dollars()}
}

// Usage sums the team's usage counters of the range by the group asked.
// Returns EINVALID (naming from, to or group_by).
func (s *Service) Usage(ctx context.Context, teamID string, q UsageQuery) (UsageReport, error) {
	now := s.Now.UTC()
	if q.GroupBy == "" {
		q.GroupBy = ByAgent
	}
	keyOf := map[string]func(UsageRow) string{
		ByAgent:        func(r UsageRow) string { return r.Agent },
		ByModel:        func(r UsageRow) string { return r.Model },
		ByConversation: func(r UsageRow) string { return r.Conversation },
		BySession:      func(r UsageRow) string { return r.Session },
		ByDay:          func(r UsageRow) string { return r.Day },
		ByUser:         func(r UsageRow) string { return r.User },
	}[q.GroupBy]
	if keyOf == nil {
		return UsageReport{}, apperr.Invalid("group_by", "group_by must be one of agent, model, conversation, session, day, user")
	}
	from, to := now.AddDate(0, 0, 1-now.Day()), now
	var err error
	if q.From != "" {
		if from, err = time.Parse(time.DateOnly, q.From); err != nil {
			return UsageReport{}, apperr.Invalid("from", "from must be a date, YYYY-MM-DD (UTC)")
		}
	}
	if q.To != "" {
		if to, err = time.Parse(time.DateOnly, q.To); err != nil {
			return UsageReport{}, apperr.Invalid("to", "to must be a date, YYYY-MM-DD (UTC)")
		}
	}
	fromDay, toDay := DayOf(from), DayOf(to)
	if toDay < fromDay {
		return UsageReport{}, apperr.Invalid("to", "to must not be before from")
	}
	f, _ := time.Parse(time.DateOnly, fromDay)
	t, _ := time.Parse(time.DateOnly, toDay)
	if int(t.Sub(f).Hours()/24)+1 > MaxUsageDays {
		return UsageReport{}, apperr.Invalid("to", "a usage range is at most %d days", MaxUsageDays)
	}
	rows, err := s.Store.Usage(ctx, teamID, fromDay, toDay)
	if err != nil {
		return UsageReport{}, err
	}
	caller := authctx.CallerOf(ctx)
	sums := map[string]Usage{}
	var total Usage
	for _, r := range rows {
		if caller.Member() && r.User != caller.UserID {
			continue // a member reads their own usage only
		}
		k := keyOf(r)
		sums[k] = sums[k].Add(r.Usage)
		total = total.Add(r.Usage)
	}
	rep := UsageReport{From: fromDay, To: toDay, GroupBy: q.GroupBy, Items: []UsageLine{}, Total: line("total", total)}
	if caller.Member() {
		rep.UserID = caller.UserID
	}
	for k, u := range sums {
		rep.Items = append(rep.Items, line(k, u))
	}
	sort.Slice(rep.Items, func(i, j int) bool {
		a, b := rep.Items[i], rep.Items[j]
		if q.GroupBy == ByDay {
			return a.Key < b.Key
		}
		// Costs are compared only when they differ, and keys are unique:
		// > and >=, < and <= order alike here (the two boundary mutants
		// make mutation leaves alive on these lines are equivalent).
		if sums[a.Key].Cost != sums[b.Key].Cost {
			return sums[a.Key].Cost > sums[b.Key].Cost
		}
		return a.Key < b.Key
	})
	return rep, nil
}
