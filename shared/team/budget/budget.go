// Package budget is the team's CostGuard: a monthly spend limit per team
// (PUT/GET /v1/budget), enforced on every model call by Guard, a wrapper
// around the model port that reserves a call's worst case with a
// conditional add on the team's month before the call is made and settles
// it to the real cost after; and the attribution of that spend by agent,
// model, conversation, session and day (GET /v1/usage) from counters
// written with each settlement.
//
// Money is counted in nano-dollars (Nanos, 1e-9 USD) so every add and
// every condition is exact (DynamoDB numbers are decimal, Go's float64 is
// not); the API answers US dollars.
//
// The package imports no AWS SDK: Store is its port, implemented by
// shared/store/budgetstore (the single table) and shared/testkit/memstore (the
// unit tests' double), both held to the contract of shared/testkit/storetest.
package budget

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
)

// Limits of a budget.
const (
	// MaxMonthlyLimitUSD bounds monthly_limit_usd: a value above it is a
	// typo (an extra digit or three), not a budget.
	MaxMonthlyLimitUSD = 1_000_000
	// DefaultWarnAt is warn_at when the request leaves it out.
	DefaultWarnAt = 0.8
)

// ReasonExhausted is the apperr reason of a refused call (code
// EREJECTED, HTTP 422): the call's worst case does not fit in what is
// left of the team's monthly limit.
const ReasonExhausted = "TeamBudgetExhausted"

// ReasonUserExhausted is the apperr reason of a call a person's own
// monthly budget (per_user_usd) refused (code EREJECTED, HTTP 422): the
// team's budget may have room, the person's has not.
const ReasonUserExhausted = "UserBudgetExceeded"

// EvWarning is the detail-type published once per team and month when the
// month's spend reaches warn_at of the limit (events/schemas).
const EvWarning = "TeamBudgetWarning"

// Nanos is an amount of US dollars in nano-dollars.
type Nanos int64

// USD converts an amount of dollars to Nanos, rounded to the nearest.
func USD(v float64) Nanos { return Nanos(math.Round(v * 1e9)) }

// USDUp converts an amount of dollars to Nanos, rounded up (a reservation
// never rounds a worst case down).
func USDUp(v float64) Nanos { return Nanos(math.Ceil(v * 1e9)) }

// Dollars is n in US dollars.
func (n Nanos) Dollars() float64 { return float64(n) / 1e9 }

// Budget is a team's monthly limit. A team without one has no limit: its
// calls are still charged to its month (for spent_usd and /v1/usage) but
// never refused.
type Budget struct {
	// Limit is monthly_limit_usd, in Nanos.
	Limit Nanos
	// WarnAt is the share of Limit whose crossing emits EvWarning, in
	// (0, 1].
	WarnAt float64
	// PerUser is per_user_usd, in Nanos: what one person's calls may
	// spend in a month within Limit; 0 is no per-person limit.
	PerUser   Nanos
	UpdatedAt time.Time
}

// Ledger is a team's month: what its calls spent and what the calls in
// flight hold, and the limit the month was given (the team's budget, when
// it has one).
type Ledger struct {
	// Initialized: the month has been given the team's budget (or its
	// absence). A month nothing has touched yet is not.
	Initialized bool
	// Limited: the team has a budget; Limit and WarnAt are its.
	Limited bool
	Limit   Nanos
	WarnAt  float64
	// Spent is the settled cost of the month's calls; Reserved is the
	// worst case of the calls still in flight.
	Spent    Nanos
	Reserved Nanos
	// Calls is the number of settled calls.
	Calls int64
	// Warned: EvWarning was published for the month.
	Warned bool
}

// Usage is a counter of calls: one (day, agent, model, conversation,
// session) tuple's in a store, one key's in a report.
type Usage struct {
	Calls        int64
	InputTokens  int64
	OutputTokens int64
	Cost         Nanos
}

// Add returns u plus v.
func (u Usage) Add(v Usage) Usage {
	return Usage{Calls: u.Calls + v.Calls, InputTokens: u.InputTokens + v.InputTokens,
		OutputTokens: u.OutputTokens + v.OutputTokens, Cost: u.Cost + v.Cost}
}

// Attribution names what a call is charged to. An empty field is stored
// as its placeholder (Key).
type Attribution struct {
	Agent        string
	Model        string
	Conversation string
	Session      string
	// User is the person whose work made the call; KeyNone for a call
	// no person started (a key's own work).
	User string
}

// Placeholders of an attribution's empty fields: a call made for no agent
// (routing, planning, an ensemble's synthesis) is the system's; a call in
// no conversation or session is under "(none)".
const (
	KeySystem = "(system)"
	KeyNone   = "(none)"
)

// Key returns a with its empty fields replaced by their placeholders.
func (a Attribution) Key() Attribution {
	or := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	return Attribution{Agent: or(a.Agent, KeySystem), Model: or(a.Model, KeyNone),
		Conversation: or(a.Conversation, KeyNone), Session: or(a.Session, KeyNone), User: or(a.User, KeyNone)}
}

// UsageRow is one stored counter: a day's calls of one attribution.
type UsageRow struct {
	Day string // YYYY-MM-DD, UTC
	Attribution
	Usage
}

// Charge is a settled call.
type Charge struct {
	TeamID string
	// Month and Day are the call's (UTC, at its reservation).
	Month, Day string
	// Reserved is what the call's reservation held; Cost what it cost.
	Reserved Nanos
	Cost     Nanos
	// InputTokens and OutputTokens are the provider's counts.
	InputTokens, OutputTokens int
	// Attribution, with its placeholders (Attribution.Key).
	Attribution Attribution
	// UserReserved is what the call's reservation held on its person's
	// month (Store.ReserveUser), 0 when it held nothing there. A call
	// with a person (Attribution.User) is charged to the person's month
	// either way.
	UserReserved Nanos
}

// UserLedger is one person's month in a team: what their calls spent and
// hold. Limit is the per-person limit a refusal was measured against.
type UserLedger struct {
	UserID   string
	Limit    Nanos
	Spent    Nanos
	Reserved Nanos
	Calls    int64
}

// UserExhausted is Store.ReserveUser's refusal by the person's month: the
// person's ledger as it was.
type UserExhausted struct{ Ledger UserLedger }

func (e *UserExhausted) Error() string {
	return fmt.Sprintf("budget: %s's monthly limit of %d nanos is reached (%d spent, %d reserved)", e.Ledger.UserID, e.Ledger.Limit, e.Ledger.Spent, e.Ledger.Reserved)
}

// UserRefusedError is the error of a call a person's budget refused:
// EREJECTED with reason UserBudgetExceeded and the details user_id,
// per_user_usd and user_spent_usd. It wraps models.ErrBudgetExhausted, as
// the team's refusal does, so a caller that stops on an exhausted budget
// stops on either.
func UserRefusedError(l UserLedger, amount Nanos) *apperr.Error {
	return apperr.Wrap(apperr.EREJECTED, models.ErrBudgetExhausted, "the user's monthly budget of $%.2f (per_user_usd) is exhausted: $%.4f spent, $%.4f held by calls in flight, and this model call may cost up to $%.4f",
		l.Limit.Dollars(), l.Spent.Dollars(), l.Reserved.Dollars(), amount.Dollars()).
		WithReason(ReasonUserExhausted).
		WithDetail("user_id", l.UserID).
		WithDetail("per_user_usd", l.Limit.Dollars()).
		WithDetail("user_spent_usd", l.Spent.Dollars())
}

// ErrNoLedger is Store.Reserve's answer for a month not yet initialized:
// the caller initializes it (Store.InitMonth) and reserves again.
var ErrNoLedger = errors.New("budget: the month has no ledger yet")

// Store keeps budgets, months and usage counters. Every write is one
// conditional or additive write on one item, so concurrent calls never
// lose an add and never cross a limit.
type Store interface {
	// GetBudget returns the team's budget, ENOTFOUND when it has none.
	GetBudget(ctx context.Context, teamID string) (Budget, error)
	// PutBudget stores the team's budget and gives it to month's ledger
	// (initializing it when it is not), in one transaction.
	PutBudget(ctx context.Context, teamID, month string, b Budget) error
	// GetLedger returns the month's ledger; the zero Ledger when nothing
	// touched it.
	GetLedger(ctx context.Context, teamID, month string) (Ledger, error)
	// InitMonth gives an uninitialized month the team's budget (nil: no
	// limit). A month already initialized is left as it is (no error).
	InitMonth(ctx context.Context, teamID, month string, b *Budget) error
	// Reserve adds amount to the month's reservations if the month is
	// limited and what it spent and holds plus amount stays within its
	// limit, or if it is unlimited, and returns the ledger after the add.
	// It returns ErrNoLedger for an uninitialized month and an
	// *Exhausted error (with the ledger as it was) when the amount does
	// not fit; nothing is written then.
	Reserve(ctx context.Context, teamID, month string, amount Nanos) (Ledger, error)
	// ReserveUser is Reserve and, in the same transaction, the add of
	// amount to the person's month of the team, on the condition that
	// what the person spent and holds plus amount stays within limit
	// (the budget's PerUser). Either both hold the amount or neither
	// does: ErrNoLedger, *Exhausted (the team's month refused),
	// *UserExhausted (the person's did), or ECONFLICT reason
	// TransactionConflict when concurrent calls kept the month busy.
	ReserveUser(ctx context.Context, teamID, month, userID string, limit, amount Nanos) (Ledger, error)
	// ReleaseUser gives back what a reservation held on the person's
	// month (Release gives back the team's).
	ReleaseUser(ctx context.Context, teamID, month, userID string, amount Nanos) error
	// GetUserLedger returns the person's month (Limit unset); the zero
	// UserLedger, with UserID, when nothing touched it.
	GetUserLedger(ctx context.Context, teamID, month, userID string) (UserLedger, error)
	// Settle turns a reservation into its cost on the month (and on its
	// person's month, when it has a person) and adds the call to its
	// day's usage counter.
	Settle(ctx context.Context, c Charge) error
	// Release gives back a reservation whose call was not made or failed.
	Release(ctx context.Context, teamID, month string, amount Nanos) error
	// MarkWarned sets the month's warned flag and reports whether this
	// call set it (false: it was set already).
	MarkWarned(ctx context.Context, teamID, month string) (bool, error)
	// Usage returns the team's usage counters of the days from..to
	// (YYYY-MM-DD, inclusive), in no particular order.
	Usage(ctx context.Context, teamID, from, to string) ([]UsageRow, error)
}

// Exhausted is Store.Reserve's refusal: the ledger as it was.
type Exhausted struct{ Ledger Ledger }

func (e *Exhausted) Error() string {
	return fmt.Sprintf("budget: the month's limit of %d nanos is reached (%d spent, %d reserved)", e.Ledger.Limit, e.Ledger.Spent, e.Ledger.Reserved)
}

// RefusedError is the error a refused call returns: EREJECTED with reason
// TeamBudgetExhausted and the details monthly_limit_usd and spent_usd.
func RefusedError(l Ledger, amount Nanos) *apperr.Error {
	return apperr.Wrap(apperr.EREJECTED, models.ErrBudgetExhausted, "the team's monthly budget of $%.2f is exhausted: $%.4f spent, $%.4f held by calls in flight, and this model call may cost up to $%.4f",
		l.Limit.Dollars(), l.Spent.Dollars(), l.Reserved.Dollars(), amount.Dollars()).
		WithReason(ReasonExhausted).
		WithDetail("monthly_limit_usd", l.Limit.Dollars()).
		WithDetail("spent_usd", l.Spent.Dollars())
}

// IsExhausted reports whether err is (or wraps) a refusal of the team's
// budget.
func IsExhausted(err error) bool { return errors.Is(err, models.ErrBudgetExhausted) }

// MonthOf and DayOf are the UTC month (YYYY-MM) and day (YYYY-MM-DD) of t.
func MonthOf(t time.Time) string { return t.UTC().Format("2006-01") }

// DayOf is the UTC day of t.
func DayOf(t time.Time) string { return t.UTC().Format(time.DateOnly) }
