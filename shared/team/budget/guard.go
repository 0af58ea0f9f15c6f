package budget

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/answerby"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/authctx"
	"github.com/conclave-ai/conclave/shared/platform/clock"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
)

// DefaultMaxTokens is the output bound a reservation assumes for a request
// that sets none (MaxTokens 0: the provider's default).
const DefaultMaxTokens = 4096

// settleTimeout bounds the writes after a call: they run even when the
// call's context has ended, since the provider may have charged for it.
const settleTimeout = 5 * time.Second

// Publisher puts domain events on the bus.
type Publisher interface {
	Publish(ctx context.Context, detailType string, detail any) error
}

// Warning is EvWarning's detail.
type Warning struct {
	TeamID          string    `json:"team_id"`
	Month           string    `json:"month"`
	MonthlyLimitUSD float64   `json:"monthly_limit_usd"`
	WarnAt          float64   `json:"warn_at"`
	SpentUSD        float64   `json:"spent_usd"`
	At              time.Time `json:"at"`
}

// Guard is the CostGuard around the model port (providers.New builds it
// around every function's model): every call attributed to a team
// (models.MetadataTeamID) reserves its worst case on the team's month
// before it is made and settles to its real cost after, so concurrent
// calls can never spend past the team's limit. A call whose worst case
// does not fit is refused, not made: RefusedError (EREJECTED, reason
// TeamBudgetExhausted).
//
// The worst case is the request's input estimate (models.EstimateTokens
// over its system prompt, messages, tool calls and tool definitions) plus
// its MaxTokens (DefaultMaxTokens when unset), at the price of the model
// the request names or, when it names none, of the provider's default
// model (DefaultModels). A model without a listed price reserves at the
// highest listed price, and settles at what models.Cost charges for it.
//
// A team without a budget is charged the same way with no limit, so its
// spend and usage are known. Crossing the budget's warn_at share publishes
// EvWarning once per month (a conditional flag on the month).
type Guard struct {
	Model models.Model
	Store Store
	// Bus receives EvWarning; nil publishes nothing.
	Bus Publisher
	// DefaultModels maps a provider ("" for the default provider) to the
	// model id it answers a request naming none with.
	DefaultModels map[string]string
	Log           *slog.Logger
	Now           clock.Func
}

var _ models.Model = (*Guard)(nil)

func (g *Guard) log() *slog.Logger {
	if g.Log != nil {
		return g.Log
	}
	return slog.Default()
}

// Converse implements models.Model: reserve, call, settle. Returns the
// model's errors, RefusedError, or the store's (a call whose reservation
// cannot be written is not made).
func (g *Guard) Converse(ctx context.Context, req models.Request) (models.Response, error) {
	teamID := req.Metadata[models.MetadataTeamID]
	if teamID == "" || g.Store == nil {
		// Nothing to charge it to. Every call site attributes its calls
		// (a test holds them to it); this keeps a test double working.
		return g.Model.Converse(ctx, req)
	}
	now := g.Now.UTC()
	month, day := MonthOf(now), DayOf(now)
	amount := g.WorstCase(req)
	userID := req.Metadata[models.MetadataUserID]
	if userID == "" {
		userID = authctx.CallerOf(ctx).UserID
	}
	led, held, err := g.reserve(ctx, teamID, month, userID, amount)
	if err != nil {
		return models.Response{}, err
	}
	g.warn(ctx, teamID, month, led, led.Spent)
	resp, cerr := g.Model.Converse(ctx, req)
	// Settled even when the call's context has ended, but by the time the
	// function must answer (shared/platform/answerby).
	wctx, cancel := answerby.Detached(ctx, settleTimeout)
	defer cancel()
	if cerr != nil {
		g.release(wctx, teamID, month, userID, amount, held)
		return resp, cerr
	}
	cost := USD(models.Cost(resp.ModelID, resp.InputTokens, resp.OutputTokens))
	c := Charge{TeamID: teamID, Month: month, Day: day, Reserved: amount, Cost: cost,
		InputTokens: resp.InputTokens, OutputTokens: resp.OutputTokens,
		Attribution: Attribution{Agent: req.Metadata[models.MetadataAgent], Model: resp.ModelID,
			Conversation: req.Metadata[models.MetadataConversationID], Session: req.Metadata[models.MetadataSessionID], User: userID}.Key(),
		UserReserved: held}
	if err := g.Store.Settle(wctx, c); err != nil {
		// The answer is the caller's all the same; the reservation
		// stays held, so the month counts more than was spent, never
		// less.
		g.log().ErrorContext(ctx, "budget: a call could not be settled", "team_id", teamID, "month", month, "cost_nanos", int64(cost), "error", err.Error())
		return resp, nil
	}
	g.warn(wctx, teamID, month, led, led.Spent+cost)
	return resp, nil
}

// reserve holds amount on the month, initializing the month from the
// team's budget on its first call. A call a person's work makes, in a
// team whose budget sets per_user_usd, holds it on the person's month too,
// in the same transaction (held: what it holds there). The per-person
// limit is the budget as read just before: a budget set while the call
// reserves applies from the next call.
func (g *Guard) reserve(ctx context.Context, teamID, month, userID string, amount Nanos) (led Ledger, held Nanos, err error) {
	var perUser Nanos
	if userID != "" {
		if b, err := g.budget(ctx, teamID); err != nil {
			return Ledger{}, 0, err
		} else if b != nil {
			perUser = b.PerUser
		}
	}
	for range 2 {
		if perUser > 0 {
			led, err = g.Store.ReserveUser(ctx, teamID, month, userID, perUser, amount)
			held = amount
		} else {
			led, err = g.Store.Reserve(ctx, teamID, month, amount)
		}
		var ex *Exhausted
		var ux *UserExhausted
		switch {
		case err == nil:
			return led, held, nil
		case errors.As(err, &ux):
			return Ledger{}, 0, UserRefusedError(ux.Ledger, amount)
		case errors.As(err, &ex):
			return Ledger{}, 0, RefusedError(ex.Ledger, amount)
		case !errors.Is(err, ErrNoLedger):
			return Ledger{}, 0, err
		}
		b, err := g.budget(ctx, teamID)
		if err != nil {
			return Ledger{}, 0, err
		}
		if err := g.Store.InitMonth(ctx, teamID, month, b); err != nil {
			return Ledger{}, 0, err
		}
	}
	return Ledger{}, 0, apperr.New(apperr.EINTERNAL, "budget: the month %s of team %s could not be initialized", month, teamID)
}

// budget is the team's budget, nil when it has none.
func (g *Guard) budget(ctx context.Context, teamID string) (*Budget, error) {
	b, err := g.Store.GetBudget(ctx, teamID)
	switch {
	case err == nil:
		return &b, nil
	case apperr.Is(err, apperr.ENOTFOUND):
		return nil, nil
	}
	return nil, err
}

// release gives back a failed call's reservation: the team's, and what it
// held on its person's month.
func (g *Guard) release(ctx context.Context, teamID, month, userID string, amount, held Nanos) {
	if err := g.Store.Release(ctx, teamID, month, amount); err != nil {
		g.log().ErrorContext(ctx, "budget: a failed call's reservation could not be released", "team_id", teamID, "month", month, "nanos", int64(amount), "error", err.Error())
	}
	if held == 0 {
		return
	}
	if err := g.Store.ReleaseUser(ctx, teamID, month, userID, held); err != nil {
		g.log().ErrorContext(ctx, "budget: a failed call's reservation could not be released on its user's month", "team_id", teamID, "user_id", userID, "month", month, "nanos", int64(held), "error", err.Error())
	}
}

// warn publishes EvWarning when spent (the month's spend as this call
// knows it) reaches the warning share and the month was not warned yet.
// A call that saw the month before concurrent calls crossed it may miss
// the crossing; the next call's reservation sees it.
func (g *Guard) warn(ctx context.Context, teamID, month string, led Ledger, spent Nanos) {
	if g.Bus == nil || !led.Limited || led.Warned || float64(spent) < led.WarnAt*float64(led.Limit) {
		return
	}
	first, err := g.Store.MarkWarned(ctx, teamID, month)
	if err != nil || !first {
		if err != nil {
			g.log().WarnContext(ctx, "budget: the warning flag could not be set", "team_id", teamID, "error", err.Error())
		}
		return
	}
	w := Warning{TeamID: teamID, Month: month, MonthlyLimitUSD: led.Limit.Dollars(), WarnAt: led.WarnAt, SpentUSD: spent.Dollars(), At: g.Now.UTC()}
	if err := g.Bus.Publish(ctx, EvWarning, w); err != nil {
		g.log().ErrorContext(ctx, "budget: the warning could not be published", "team_id", teamID, "month", month, "error", err.Error())
		return
	}
	// The line the stage's team-budget-warnings alarm counts.
	g.log().InfoContext(ctx, manifest.BudgetWarningLog, "team_id", teamID, "month", month, "spent_usd", w.SpentUSD, "monthly_limit_usd", w.MonthlyLimitUSD)
}

// WorstCase is the most req can cost: its input estimate plus its output
// bound at its model's price (see Guard).
func (g *Guard) WorstCase(req models.Request) Nanos {
	in := models.EstimateTokens(req.System)
	for _, m := range req.Messages {
		in += models.EstimateTokens(m.Content)
		for _, c := range m.ToolCalls {
			in += models.EstimateTokens(c.Name + " " + c.Input)
		}
	}
	for _, t := range req.Tools {
		schema, _ := json.Marshal(t.InputSchema())
		in += models.EstimateTokens(t.Name + " " + t.Description + " " + string(schema))
	}
	out := req.MaxTokens
	if out <= 0 {
		out = DefaultMaxTokens
	}
	id := req.ModelID
	if id == "" {
		// As models.Switch picks the adapter: the provider named, or
		// the default one.
		id = g.DefaultModels[""]
		if v, ok := g.DefaultModels[req.Provider]; ok && req.Provider != "" {
			id = v
		}
	}
	p, ok := models.Pricing[id]
	if !ok {
		p = highestPrice()
	}
	return USDUp((float64(in)*p.InputPerMTok + float64(out)*p.OutputPerMTok) / 1e6)
}

// highestPrice is the highest listed input and output price.
func highestPrice() models.Price {
	var hi models.Price
	for _, p := range models.Pricing {
		hi.InputPerMTok = max(hi.InputPerMTok, p.InputPerMTok)
		hi.OutputPerMTok = max(hi.OutputPerMTok, p.OutputPerMTok)
	}
	return hi
}
