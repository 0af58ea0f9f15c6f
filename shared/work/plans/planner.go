package plans

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/conclave-ai/conclave/shared/models"
)

// ToolName is the tool the planner answers with (seed 003's
// llm_select_skill_or_plan): a selection, or an execution plan.
const ToolName = "select_skill_or_plan"

// MaxTokens bounds the planner's answer: a plan of MaxSteps short steps.
const MaxTokens = 800

// ErrInvalidPlan is a planner answer that cannot be read; the message is
// dispatched to the best single skill.
var ErrInvalidPlan = errors.New("invalid planner answer")

// Skill is a skill the planner may name: its target ("agent/skill") and
// what it covers.
type Skill struct {
	Target      string
	Description string
}

// PlannerRequest is the fast model's request for message: the team's
// skills and the other targets in the system prompt, the message as the
// user's, and ToolName as the only tool.
func PlannerRequest(teamID, conversationID, message, modelID string, skills []Skill, k Known) models.Request {
	var b strings.Builder
	b.WriteString("You decide whether a user's message needs one skill or a short plan of several. " +
		"A plan composes whole skills (never parts of one), has at most 4 steps, and a step may depend on earlier ones, " +
		"whose results it receives. Most messages need one skill: then answer is_compound false. " +
		"Answer only by calling the " + ToolName + " tool once.\n\nSkills (target: what it covers):\n")
	for _, s := range skills {
		fmt.Fprintf(&b, "- %s: %s\n", s.Target, strings.Join(strings.Fields(s.Description), " "))
	}
	if len(k.Reports) > 0 {
		fmt.Fprintf(&b, "\nReports (target report:<type>): %s\n", strings.Join(k.Reports, ", "))
	}
	if len(k.Patterns) > 0 {
		fmt.Fprintf(&b, "Collaboration sessions (target session:<pattern>): %s\n", strings.Join(k.Patterns, ", "))
	}
	if len(k.Packs) > 0 {
		fmt.Fprintf(&b, "Tool packs a step may add: %s\n", strings.Join(k.Packs, ", "))
	}
	return models.Request{
		ModelID: modelID, System: b.String(), MaxTokens: MaxTokens,
		Messages: []models.Message{{Role: "user", Content: message}},
		Tools:    []models.Tool{Tool()},
		// The planner's call is the system's, not an agent's.
		Metadata: map[string]string{models.MetadataTeamID: teamID, models.MetadataConversationID: conversationID},
	}
}

// Tool is the planner's tool: the seed's ExecutionPlan as its input.
func Tool() models.Tool {
	ints := map[string]any{"type": "array", "items": map[string]any{"type": "integer"}}
	strs := map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
	return models.Tool{Name: ToolName, Description: "Select one skill (is_compound false) or give a plan of 2 to 4 steps.",
		Schema: map[string]any{"type": "object", "required": []any{"is_compound", "steps", "reasoning"}, "additionalProperties": false,
			"properties": map[string]any{
				"is_compound": map[string]any{"type": "boolean", "description": "true when the message needs several skills"},
				"reasoning":   map[string]any{"type": "string", "description": "one sentence: why this plan, or why one skill"},
				"steps": map[string]any{"type": "array", "maxItems": MaxSteps, "description": "the plan's steps (empty when not compound)",
					"items": map[string]any{"type": "object", "required": []any{"step_id", "target", "sub_query", "depends_on"}, "additionalProperties": false,
						"properties": map[string]any{
							"step_id":      map[string]any{"type": "integer", "minimum": 1},
							"target":       map[string]any{"type": "string", "description": "agent/skill, report:<type> or session:<pattern>"},
							"sub_query":    map[string]any{"type": "string", "description": "what this step is asked, on its own"},
							"depends_on":   ints,
							"context_keys": strs,
							"tool_packs":   strs,
						}}},
			}}}
}

// ParsePlan reads the planner's call in resp (ErrInvalidPlan, wrapped,
// when there is none or its input is not a plan).
func ParsePlan(resp models.Response) (ExecutionPlan, error) {
	for _, c := range resp.ToolCalls {
		if c.Name != ToolName {
			continue
		}
		var p ExecutionPlan
		dec := json.NewDecoder(strings.NewReader(c.Input))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return ExecutionPlan{}, fmt.Errorf("%w: %s input: %v", ErrInvalidPlan, ToolName, err)
		}
		return p, nil
	}
	return ExecutionPlan{}, fmt.Errorf("%w: the model did not call %s", ErrInvalidPlan, ToolName)
}
