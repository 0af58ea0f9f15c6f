// Package plans is the compound query planner of seed 003 (phase 7): the
// shape of an execution plan a fast model proposes for a message that
// needs several skills, the rules a plan must keep before anything runs
// (a DAG of at most MaxSteps steps between skills, never inside one), the
// trigger that decides whether the planner is asked at all, and the
// context bridge that hands each step its predecessors' results. It
// imports no AWS SDK and runs nothing: the plan machine (a Step Functions
// workflow) runs a validated plan as one root task and its steps.
package plans

import (
	"fmt"
	"slices"
	"strings"

	"github.com/conclave-ai/conclave/shared/platform/clip"
)

// MaxSteps caps a plan (seed 003: "cap at 3-4 steps to prevent runaway
// plans"); longer work is a conversation of several turns.
const MaxSteps = 4

// Step is one step of a plan: a target that answers SubQuery once the
// steps it depends on are done.
type Step struct {
	StepID int `json:"step_id"`
	// Target is "agent/skill" (skill names are unique only per agent), or
	// "report:<type>" or "session:<pattern>" (an existing workflow as a
	// step, the seed's subgraphs).
	Target    string `json:"target"`
	SubQuery  string `json:"sub_query"`
	DependsOn []int  `json:"depends_on"`
	// ContextKeys are keys of the results of the steps it depends on to
	// hand it beside their responses (the bridge's step_N_<key>).
	ContextKeys []string `json:"context_keys"`
	// ToolPacks are tool packs the step's agent gets for this step only.
	ToolPacks []string `json:"tool_packs"`

	// writer and report are the step resolved (Known.Resolve): who runs
	// it and, for a report step, the report type. Never the model's.
	writer, report string
}

// ExecutionPlan is what the planner answers (seed 003's ExecutionPlan).
type ExecutionPlan struct {
	IsCompound bool   `json:"is_compound"`
	Steps      []Step `json:"steps"`
	Reasoning  string `json:"reasoning"`
}

// Target kinds.
const (
	KindSkill   = "skill"
	KindReport  = "report"
	KindSession = "session"
)

// ParseTarget splits a target into its kind and parts: for a skill the
// agent and the skill; for a report or a session its type or pattern.
func ParseTarget(t string) (kind, a, b string, err error) {
	t = strings.TrimSpace(t)
	switch {
	case strings.HasPrefix(t, "report:"):
		return KindReport, strings.TrimPrefix(t, "report:"), "", nonEmpty(t, strings.TrimPrefix(t, "report:"))
	case strings.HasPrefix(t, "session:"):
		return KindSession, strings.TrimPrefix(t, "session:"), "", nonEmpty(t, strings.TrimPrefix(t, "session:"))
	}
	parts := strings.Split(t, "/")
	switch {
	case len(parts) == 2 && parts[0] != "" && parts[1] != "":
		return KindSkill, parts[0], parts[1], nil
	case len(parts) > 2:
		// agent/skill/part: a step inside a skill. The planner composes
		// between skills, never inside one (seed 003, key decision 1).
		return "", "", "", fmt.Errorf("step target %q reaches inside a skill; a step is a whole skill", t)
	}
	return "", "", "", fmt.Errorf("step target %q is not agent/skill, report:<type> or session:<pattern>", t)
}

func nonEmpty(t, v string) error {
	if v == "" {
		return fmt.Errorf("step target %q names no type", t)
	}
	return nil
}

// Known is what a plan may name: the team's skills ("agent/skill"), the
// report types, the session patterns and the tool packs.
type Known struct {
	Skills   map[string]bool
	Reports  []string
	Patterns []string
	Packs    []string
	// Writers is who writes a report:<type> step: the agent of the
	// team's skill of kind report:<type> (the first by slug).
	Writers map[string]string
	// Kinds are the skills' kinds by target ("agent/skill" →
	// "report:<type>"): a step naming a report skill requests that report
	// from its agent, as a chat turn routed to the skill does.
	Kinds map[string]string
}

// Resolve fills in who runs each step of a validated plan and, for a
// report step, its type.
func (k Known) Resolve(p *ExecutionPlan) {
	for i := range p.Steps {
		st := &p.Steps[i]
		kind, a, b, _ := ParseTarget(st.Target)
		switch {
		case kind == KindReport:
			st.writer, st.report = k.Writers[a], a
		case strings.HasPrefix(k.Kinds[a+"/"+b], "report:"):
			st.writer, st.report = a, strings.TrimPrefix(k.Kinds[a+"/"+b], "report:")
		default:
			st.writer = a
		}
	}
}

// Validate reports why a plan cannot run, or nil: a compound plan of 2 to
// MaxSteps steps with unique ids, known targets and packs, dependencies on
// steps of the plan, and no cycle. Anything else falls back to single
// dispatch on the best skill, with the returned reason in the decision log.
func (p ExecutionPlan) Validate(k Known) error {
	if !p.IsCompound {
		return fmt.Errorf("the planner found a single intent")
	}
	switch n := len(p.Steps); {
	case n < 2:
		return fmt.Errorf("a plan of %d step is no plan", n)
	case n > MaxSteps:
		return fmt.Errorf("a plan of %d steps is over the cap of %d", n, MaxSteps)
	}
	ids := map[int]bool{}
	for _, s := range p.Steps {
		if ids[s.StepID] {
			return fmt.Errorf("step %d appears twice", s.StepID)
		}
		ids[s.StepID] = true
	}
	for _, s := range p.Steps {
		if strings.TrimSpace(s.SubQuery) == "" {
			return fmt.Errorf("step %d has no sub_query", s.StepID)
		}
		if err := k.target(s.Target); err != nil {
			return fmt.Errorf("step %d: %w", s.StepID, err)
		}
		for _, d := range s.DependsOn {
			if d == s.StepID {
				return fmt.Errorf("step %d depends on itself", s.StepID)
			}
			if !ids[d] {
				return fmt.Errorf("step %d depends on step %d, which the plan does not have", s.StepID, d)
			}
		}
		for _, pk := range s.ToolPacks {
			if !slices.Contains(k.Packs, pk) {
				return fmt.Errorf("step %d asks for tool pack %q, which does not exist", s.StepID, pk)
			}
		}
	}
	if _, err := Layers(p.Steps); err != nil {
		return err
	}
	return nil
}

func (k Known) target(t string) error {
	kind, a, b, err := ParseTarget(t)
	if err != nil {
		return err
	}
	switch kind {
	case KindReport:
		if !slices.Contains(k.Reports, a) || k.Writers[a] == "" {
			return fmt.Errorf("report type %q has no writer: no skill of the team is of kind report:%s", a, a)
		}
	case KindSession:
		// A session is a workflow of several agents of its own, with its
		// own budget and rounds; a plan's step is one task under the
		// plan's root. A session is started by a turn of its own
		// (a session:<pattern> skill, start_collaboration).
		return fmt.Errorf("step target %q: a collaboration session is not a plan step (start it from a turn of its own)", t)
	default:
		if !k.Skills[a+"/"+b] {
			return fmt.Errorf("agent %q has no skill %q", a, b)
		}
	}
	return nil
}

// Layers orders the steps for running: each layer's steps depend only on
// steps of earlier layers, so a layer runs in parallel. A cycle is an
// error naming the steps caught in it.
func Layers(steps []Step) ([][]int, error) {
	done := map[int]bool{}
	var out [][]int
	for len(done) < len(steps) {
		var layer []int
		for _, s := range steps {
			if done[s.StepID] {
				continue
			}
			ready := true
			for _, d := range s.DependsOn {
				ready = ready && done[d]
			}
			if ready {
				layer = append(layer, s.StepID)
			}
		}
		if len(layer) == 0 {
			var stuck []string
			for _, s := range steps {
				if !done[s.StepID] {
					stuck = append(stuck, fmt.Sprint(s.StepID))
				}
			}
			return nil, fmt.Errorf("the steps %s depend on each other in a cycle", strings.Join(stuck, ", "))
		}
		slices.Sort(layer)
		for _, id := range layer {
			done[id] = true
		}
		out = append(out, layer)
	}
	return out, nil
}

// Result is what a finished step hands on (the bridge's store_result).
type Result struct {
	Response string
	// Data are the step's structured results by key (a report's
	// sections, a JSON output's fields).
	Data  map[string]string
	Agent string
}

// Bridge builds the context of step from the results of the steps it
// depends on (seed 003's ContextBridge): prior_step_N_response always,
// and step_N_<key> for each requested key a predecessor has. Each value
// is clipped to maxRunes so a step's context fits its token budget.
func Bridge(step Step, results map[int]Result, maxRunes int) map[string]string {
	out := map[string]string{}
	for _, d := range step.DependsOn {
		r, ok := results[d]
		if !ok {
			continue
		}
		out[fmt.Sprintf("prior_step_%d_response", d)] = clip.Clip(r.Response, maxRunes)
		for _, k := range step.ContextKeys {
			if v, ok := r.Data[k]; ok {
				out[fmt.Sprintf("step_%d_%s", d, k)] = clip.Clip(v, maxRunes)
			}
		}
	}
	return out
}

// Dependants returns the steps that depend, directly or through others,
// on step id: they cannot run once it failed (the plan ends partial).
func Dependants(steps []Step, id int) []int {
	bad := map[int]bool{id: true}
	for changed := true; changed; {
		changed = false
		for _, s := range steps {
			if bad[s.StepID] {
				continue
			}
			for _, d := range s.DependsOn {
				if bad[d] {
					bad[s.StepID], changed = true, true
					break
				}
			}
		}
	}
	delete(bad, id)
	var out []int
	for _, s := range steps {
		if bad[s.StepID] {
			out = append(out, s.StepID)
		}
	}
	return out
}
