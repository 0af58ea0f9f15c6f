package plans

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
)

// Planner is the compound planner of chat turns (conversations.Planner):
// the trigger, then the fast model's select_skill_or_plan, then the plan's
// rules; a valid plan starts, anything else falls back to single dispatch
// with the reason in the decision log.
type Planner struct {
	Plans   *Service
	Model   models.Model
	ModelID string
	// Timeout bounds the planner's call (0: DefaultTimeout).
	Timeout time.Duration
	// Packs lists the team's own tool packs (its MCP packs), which a
	// step may add besides the built-in ones; nil offers the built-in
	// packs only.
	Packs PackLister
}

// PackLister lists a team's own tool packs (toolpacks.Registry).
type PackLister interface {
	List(ctx context.Context, teamID string) ([]toolpacks.MCPPack, error)
}

// DefaultTimeout bounds the planner's model call: a turn that waits longer
// is dispatched as usual.
const DefaultTimeout = 8 * time.Second

var _ conversations.Planner = (*Planner)(nil)

// Plan implements conversations.Planner.
func (p *Planner) Plan(ctx context.Context, in conversations.PlanRequest) (conversations.PlanResult, error) {
	var scored []Confident
	for _, s := range in.Scores {
		scored = append(scored, Confident{Agent: s.AgentSlug, Score: s.SkillMatch})
	}
	fire, why := Trigger(in.Message, scored, in.Threshold)
	if !fire {
		return conversations.PlanResult{}, nil
	}
	skills, known := catalog(in)
	if p.Packs != nil {
		// A team's pack that cannot be listed now is not offered: the
		// plan goes on with the built-in ones.
		if own, err := p.Packs.List(ctx, in.TeamID); err == nil {
			for _, r := range own {
				known.Packs = append(known.Packs, r.Name)
			}
		}
	}
	call := &cascade.PlannerCall{Trigger: why, Model: p.ModelID}
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	start := time.Now()
	resp, err := p.Model.Converse(cctx, PlannerRequest(in.TeamID, in.ConversationID, in.Message, p.ModelID, skills, known))
	cancel()
	call.LatencyMS = float64(time.Since(start).Microseconds()) / 1000
	if resp.ModelID != "" {
		call.Model = resp.ModelID
	}
	call.InputTokens, call.OutputTokens = resp.InputTokens, resp.OutputTokens
	call.CostUSD = models.Cost(call.Model, resp.InputTokens, resp.OutputTokens)
	fallback := func(reason string) (conversations.PlanResult, error) {
		call.Outcome, call.Reason = cascade.PlannerFallback, reason
		return conversations.PlanResult{Call: call}, nil
	}
	if err != nil {
		return fallback("the planner's call failed: " + err.Error())
	}
	plan, err := ParsePlan(resp)
	if err != nil {
		return fallback(err.Error())
	}
	if !plan.IsCompound {
		call.Outcome = cascade.PlannerSingle
		return conversations.PlanResult{Call: call}, nil
	}
	call.Steps = len(plan.Steps)
	if err := plan.Validate(known); err != nil {
		return fallback(err.Error())
	}
	known.Resolve(&plan)
	started, err := p.Plans.Start(ctx, in.TeamID, in.ConversationID, in.Lead, in.Message, why, plan)
	if err != nil {
		return fallback("the plan could not start: " + err.Error())
	}
	call.Outcome, call.PlanID = cascade.PlannerPlanned, started.ID
	return conversations.PlanResult{Call: call, Ref: &conversations.WorkRef{Type: "plan", ID: started.ID, Status: string(started.Status), Agent: in.Lead},
		Note: note(started)}, nil
}

// catalog is what the team's plans may name: its active agents' skills
// that users may reach (internal-only skills are how agents reach each
// other), the report types some skill of the team writes (report:<type>,
// written by that skill's agent, the first by slug), and the tool packs a
// step may add. Sessions are not step targets, so a plan naming one falls
// back (saying so).
func catalog(in conversations.PlanRequest) ([]Skill, Known) {
	known := Known{Skills: map[string]bool{}, Packs: toolpacks.Names(), Writers: map[string]string{}, Kinds: map[string]string{}}
	var skills []Skill
	agentsBySlug := slices.Clone(in.Agents)
	slices.SortFunc(agentsBySlug, func(a, b agents.Agent) int { return strings.Compare(a.Slug, b.Slug) })
	for _, a := range agentsBySlug {
		for _, s := range a.Skills {
			if s.InternalOnly {
				continue
			}
			t := a.Slug + "/" + s.Name
			known.Skills[t] = true
			skills = append(skills, Skill{Target: t, Description: s.Description})
			if typ, target, ok := agents.ParseKind(s.Kind); ok && typ == agents.KindReport {
				known.Kinds[t] = s.Kind
				if known.Writers[target] == "" {
					known.Writers[target] = a.Slug
					known.Reports = append(known.Reports, target)
				}
			}
		}
	}
	slices.SortFunc(skills, func(a, b Skill) int { return strings.Compare(a.Target, b.Target) })
	slices.Sort(known.Reports)
	return skills, known
}

// note is the lead's reply that starts a plan: the steps, each with its
// agent, and where the answer will come.
func note(p Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "This needs %d steps; I have asked my colleagues:\n", len(p.Steps))
	for _, s := range p.Steps {
		after := ""
		if len(s.DependsOn) > 0 {
			ds := make([]string, len(s.DependsOn))
			for i, d := range s.DependsOn {
				ds[i] = fmt.Sprint(d)
			}
			after = " (after step " + strings.Join(ds, ", ") + ")"
		}
		fmt.Fprintf(&b, "%d. @%s: %s%s\n", s.StepID, s.Agent, oneLine(s.SubQuery), after)
	}
	b.WriteString("I will post the combined answer here when they are done (plan " + p.ID + ").")
	return b.String()
}
