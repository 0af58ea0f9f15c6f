package localmodel

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/conclave-ai/conclave/shared/models"
)

// plannerTool is the compound planner's tool (shared/work/plans).
const plannerTool = "select_skill_or_plan"

// Planner markers: the local model's planner answers with the plan written
// between PlanOpen and PlanClose in the user's message (the JSON of
// shared/work/plans.ExecutionPlan, as a real model would produce it), so a test
// drives every path (a valid plan, a cycle, five steps, a bad target,
// garbage). A marked plan wins over everything below.
//
// Without them it plans as a model reading the message would: a message
// whose clauses follow one another (sequencingRE: "X, then Y", "first X
// … then Y", "X; after that Y", …) is split into them, and each clause
// gets the skill of the prompt's list whose target and description share
// the most words with it (closest, the router's match). A clause that
// shares none joins the step before it (one before every step joins the
// first step). Two steps or more make a plan, each depending on the one
// before (a chain: a clause said after another is done after it); fewer
// answer a single intent, as does a message without sequencing words.
const (
	PlanOpen  = "[[plan]]"
	PlanClose = "[[/plan]]"
)

// sequencingRE matches what separates the clauses of a sequenced message:
// a semicolon, "then" (with "and" or a comma before it), "after that",
// "afterwards", "followed by", "once that is done", and "first", "next"
// or "finally" where a clause begins. It is wider than the planner's
// trigger (plans.Trigger), which decides whether the model is asked.
var sequencingRE = regexp.MustCompile(`(?i)\s*(?:;|\b(?:and\s+)?then\b|\bafter that\b|\bafterwards\b|\bfollowed by\b|` +
	`\bonce (?:that|this|it)(?:'s|’s| is) (?:done|ready|finished)\b|(?:^|[.,:]|\band\b)\s*(?:first|next|finally)\b)[\s,:]*`)

// skillLineRE reads one skill of the planner's prompt: "- agent/skill: what it covers".
var skillLineRE = regexp.MustCompile(`(?m)^- ([^\s/:]+/[^\s:]+): (.*)$`)

// planStep is a step of the planner tool's input (plans.Step's JSON).
type planStep struct {
	StepID    int    `json:"step_id"`
	Target    string `json:"target"`
	SubQuery  string `json:"sub_query"`
	DependsOn []int  `json:"depends_on"`
}

// plannerAnswer answers a request offering the planner's tool.
func plannerAnswer(req models.Request, resp models.Response) models.Response {
	q := lastUser(req)
	input := `{"is_compound":false,"steps":[],"reasoning":"one skill covers the message"}`
	if _, rest, ok := strings.Cut(q, PlanOpen); ok {
		if plan, _, ok := strings.Cut(rest, PlanClose); ok {
			input = strings.TrimSpace(plan)
		}
	} else if steps := sequencedPlan(q, req.System); len(steps) >= 2 {
		targets := make([]string, len(steps))
		for i, s := range steps {
			targets[i] = s.Target
		}
		raw, _ := json.Marshal(map[string]any{"is_compound": true, "steps": steps,
			"reasoning": fmt.Sprintf("%d clauses in sequence: %s", len(steps), strings.Join(targets, ", then "))})
		input = string(raw)
	}
	resp.ToolCalls = []models.ToolCall{{ID: "plan-1", Name: plannerTool, Input: input}}
	resp.OutputTokens = models.EstimateTokens(input)
	return resp
}

// sequencedPlan is the chain of steps of message's clauses, each given
// the skill of system's list it shares the most words with; nil for a
// message of one clause.
func sequencedPlan(message, system string) []planStep {
	var clauses []string
	for _, c := range sequencingRE.Split(message, -1) {
		if c = strings.Trim(c, " \t\r\n,.;:"); c != "" {
			clauses = append(clauses, c)
		}
	}
	if len(clauses) < 2 {
		return nil
	}
	var targets, texts []string
	for _, m := range skillLineRE.FindAllStringSubmatch(system, -1) {
		targets = append(targets, m[1])
		texts = append(texts, m[1]+" "+m[2])
	}
	var steps []planStep
	pending := "" // clauses sharing no word, before the first step
	for _, c := range clauses {
		best, shared := closest(c, texts)
		switch {
		case len(shared) > 0:
			if pending != "" {
				c, pending = pending+", then "+c, ""
			}
			deps := []int{}
			if n := len(steps); n > 0 {
				deps = []int{n}
			}
			steps = append(steps, planStep{StepID: len(steps) + 1, Target: targets[best], SubQuery: c, DependsOn: deps})
		case len(steps) > 0:
			steps[len(steps)-1].SubQuery += ", then " + c
		case pending != "":
			pending += ", then " + c
		default:
			pending = c
		}
	}
	return steps
}
