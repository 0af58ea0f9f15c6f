package localmodel

import (
	"strings"

	"github.com/conclave-ai/conclave/shared/models"
)

// plannerTool is the compound planner's tool (shared/work/plans).
const plannerTool = "select_skill_or_plan"

// Planner markers: the local model's planner answers with the plan written
// between PlanOpen and PlanClose in the user's message (the JSON of
// shared/work/plans.ExecutionPlan, as a real model would produce it), so a test
// drives every path (a valid plan, a cycle, five steps, a bad target,
// garbage); without them it answers a single intent.
const (
	PlanOpen  = "[[plan]]"
	PlanClose = "[[/plan]]"
)

// plannerAnswer answers a request offering the planner's tool.
func plannerAnswer(req models.Request, resp models.Response) models.Response {
	q := lastUser(req)
	input := `{"is_compound":false,"steps":[],"reasoning":"one skill covers the message"}`
	if _, rest, ok := strings.Cut(q, PlanOpen); ok {
		if plan, _, ok := strings.Cut(rest, PlanClose); ok {
			input = strings.TrimSpace(plan)
		}
	}
	resp.ToolCalls = []models.ToolCall{{ID: "plan-1", Name: plannerTool, Input: input}}
	resp.OutputTokens = models.EstimateTokens(input)
	return resp
}
