// Package chooser is the tier-0 router model: the cascade.Chooser
// over the models port. It asks the fast model of routing.Tier0 which of
// the gate's candidates should answer a question, with structured output
// through tool use (a choose_agent tool whose JSON Schema enumerates the
// candidates), and parses and validates the call. The prompt lives here so
// that dispatch holds none; this package links no provider client.
package chooser

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
)

// ToolName is the tool the model answers with.
const ToolName = "choose_agent"

// MaxTokens bounds the answer: one small tool call.
const MaxTokens = 200

// maxDescription bounds a skill description in the prompt (runes).
const maxDescription = 300

// Chooser asks the tier-0 model. ModelID is routing.TierModels[Tier0].
type Chooser struct {
	Model   models.Model
	ModelID string
}

var _ cascade.Chooser = (*Chooser)(nil)

// New returns the Chooser asking the tier-0 model of tiers (the stage's
// MODEL_TIERS or the defaults) through m.
func New(m models.Model, tiers routing.TierModels) *Chooser {
	id := tiers[routing.Tier0]
	if id == "" {
		id = routing.DefaultTierModels[routing.Tier0]
	}
	return &Chooser{Model: m, ModelID: id}
}

// Choose implements cascade.Chooser.
func (c *Chooser) Choose(ctx context.Context, req cascade.ChoiceRequest) (cascade.Choice, error) {
	resp, err := c.Model.Converse(ctx, Request(req, c.ModelID))
	if err != nil {
		return cascade.Choice{ModelID: c.ModelID}, err
	}
	ch, err := Parse(req, resp)
	ch.ModelID = resp.ModelID
	if ch.ModelID == "" {
		ch.ModelID = c.ModelID
	}
	ch.InputTokens, ch.OutputTokens = resp.InputTokens, resp.OutputTokens
	ch.CostUSD = models.Cost(ch.ModelID, resp.InputTokens, resp.OutputTokens)
	return ch, err
}

// Request is the model request for req: the candidates in the system
// prompt (one line each: "- slug (Name), skill name: description"), the
// question as the user's message, and choose_agent as the only tool.
//
// The models port has no tool choice, so the tool is forced by being the
// only one offered and by the prompt; an answer without the call is
// invalid (and the gate's choice stands).
func Request(req cascade.ChoiceRequest, modelID string) models.Request {
	var b strings.Builder
	b.WriteString("You route a user's message to the one agent of a team best placed to answer it. " +
		"A fast scoring gate could not decide between the candidates below. " +
		"Answer only by calling the " + ToolName + " tool once: the agent, the skill of that agent that fits, " +
		"your confidence from 0 to 1 that it is the right agent, and a one-sentence reason.\n\n" +
		"Candidates (agent (name), skill: what the skill covers):\n")
	for _, c := range req.Candidates {
		fmt.Fprintf(&b, "- %s (%s), skill %s: %s\n", c.Agent, c.Name, c.Skill, clip.Clip(oneLine(c.Description), maxDescription))
	}
	if req.CurrentAgent != "" {
		fmt.Fprintf(&b, "\nThe conversation's current agent is %s. Keep it when the message follows up on the conversation; "+
			"choose another agent only when that agent is clearly better placed.\n", req.CurrentAgent)
	}
	return models.Request{
		ModelID:   modelID,
		System:    b.String(),
		Messages:  []models.Message{{Role: "user", Content: req.Question}},
		Tools:     []models.Tool{Tool(req.Candidates)},
		MaxTokens: MaxTokens,
		// For no agent: the call is the system's (budget usage).
		Metadata: map[string]string{models.MetadataTeamID: req.TeamID, models.MetadataConversationID: req.ConversationID},
	}
}

// Tool is choose_agent for these candidates: agent is one of their slugs.
func Tool(cands []cascade.Candidate) models.Tool {
	slugs := make([]any, len(cands))
	for i, c := range cands {
		slugs[i] = c.Agent
	}
	return models.Tool{Name: ToolName, Description: "Choose the agent that answers the user's message.",
		Schema: map[string]any{"type": "object", "required": []any{"agent", "skill", "confidence", "reason"}, "additionalProperties": false,
			"properties": map[string]any{
				"agent":      map[string]any{"type": "string", "enum": slugs, "description": "the chosen agent's slug"},
				"skill":      map[string]any{"type": "string", "description": "the chosen agent's skill that fits the message"},
				"confidence": map[string]any{"type": "number", "minimum": 0, "maximum": 1, "description": "how sure you are that this agent is the right one"},
				"reason":     map[string]any{"type": "string", "description": "one sentence"},
			}}}
}

// input is choose_agent's input. Confidence is a pointer so a missing one
// is told from 0.
type input struct {
	Agent      string   `json:"agent"`
	Skill      string   `json:"skill"`
	Confidence *float64 `json:"confidence"`
	Reason     string   `json:"reason"`
}

// Parse reads the choose_agent call of resp and validates it against req
// (cascade.ChoiceRequest.Check). Returns cascade.ErrInvalidChoice
// (wrapped, saying why) when there is no such call, its input does not
// parse or the choice is not valid.
func Parse(req cascade.ChoiceRequest, resp models.Response) (cascade.Choice, error) {
	var call *models.ToolCall
	for i := range resp.ToolCalls {
		if resp.ToolCalls[i].Name == ToolName {
			call = &resp.ToolCalls[i]
			break
		}
	}
	if call == nil {
		return cascade.Choice{}, fmt.Errorf("%w: the model did not call %s", cascade.ErrInvalidChoice, ToolName)
	}
	var in input
	if err := json.Unmarshal([]byte(call.Input), &in); err != nil {
		return cascade.Choice{}, fmt.Errorf("%w: %s input: %v", cascade.ErrInvalidChoice, ToolName, err)
	}
	if in.Confidence == nil {
		return cascade.Choice{Agent: in.Agent}, fmt.Errorf("%w: no confidence", cascade.ErrInvalidChoice)
	}
	ch := cascade.Choice{Agent: strings.TrimSpace(in.Agent), Skill: strings.TrimSpace(in.Skill), Confidence: *in.Confidence, Reason: clip.Clip(oneLine(in.Reason), 300)}
	return ch, req.Check(ch)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
