package routing

import (
	"regexp"
	"strings"

	"github.com/conclave-ai/conclave/shared/team/agents"
)

// Reasons a decision gives.
const (
	ReasonMention  = "user_mention"
	ReasonSkill    = "skill_match"
	ReasonCurrent  = "current_agent"
	ReasonDefault  = "default"
	ReasonDirect   = "direct"
	ReasonGate     = "expert_gate"
	ReasonFallback = "fallback"
	ReasonHandoff  = "handoff"
	// ReasonGreeting: the greeting gate decided (small talk stays with
	// the conversation's agent, or goes to the default one).
	ReasonGreeting = "greeting"
)

// MinSkillMatch is the skill match the baseline router needs to keep the
// current agent or to switch to another one.
const MinSkillMatch = 0.35

var (
	mentionRE = regexp.MustCompile(`(?:^|[^\w@])@([a-z][a-z0-9-]{1,38}[a-z0-9])\b`)
	// "go back to Kyra", "switch to Luke", "let Dana answer", "ask Sage".
	phraseRE = regexp.MustCompile(`(?i)\b(?:go back to|back to|switch (?:back )?to|hand (?:it |this )?(?:back )?(?:over )?to|talk to|let me talk to|ask|let)\s+([A-Za-z][\w-]*)`)
)

// Mention returns the active agent a message addresses: an @slug (the
// first one naming an active agent), or a phrase such as "go back to Kyra"
// naming one by name or slug. "" when none.
func Mention(text string, active []agents.Agent) string {
	bySlug := map[string]string{}
	byName := map[string]string{}
	for _, a := range active {
		bySlug[a.Slug] = a.Slug
		byName[strings.ToLower(a.Name)] = a.Slug
	}
	for _, m := range mentionRE.FindAllStringSubmatch(strings.ToLower(text), -1) {
		if s, ok := bySlug[m[1]]; ok {
			return s
		}
	}
	for _, m := range phraseRE.FindAllStringSubmatch(text, -1) {
		w := strings.ToLower(m[1])
		if s, ok := bySlug[w]; ok {
			return s
		}
		if s, ok := byName[w]; ok {
			return s
		}
	}
	return ""
}

// Decision is the baseline router's choice.
type Decision struct {
	Agent          string   `json:"agent"`
	Confidence     float64  `json:"confidence"`
	Reason         string   `json:"reason"`
	MatchingSkills []string `json:"matching_skills"`
}

// Route is the baseline AgentRouter: an @mention wins; otherwise the
// current agent stays if its skills match (unless another agent's skill
// explicitly matches and overrides continuity); otherwise the best skill
// match; otherwise the team's default agent.
func (ix *Index) Route(text, current, defaultAgent string) Decision {
	if m := Mention(text, ix.Agents()); m != "" {
		return Decision{Agent: m, Confidence: 1, Reason: ReasonMention, MatchingSkills: []string{}}
	}
	sc := ix.getScratch()
	defer ix.putScratch(sc)
	q := ix.prepare(text, nil, sc)
	ix.scoreSkills(&q, sc)
	defer ix.clearSkills(sc)
	var best, cur *Decision
	override := false
	for ai := range ix.agents {
		a := ix.agents[ai].agent
		score, hits := ix.agentSkills(ai, sc)
		d := Decision{Agent: a.Slug, Confidence: round3(score), Reason: ReasonSkill, MatchingSkills: []string{}}
		for _, h := range hits {
			d.MatchingSkills = append(d.MatchingSkills, h.Name)
			if h.Explicit && h.Override && a.Slug != current {
				override = true
			}
		}
		if a.Slug == current {
			d.Reason = ReasonCurrent
			cur = &d
		}
		if best == nil || d.Confidence > best.Confidence {
			dd := d
			dd.Reason = ReasonSkill
			best = &dd
		}
	}
	if cur != nil && cur.Confidence >= MinSkillMatch && !(override && best.Agent != current) {
		return *cur
	}
	if best != nil && best.Confidence >= MinSkillMatch {
		return *best
	}
	conf := 0.0
	if best != nil {
		conf = best.Confidence
	}
	return Decision{Agent: defaultAgent, Confidence: conf, Reason: ReasonDefault, MatchingSkills: []string{}}
}

// RouteScores is the AgentRouter's rule on the expert gate's scores of a
// message asked for the skill match alone (expertgate.Request.SkillsOnly:
// the team's fitted classifier when it has one, its examples and
// descriptions otherwise), so the AgentRouter ranks as the gate does: an
// agent's calibrated Confidence is its skill match. The current agent
// stays when its confidence reaches min (unless another agent's skill
// explicitly matches and overrides continuity); otherwise the best one at
// min or above; otherwise defaultAgent. The caller handles mentions.
func RouteScores(scores []ExpertScore, current, defaultAgent string, min float64) Decision {
	var best, cur *Decision
	override := false
	for _, sc := range scores {
		d := Decision{Agent: sc.AgentSlug, Confidence: sc.Confidence, Reason: ReasonSkill, MatchingSkills: append([]string{}, sc.MatchingSkills...)}
		if sc.Explicit && sc.Override && sc.AgentSlug != current {
			override = true
		}
		if sc.AgentSlug == current {
			dd := d
			dd.Reason = ReasonCurrent
			cur = &dd
		}
		if best == nil || d.Confidence > best.Confidence {
			best = &d
		}
	}
	if cur != nil && cur.Confidence >= min && !(override && best.Agent != current) {
		return *cur
	}
	if best != nil && best.Confidence >= min {
		return *best
	}
	conf := 0.0
	if best != nil {
		conf = best.Confidence
	}
	return Decision{Agent: defaultAgent, Confidence: conf, Reason: ReasonDefault, MatchingSkills: []string{}}
}
