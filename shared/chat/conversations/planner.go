package conversations

import (
	"context"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// Planner is the compound planner (shared/work/plans): asked before dispatch
// for every turn not addressed to an agent by name. It asks its model only
// when the message looks compound (its trigger), and starts a plan when
// the model proposes a valid one.
type Planner interface {
	Plan(ctx context.Context, in PlanRequest) (PlanResult, error)
}

// PlanRequest is a turn as the planner sees it.
type PlanRequest struct {
	TeamID         string
	ConversationID string
	// Lead is the agent that synthesizes the plan's answer: the
	// conversation's current agent (or the team's default).
	Lead    string
	Message string
	Agents  []agents.Agent
	// Scores are the gate's scores of the message; Threshold its
	// confidence threshold.
	Scores    []routing.ExpertScore
	Threshold float64
}

// PlanResult is the planner's answer: Call is nil when it was not asked
// (a single intent by its trigger); Ref is the plan it started, with the
// lead's note listing the steps in Note.
type PlanResult struct {
	Call *cascade.PlannerCall
	Ref  *WorkRef
	Note string
}

// askPlanner asks the planner for the turn (nil when the message names
// its agent or no plan started, as with a service built without a
// planner: the turn is dispatched as usual).
// A planner that fails is logged and the turn goes on: a plan is never
// what makes a message fail.
func (s *Service) askPlanner(ctx context.Context, teamID string, routed cascade.Plan, th thread, user Message) (cascade.Plan, *PlanResult) {
	d := routed.Decision()
	if d.Reason == routing.ReasonMention {
		return routed, nil
	}
	lead := th.conv.CurrentAgent
	if lead == "" {
		lead = th.def
	}
	pr, err := s.planner.Plan(ctx, PlanRequest{TeamID: teamID, ConversationID: user.ConversationID, Lead: lead, Message: user.Content,
		Agents: th.active, Scores: d.Scores, Threshold: d.Threshold})
	if err != nil {
		s.log.WarnContext(ctx, "the planner failed; the message is dispatched as usual", "error", err.Error())
		return routed, nil
	}
	if pr.Call == nil {
		return routed, nil
	}
	routed = routed.WithPlanner(pr.Call)
	if pr.Ref == nil {
		return routed, nil
	}
	return routed, &pr
}

// planReply is the turn of a message that started a plan: the lead's
// note with the plan among its pending work; the answer is posted into
// the conversation when the plan ends (result_of the plan).
func (s *Service) planReply(d cascade.Decision, user Message, pr *PlanResult) outcome {
	m := Message{
		ID: ids.New("msg"), ConversationID: user.ConversationID, Role: AuthorAssistant, Agent: pr.Ref.Agent, Content: pr.Note,
		CreatedAt: time.Now().UTC(), ReplyTo: user.ID, DecisionID: d.ID, Strategy: "plan", Pending: []WorkRef{*pr.Ref},
		Query: user.Content,
	}
	return outcome{reply: &m, answeredBy: []string{pr.Ref.Agent}, latency: map[string]float64{}}
}
