// Package cascade decides who answers a chat turn and keeps the routing
// decision log. A Router applies the cascade of feature flags (direct
// dispatch, an @mention, a handed-off conversation, the AgentRouter, or the
// ExpertGate with a selection strategy) and returns a Plan holding the
// decision; once the agents have answered, Plan.Finish completes the
// decision with what happened, so a decision is built in exactly one
// place. A Service reads the log back and answers the routing analytics;
// it is all the routing function needs, so that binary links no chat.
//
// The scoring primitives (the index, the selector, complexity and tiers)
// are in shared/routing; the conversation the turn belongs to is in
// shared/chat/conversations, which commits each decision with its turn.
package cascade

import (
	"context"
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing"
)

// Flags are the routing feature flags (configuration per environment).
type Flags struct {
	Collaboration bool `json:"collaboration"`
	ExpertGate    bool `json:"expert_gate"`
	Ensemble      bool `json:"ensemble"`
	// RouterModel lets the tier-0 model decide when the gate is unsure.
	RouterModel bool `json:"router_model"`
}

// Attempt is one agent asked during a turn.
type Attempt struct {
	Agent     string  `json:"agent"`
	Outcome   string  `json:"outcome"` // answered, failed, timed_out, refused
	Error     string  `json:"error,omitempty"`
	LatencyMS int64   `json:"latency_ms"`
	CostUSD   float64 `json:"cost_usd"`
	Kept      bool    `json:"kept"`
}

// Attempt outcomes; a decision's outcome is answered or failed.
const (
	OutcomeAnswered = "answered"
	OutcomeFailed   = "failed"
	OutcomeTimedOut = "timed_out"
	OutcomeRefused  = "refused"
)

// Decision is one entry of the routing decision log. Router.Route fills
// the routing fields and Plan.Finish the outcome fields (attempts,
// answered_by, aggregation, actual_cost, outcome); nothing else writes one.
type Decision struct {
	ID                 string                 `json:"id"`
	TeamID             string                 `json:"-"`
	ConversationID     string                 `json:"conversation_id"`
	MessageID          string                 `json:"message_id"`
	Query              string                 `json:"query"`
	Strategy           routing.Strategy       `json:"strategy"`
	RequestedStrategy  routing.Strategy       `json:"requested_strategy,omitempty"`
	Reason             string                 `json:"reason"`
	Scores             []routing.ExpertScore  `json:"scores"`
	SelectedAgents     []string               `json:"selected_agents"`
	AnsweredBy         []string               `json:"answered_by"`
	Confidence         float64                `json:"confidence"`
	Threshold          float64                `json:"confidence_threshold"`
	Fallback           bool                   `json:"fallback_used"`
	Complexity         float64                `json:"complexity_score"`
	Dimensions         map[string]float64     `json:"complexity_dimensions"`
	Tier               string                 `json:"selected_tier"`
	Model              string                 `json:"selected_model"`
	TierOverrideReason string                 `json:"tier_override_reason,omitempty"`
	EstimatedCost      float64                `json:"estimated_cost"`
	ActualCost         float64                `json:"actual_cost"`
	GateLatencyMS      float64                `json:"gate_latency_ms"`
	RouterLatencyMS    float64                `json:"router_latency_ms"`
	Attempts           []Attempt              `json:"attempts"`
	Aggregation        []routing.Contribution `json:"aggregation,omitempty"`
	Outcome            string                 `json:"outcome"` // answered or failed
	Flags              Flags                  `json:"flags"`
	CreatedAt          time.Time              `json:"created_at"`
	// DecidedBy is the path of the cascade that decided (DecidedBy*;
	// absent from decisions logged before it was recorded), and
	// RouterModel the tier-0 model's call when it was asked, whether or
	// not its choice stood.
	DecidedBy string `json:"decided_by,omitempty"`
	// Skill is the skill that chose the first selected agent (its best
	// match), when a skill did: empty for a mention, a handoff,
	// continuity, a greeting, the default agent or a fallback.
	Skill       string           `json:"skill,omitempty"`
	RouterModel *RouterModelCall `json:"router_model,omitempty"`
	// Planner is the compound planner's call when the message looked
	// compound (shared/work/plans): what triggered it, what it answered, and
	// why a plan it proposed fell back to single dispatch.
	Planner *PlannerCall `json:"planner,omitempty"`
	// TraceID is the turn's trace (its answer's X-Trace-Id): the decision
	// finds the trace in X-Ray, or locally with make trace.
	TraceID string `json:"trace_id,omitempty"`
}

// PlannerCall is the compound planner's call for a turn.
type PlannerCall struct {
	Trigger string `json:"trigger"`
	// Outcome is planned (a plan runs: PlanID), single (the planner found
	// one intent) or fallback (no valid plan: Reason says why).
	Outcome      string  `json:"outcome"`
	Reason       string  `json:"reason,omitempty"`
	PlanID       string  `json:"plan_id,omitempty"`
	Steps        int     `json:"steps"`
	Model        string  `json:"model"`
	LatencyMS    float64 `json:"latency_ms"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

// Planner outcomes (PlannerCall.Outcome).
const (
	PlannerPlanned  = "planned"
	PlannerSingle   = "single"
	PlannerFallback = "fallback"
)

// MarshalJSON writes the decision's lists and dimensions as [] and {} when
// there are none, never null: the document types them as arrays and an
// object, and a turn no agent answered has no answered_by (the contract
// test found one in GET /v1/routing/decisions).
func (d Decision) MarshalJSON() ([]byte, error) {
	type plain Decision
	p := plain(d)
	if p.Scores == nil {
		p.Scores = []routing.ExpertScore{}
	}
	if p.SelectedAgents == nil {
		p.SelectedAgents = []string{}
	}
	if p.AnsweredBy == nil {
		p.AnsweredBy = []string{}
	}
	if p.Dimensions == nil {
		p.Dimensions = map[string]float64{}
	}
	if p.Attempts == nil {
		p.Attempts = []Attempt{}
	}
	return json.Marshal(p)
}

// DecisionFilter narrows a decision listing.
type DecisionFilter struct {
	ConversationID string
	Strategy       string
	Agent          string
	Fallback       *bool
	Since          time.Time
}

// Store reads the decision log; every method is scoped by team. Decisions
// are written with the turn they routed (conversations.Store.CommitTurn).
type Store interface {
	// GetDecision returns ENOTFOUND when the team has no such decision.
	GetDecision(ctx context.Context, teamID, id string) (Decision, error)
	// ListDecisions returns a page of the log, newest first.
	ListDecisions(ctx context.Context, teamID string, f DecisionFilter, p paging.Page) ([]Decision, string, error)
	// RecentDecisions returns up to limit decisions made since, newest first.
	RecentDecisions(ctx context.Context, teamID string, since time.Time, limit int) ([]Decision, error)
}

// traceDecision puts the decision on the turn's route span
// (conclave.routing.*): why this agent answers, readable in the trace.
func traceDecision(span trace.Span, d Decision) {
	span.SetAttributes(attribute.String("conclave.routing.decision_id", d.ID),
		attribute.String("conclave.routing.strategy", string(d.Strategy)), attribute.String("conclave.routing.reason", d.Reason),
		attribute.Float64("conclave.routing.confidence", d.Confidence), attribute.Float64("conclave.routing.threshold", d.Threshold),
		attribute.StringSlice("conclave.routing.selected_agents", d.SelectedAgents), attribute.String("conclave.routing.skill", d.Skill),
		attribute.String("conclave.routing.decided_by", d.DecidedBy), attribute.Bool("conclave.routing.fallback", d.Fallback),
		attribute.String("conclave.routing.tier", d.Tier), attribute.String("conclave.routing.model", d.Model))
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
