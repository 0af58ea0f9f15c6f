package localmodel

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/conclave-ai/conclave/shared/models"
)

// overspendTokens is what the overspend script reports per answer: below a
// task's token budget, costly with a priced model id.
const overspendTokens = 3500

var roundRE = regexp.MustCompile(`(?i)round (\d+)`)

// round is the round a session's prompt names ("Review round 2 of 5").
func round(req models.Request) int {
	m := roundRE.FindStringSubmatch(lastUser(req))
	if m == nil {
		for _, msg := range req.Messages {
			if mm := roundRE.FindStringSubmatch(msg.Content); mm != nil {
				m = mm
				break
			}
		}
	}
	if m == nil {
		return 1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// refusals counts the refused answers of this conversation (the session
// tells a participant why its message was refused and asks again).
func refusals(req models.Request) int {
	n := 0
	for _, m := range req.Messages {
		if m.Role == "user" && strings.HasPrefix(m.Content, "Your message was refused") {
			n++
		}
	}
	return n
}

// structuredAnswer answers a request that offers one of the sessions'
// structured tools with a call of that tool, as the script says.
func structuredAnswer(req models.Request, resp models.Response, kind string, n int) (models.Response, bool) {
	var tool models.Tool
	for _, t := range req.Tools {
		if t.Name == "submit_review" || t.Name == "submit_vote" || t.Name == "submit_plan" {
			tool = t
		}
	}
	if tool.Name == "" {
		return resp, false
	}
	r := round(req)
	approve := true
	switch kind {
	case "approve-after":
		approve = r >= n
	case "never-approve", "reject":
		approve = false
	}
	var input map[string]any
	switch tool.Name {
	case "submit_review":
		input = map[string]any{"verdict": "approve", "summary": fmt.Sprintf("Round %d: the work meets the goal.", r)}
		if !approve {
			input = map[string]any{"verdict": "request_changes", "summary": fmt.Sprintf("Round %d: changes needed.", r),
				"issues": []string{"the risks section is too thin", "the next steps lack owners"}}
		}
		if kind == "violate" && refusals(req) < n {
			input["message_type"] = "revision"
		}
	case "submit_vote":
		input = map[string]any{"vote": "approve", "confidence": 0.8, "reasoning": fmt.Sprintf("Round %d: the benefits outweigh the risks.", r)}
		if !approve {
			input = map[string]any{"vote": "reject", "confidence": 0.7, "reasoning": fmt.Sprintf("Round %d: the risks are not addressed.", r)}
		}
	case "submit_plan":
		input = map[string]any{"assignments": plan(tool, lastUser(req))}
	}
	b, _ := json.Marshal(input)
	resp.ToolCalls = []models.ToolCall{{ID: "call-1", Name: tool.Name, Input: string(b)}}
	resp.OutputTokens = models.EstimateTokens(string(b))
	if kind == "overspend" {
		resp.OutputTokens = overspendTokens
	}
	return resp, true
}

// plan assigns one sub-goal per agent the plan tool's schema lists.
func plan(tool models.Tool, goal string) []map[string]any {
	var out []map[string]any
	props, _ := tool.Schema["properties"].(map[string]any)
	asg, _ := props["assignments"].(map[string]any)
	items, _ := asg["items"].(map[string]any)
	iprops, _ := items["properties"].(map[string]any)
	agent, _ := iprops["agent"].(map[string]any)
	enum, _ := agent["enum"].([]any)
	aspects := []string{"research", "risks", "delivery", "costs", "users"}
	for i, a := range enum {
		out = append(out, map[string]any{"agent": a, "sub_goal": fmt.Sprintf("cover the %s side of: %s", aspects[i%len(aspects)], clip(goal, 120))})
	}
	return out
}
