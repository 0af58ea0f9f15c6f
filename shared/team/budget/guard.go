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
	led, err := g.reserve(ctx, teamID, month, amount)
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
		if err := g.Store.Release(wctx, teamID, month, amount); err != nil {
			g.log().ErrorContext(ctx, "budget: a failed call's reservation could not be released", "team_id", teamID, "month", month, "nanos", int64(amount), "error", err.Error())
		}
		return resp, cerr
	}
	cost := USD(models.Cost(resp.ModelID, resp.InputTokens, resp.OutputTokens))
	c := Charge{TeamID: teamID, Month: month, Day: day, Reserved: amount, Cost: cost,
		InputTokens: resp.InputTokens, OutputTokens: resp.OutputTokens,
		Attribution: Attribution{Agent: req.Metadata[models.MetadataAgent], Model: resp.ModelID,
			Conversation: req.Metadata[models.MetadataConversationID], Session: req.Metadata[models.MetadataSessionID]}.Key()}
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
// team's budget on its first call.
func (g *Guard) reserve(ctx context.Context, teamID, month string, amount Nanos) (Ledger, error) {
	for range 2 {
		led, err := g.Store.Reserve(ctx, teamID, month, amount)
		var ex *Exhausted
		switch {
		case err == nil:
			return led, nil
		case errors.As(err, &ex):
			return Ledger{}, RefusedError(ex.Ledger, amount)
		case !errors.Is(err, ErrNoLedger):
			return Ledger{}, err
		}
		var bp *Budget
		b, err := g.Store.GetBudget(ctx, teamID)
		switch {
		case err == nil:
			bp = &b
		case !apperr.Is(err, apperr.ENOTFOUND):
			return Ledger{}, err
		}
		if err := g.Store.InitMonth(ctx, teamID, month, bp); err != nil {
			return Ledger{}, err
		}
	}
	return Ledger{}, apperr.New(apperr.EINTERNAL, "budget: the month %s of team %s could not be initialized", month, teamID)
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
