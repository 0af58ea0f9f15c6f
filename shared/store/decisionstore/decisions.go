package decisionstore

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
)

// decisionRetention bounds the routing log (TTL).
const decisionRetention = 180 * 24 * time.Hour

// decisionItem is one entry of the routing log. strategy, fallback_used
// (always present, so "= false" matches), selected_agents and confidence
// are what listings filter on; the scores, attempts and aggregation are
// lists of the item structs below.
type decisionItem struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	Type      string `dynamodbav:"type"`
	GSI1PK    string `dynamodbav:"gsi1pk"`
	GSI1SK    string `dynamodbav:"gsi1sk"`
	ExpiresAt int64  `dynamodbav:"expires_at"`

	ID             string `dynamodbav:"id"`
	ConversationID string `dynamodbav:"conversation_id"`
	MessageID      string `dynamodbav:"message_id"`
	Query          string `dynamodbav:"query"`
	Strategy       string `dynamodbav:"strategy"`
	DecidedBy      string `dynamodbav:"decided_by,omitempty"`
	Skill          string `dynamodbav:"skill,omitempty"`
	// TraceID is the turn's trace (cascade.Decision.TraceID).
	TraceID            string             `dynamodbav:"trace_id,omitempty"`
	RouterModel        *routerModelItem   `dynamodbav:"router_model,omitempty"`
	Planner            *plannerItem       `dynamodbav:"planner,omitempty"`
	RequestedStrategy  string             `dynamodbav:"requested_strategy,omitempty"`
	Reason             string             `dynamodbav:"reason"`
	Scores             []scoreItem        `dynamodbav:"scores"`
	SelectedAgents     []string           `dynamodbav:"selected_agents"`
	AnsweredBy         []string           `dynamodbav:"answered_by"`
	Confidence         float64            `dynamodbav:"confidence"`
	Threshold          float64            `dynamodbav:"confidence_threshold"`
	Fallback           bool               `dynamodbav:"fallback_used"`
	Complexity         float64            `dynamodbav:"complexity_score"`
	Dimensions         map[string]float64 `dynamodbav:"complexity_dimensions"`
	Tier               string             `dynamodbav:"selected_tier"`
	Model              string             `dynamodbav:"selected_model"`
	TierOverrideReason string             `dynamodbav:"tier_override_reason,omitempty"`
	EstimatedCost      float64            `dynamodbav:"estimated_cost"`
	ActualCost         float64            `dynamodbav:"actual_cost"`
	GateLatencyMS      float64            `dynamodbav:"gate_latency_ms"`
	RouterLatencyMS    float64            `dynamodbav:"router_latency_ms"`
	Attempts           []attemptItem      `dynamodbav:"attempts"`
	Aggregation        []contributionItem `dynamodbav:"aggregation,omitempty"`
	Outcome            string             `dynamodbav:"outcome"`
	Flags              flagsItem          `dynamodbav:"flags"`
	CreatedAt          time.Time          `dynamodbav:"created_at"`
}

// scoreItem is one agent's expert-gate score, with the match confidence
// the threshold read and whether a keyword matched (explicit, and a skill
// that overrides continuity): what the decision log says of a choice.
type scoreItem struct {
	AgentSlug       string   `dynamodbav:"agent_slug"`
	AgentName       string   `dynamodbav:"agent_name"`
	SkillMatch      float64  `dynamodbav:"skill_match"`
	PastPerformance float64  `dynamodbav:"past_performance"`
	PersonalityFit  float64  `dynamodbav:"personality_fit"`
	LoadBalance     float64  `dynamodbav:"load_balance"`
	Overall         float64  `dynamodbav:"overall"`
	MatchingSkills  []string `dynamodbav:"matching_skills"`
	Explanation     string   `dynamodbav:"explanation"`
	RatedSimilar    int      `dynamodbav:"rated_similar"`
	Label           string   `dynamodbav:"label,omitempty"`
	Confidence      float64  `dynamodbav:"confidence"`
	Explicit        bool     `dynamodbav:"explicit,omitempty"`
	Override        bool     `dynamodbav:"override_continuity,omitempty"`
}

type attemptItem struct {
	Agent     string  `dynamodbav:"agent"`
	Outcome   string  `dynamodbav:"outcome"`
	Error     string  `dynamodbav:"error,omitempty"`
	LatencyMS int64   `dynamodbav:"latency_ms"`
	CostUSD   float64 `dynamodbav:"cost_usd"`
	Kept      bool    `dynamodbav:"kept"`
}

type contributionItem struct {
	Agent     string  `dynamodbav:"agent"`
	Relevance float64 `dynamodbav:"relevance"`
	Points    int     `dynamodbav:"points"`
	Dropped   int     `dynamodbav:"duplicates_dropped"`
}

type flagsItem struct {
	Collaboration bool `dynamodbav:"collaboration"`
	ExpertGate    bool `dynamodbav:"expert_gate"`
	Ensemble      bool `dynamodbav:"ensemble"`
	RouterModel   bool `dynamodbav:"router_model"`
}

// routerModelItem is the tier-0 router model's call, when it was asked.
type routerModelItem struct {
	Model        string  `dynamodbav:"model"`
	Agent        string  `dynamodbav:"agent"`
	Skill        string  `dynamodbav:"skill"`
	Confidence   float64 `dynamodbav:"confidence"`
	Reason       string  `dynamodbav:"reason"`
	Outcome      string  `dynamodbav:"outcome"`
	Error        string  `dynamodbav:"error,omitempty"`
	LatencyMS    float64 `dynamodbav:"latency_ms"`
	InputTokens  int     `dynamodbav:"input_tokens"`
	OutputTokens int     `dynamodbav:"output_tokens"`
	CostUSD      float64 `dynamodbav:"cost_usd"`
}

// ToDecisionItem is the stored form of a routing decision; a turn writes it
// in its transaction (conversationstore).
func ToDecisionItem(d cascade.Decision) decisionItem {
	it := decisionItem{
		PK: dynamo.TeamPK(d.TeamID), SK: dynamo.DecisionSK(d.ID), Type: "routing_decision",
		GSI1PK: dynamo.ConvGSI1PK(d.TeamID, d.ConversationID), GSI1SK: dynamo.DecisionSK(d.ID),
		ExpiresAt: dynamo.TTL(d.CreatedAt.Add(decisionRetention)),
		ID:        d.ID, ConversationID: d.ConversationID, MessageID: d.MessageID, Query: d.Query,
		Strategy: string(d.Strategy), RequestedStrategy: string(d.RequestedStrategy), Reason: d.Reason,
		SelectedAgents: d.SelectedAgents, AnsweredBy: d.AnsweredBy, Confidence: d.Confidence, Threshold: d.Threshold,
		Fallback: d.Fallback, Complexity: d.Complexity, Dimensions: d.Dimensions, Tier: d.Tier, Model: d.Model,
		TierOverrideReason: d.TierOverrideReason, EstimatedCost: d.EstimatedCost, ActualCost: d.ActualCost,
		GateLatencyMS: d.GateLatencyMS, RouterLatencyMS: d.RouterLatencyMS, Outcome: d.Outcome,
		Flags: flagsItem(d.Flags), CreatedAt: d.CreatedAt, DecidedBy: d.DecidedBy, Skill: d.Skill, TraceID: d.TraceID,
	}
	if d.RouterModel != nil {
		rm := routerModelItem(*d.RouterModel)
		it.RouterModel = &rm
	}
	if d.Planner != nil {
		pl := plannerItem(*d.Planner)
		it.Planner = &pl
	}
	if d.Scores != nil {
		it.Scores = make([]scoreItem, len(d.Scores))
		for i, sc := range d.Scores {
			it.Scores[i] = scoreItem{
				AgentSlug: sc.AgentSlug, AgentName: sc.AgentName, SkillMatch: sc.SkillMatch, PastPerformance: sc.PastPerformance,
				PersonalityFit: sc.PersonalityFit, LoadBalance: sc.LoadBalance, Overall: sc.Overall,
				MatchingSkills: sc.MatchingSkills, Explanation: sc.Explanation, RatedSimilar: sc.RatedSimilar, Label: sc.Label,
				Confidence: sc.Confidence, Explicit: sc.Explicit, Override: sc.Override,
			}
		}
	}
	if d.Attempts != nil {
		it.Attempts = make([]attemptItem, len(d.Attempts))
		for i, a := range d.Attempts {
			it.Attempts[i] = attemptItem(a)
		}
	}
	if d.Aggregation != nil {
		it.Aggregation = make([]contributionItem, len(d.Aggregation))
		for i, c := range d.Aggregation {
			it.Aggregation[i] = contributionItem(c)
		}
	}
	return it
}

func (it decisionItem) toDecision() cascade.Decision {
	d := cascade.Decision{
		ID: it.ID, ConversationID: it.ConversationID, MessageID: it.MessageID, Query: it.Query,
		Strategy: routing.Strategy(it.Strategy), RequestedStrategy: routing.Strategy(it.RequestedStrategy), Reason: it.Reason,
		SelectedAgents: it.SelectedAgents, AnsweredBy: it.AnsweredBy, Confidence: it.Confidence, Threshold: it.Threshold,
		Fallback: it.Fallback, Complexity: it.Complexity, Dimensions: it.Dimensions, Tier: it.Tier, Model: it.Model,
		TierOverrideReason: it.TierOverrideReason, EstimatedCost: it.EstimatedCost, ActualCost: it.ActualCost,
		GateLatencyMS: it.GateLatencyMS, RouterLatencyMS: it.RouterLatencyMS, Outcome: it.Outcome,
		Flags: cascade.Flags(it.Flags), CreatedAt: it.CreatedAt, DecidedBy: it.DecidedBy, Skill: it.Skill, TraceID: it.TraceID,
	}
	if it.RouterModel != nil {
		rm := cascade.RouterModelCall(*it.RouterModel)
		d.RouterModel = &rm
	}
	if it.Planner != nil {
		pl := cascade.PlannerCall(*it.Planner)
		d.Planner = &pl
	}
	if it.Scores != nil {
		d.Scores = make([]routing.ExpertScore, len(it.Scores))
		for i, sc := range it.Scores {
			d.Scores[i] = routing.ExpertScore{
				AgentSlug: sc.AgentSlug, AgentName: sc.AgentName, SkillMatch: sc.SkillMatch, PastPerformance: sc.PastPerformance,
				PersonalityFit: sc.PersonalityFit, LoadBalance: sc.LoadBalance, Overall: sc.Overall,
				MatchingSkills: sc.MatchingSkills, Explanation: sc.Explanation, RatedSimilar: sc.RatedSimilar, Label: sc.Label,
				Confidence: sc.Confidence, Explicit: sc.Explicit, Override: sc.Override,
			}
		}
	}
	if it.Attempts != nil {
		d.Attempts = make([]cascade.Attempt, len(it.Attempts))
		for i, a := range it.Attempts {
			d.Attempts[i] = cascade.Attempt(a)
		}
	}
	if it.Aggregation != nil {
		d.Aggregation = make([]routing.Contribution, len(it.Aggregation))
		for i, c := range it.Aggregation {
			d.Aggregation[i] = routing.Contribution(c)
		}
	}
	return d
}

func fromDecisionItem(m map[string]types.AttributeValue) (cascade.Decision, error) {
	var it decisionItem
	err := dynamo.Unmarshal(m, &it)
	return it.toDecision(), err
}

// GetDecision implements conversations.Store.
func (s *Store) GetDecision(ctx context.Context, teamID, id string) (cascade.Decision, error) {
	out, err := s.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.Table, Key: dynamo.Key(dynamo.TeamPK(teamID), dynamo.DecisionSK(id))})
	if err != nil {
		return cascade.Decision{}, dynamo.Internal(err, "GetItem")
	}
	if out.Item == nil {
		return cascade.Decision{}, apperr.NotFound("routing decision", id)
	}
	d, err := fromDecisionItem(out.Item)
	if err != nil {
		return d, dynamo.Internal(err, "unmarshal")
	}
	return d, nil
}

// ListDecisions implements conversations.Store, newest first. The
// conversation filter uses gsi1; the others are filter expressions.
func (s *Store) ListDecisions(ctx context.Context, teamID string, f cascade.DecisionFilter, p paging.Page) ([]cascade.Decision, string, error) {
	from := dynamo.PrefixDecision
	if !f.Since.IsZero() {
		from = dynamo.DecisionFloor(f.Since)
	}
	index, pk, sk := "", expression.Key(dynamo.AttrPK).Equal(dynamo.Value(dynamo.TeamPK(teamID))), expression.Key(dynamo.AttrSK)
	if f.ConversationID != "" {
		index, pk, sk = dynamo.IndexGSI1, expression.Key(dynamo.AttrGSI1PK).Equal(dynamo.Value(dynamo.ConvGSI1PK(teamID, f.ConversationID))), expression.Key(dynamo.AttrGSI1SK)
	}
	var filter expression.ConditionBuilder
	and := func(c expression.ConditionBuilder) {
		if filter.IsSet() {
			filter = filter.And(c)
		} else {
			filter = c
		}
	}
	if f.Strategy != "" {
		and(dynamo.Name("strategy").Equal(dynamo.Value(f.Strategy)))
	}
	if f.Agent != "" {
		and(dynamo.Name("selected_agents").Contains(f.Agent))
	}
	if f.Fallback != nil {
		and(dynamo.Name("fallback_used").Equal(dynamo.Value(*f.Fallback)))
	}
	in, err := dynamo.BuiltQuery(index, pk.And(sk.Between(dynamo.Value(from), dynamo.Value(dynamo.PrefixDecision+dynamo.RangeEnd))), filter, false)
	if err != nil {
		return nil, "", dynamo.Internal(err, "expression")
	}
	list := []cascade.Decision{}
	next, err := s.QueryPage(ctx, in, "decisions:"+teamID+":"+f.ConversationID, p, func(m map[string]types.AttributeValue) error {
		d, err := fromDecisionItem(m)
		list = append(list, d)
		return err
	})
	return list, next, err
}

// RecentDecisions implements conversations.Store.
func (s *Store) RecentDecisions(ctx context.Context, teamID string, since time.Time, limit int) ([]cascade.Decision, error) {
	return paging.Collect(limit, paging.MaxLimit, func(p paging.Page) ([]cascade.Decision, string, error) {
		return s.ListDecisions(ctx, teamID, cascade.DecisionFilter{Since: since}, p)
	})
}

// plannerItem is a decision's planner call (a nested map); it converts
// from cascade.PlannerCall, so a field added there fails to compile here.
type plannerItem struct {
	Trigger      string  `dynamodbav:"trigger"`
	Outcome      string  `dynamodbav:"outcome"`
	Reason       string  `dynamodbav:"reason,omitempty"`
	PlanID       string  `dynamodbav:"plan_id,omitempty"`
	Steps        int     `dynamodbav:"steps"`
	Model        string  `dynamodbav:"model"`
	LatencyMS    float64 `dynamodbav:"latency_ms"`
	InputTokens  int     `dynamodbav:"input_tokens"`
	OutputTokens int     `dynamodbav:"output_tokens"`
	CostUSD      float64 `dynamodbav:"cost_usd"`
}
