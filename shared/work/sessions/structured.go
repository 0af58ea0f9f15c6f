package sessions

import (
	"fmt"
	"strings"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// The structured answers: a reviewer's verdict, a voter's vote and the
// lead's plan are tool calls with a JSON schema, parsed and validated.
const (
	ToolReview = "submit_review"
	ToolVote   = "submit_vote"
	ToolPlan   = "submit_plan"
)

func taxonomy() []any {
	out := make([]any, len(MessageTypes))
	for i, t := range MessageTypes {
		out[i] = string(t)
	}
	return out
}

// reviewTool is a reviewer's structured verdict.
func reviewTool() *models.Tool {
	return &models.Tool{Name: ToolReview, Description: "Submit your review of the current work: approve it, or request changes listing the specific issues.",
		Schema: map[string]any{"type": "object", "required": []any{"verdict", "summary"}, "properties": map[string]any{
			"verdict":      map[string]any{"type": "string", "enum": []any{"approve", "request_changes"}},
			"issues":       map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"summary":      map[string]any{"type": "string"},
			"message_type": map[string]any{"type": "string", "enum": taxonomy(), "description": "optional: the protocol message type of your answer"},
		}}}
}

// voteTool is a participant's vote in a consensus.
func voteTool() *models.Tool {
	return &models.Tool{Name: ToolVote, Description: "Submit your vote on the question with your confidence and reasoning.",
		Schema: map[string]any{"type": "object", "required": []any{"vote", "confidence", "reasoning"}, "properties": map[string]any{
			"vote":       map[string]any{"type": "string", "enum": []any{"approve", "reject", "abstain"}},
			"confidence": map[string]any{"type": "number", "minimum": 0, "maximum": 1},
			"reasoning":  map[string]any{"type": "string"},
		}}}
}

// planTool is the lead's assignment of one sub-goal per worker.
func planTool(workers []string) *models.Tool {
	enum := make([]any, len(workers))
	for i, w := range workers {
		enum[i] = w
	}
	return &models.Tool{Name: ToolPlan, Description: "Assign one sub-goal to each worker.",
		Schema: map[string]any{"type": "object", "required": []any{"assignments"}, "properties": map[string]any{
			"assignments": map[string]any{"type": "array", "items": map[string]any{"type": "object", "required": []any{"agent", "sub_goal"},
				"properties": map[string]any{"agent": map[string]any{"type": "string", "enum": enum}, "sub_goal": map[string]any{"type": "string"}}}},
		}}}
}

// structured validates a tool answer and fills msg from it.
func structured(t turn, msg Message, data map[string]any) (Message, error) {
	invalid := func(format string, args ...any) (Message, error) {
		return msg, workflow.ModelFailed{Msg: t.Agent + "'s " + t.Tool.Name + ": " + fmt.Sprintf(format, args...)}
	}
	msg.Data = data
	switch t.Tool.Name {
	case ToolReview:
		verdict, _ := data["verdict"].(string)
		summary, _ := data["summary"].(string)
		issues := strs(data["issues"])
		switch verdict {
		case "approve":
			msg.Type, msg.Status = MsgApproval, MsgAccepted
		case "request_changes":
			msg.Type, msg.Status = MsgCritique, MsgNeedsRevision
			if len(issues) == 0 {
				return invalid("request_changes needs at least one specific issue")
			}
			if t.MaxRounds > 0 && t.Round >= t.MaxRounds {
				msg.Type, msg.Status = MsgRejection, MsgRejected
			}
		default:
			return invalid("verdict must be approve or request_changes")
		}
		if mt, ok := data["message_type"].(string); ok && mt != "" {
			msg.Type = MessageType(mt) // the agent's own label is what the protocol checks
		}
		msg.Content = strings.TrimSpace(summary + "\n" + bullet(issues))
	case ToolVote:
		vote, _ := data["vote"].(string)
		conf, ok := data["confidence"].(float64)
		reason, _ := data["reasoning"].(string)
		if vote != "approve" && vote != "reject" && vote != "abstain" {
			return invalid("vote must be approve, reject or abstain")
		}
		if !ok || conf < 0 || conf > 1 {
			return invalid("confidence must be a number between 0 and 1")
		}
		msg.Type, msg.Content = MsgVote, reason
	case ToolPlan:
		list, _ := data["assignments"].([]any)
		if len(list) == 0 {
			return invalid("assignments are required")
		}
		msg.Type, msg.Content = MsgDelegation, fmt.Sprintf("%d assignments", len(list))
	}
	return msg, nil
}

func strs(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		if s, ok := x.(string); ok && strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}

func bullet(items []string) string {
	var b strings.Builder
	for _, it := range items {
		b.WriteString("- " + it + "\n")
	}
	return strings.TrimSpace(b.String())
}
