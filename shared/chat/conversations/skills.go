package conversations

import (
	"slices"
	"strings"

	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/prompts"
)

// chosenSkill is the skill that made the plan choose agent a (the
// router's best match for it), if one did.
func (p plan) chosenSkill(a agents.Agent) (agents.Skill, bool) {
	name, ok := p.Skills[a.Slug]
	if !ok {
		return agents.Skill{}, false
	}
	for _, sk := range a.Skills {
		if sk.Name == name {
			return sk, true
		}
	}
	return agents.Skill{}, false
}

// skillPrompt is what skill sk adds to its agent's system prompt: its
// system prompt, then what its context loaders found (the reads among
// them are pc's: a loader whose read failed, or whose source is not
// wired, adds nothing, and the agent answers without it, as it does
// without its memory context).
func skillPrompt(r *run, a agents.Agent, sk agents.Skill, pc PromptContext) string {
	out := prompts.Skill(sk)
	if len(sk.ContextLoaders) == 0 {
		return out
	}
	var c prompts.SkillContext
	for _, l := range sk.ContextLoaders {
		switch l {
		case agents.LoaderRecentMemories:
			c.Memories = pc.RecentMemories
		case agents.LoaderConversationSummary:
			c.Conversation = conversationSummary(r.p.conv)
		case agents.LoaderOpenTasks:
			c.Tasks = pc.OpenTasks
		case agents.LoaderTeamRoster:
			c.Roster = roster(r.byslug, a.Slug)
		}
	}
	return out + c.String()
}

// conversationSummary is the conversation as the turn read it: its
// title, who takes part, and the last handoff's summary.
func conversationSummary(c Conversation) []string {
	var out []string
	if c.Title != "" {
		out = append(out, "Title: "+c.Title)
	}
	var who []string
	for _, p := range c.Participants {
		if p.LeftAt == nil {
			who = append(who, "@"+p.Agent+" ("+p.Role+")")
		}
	}
	if len(who) > 0 {
		out = append(out, "Participants: "+strings.Join(who, ", "))
	}
	if h := c.LastHandoff; h != nil {
		out = append(out, "Last handoff: @"+h.From+" to @"+h.To+" ("+h.Reason+"). "+h.ContextSummary)
	}
	return out
}

// roster is every active agent of the team but self, by slug (the turn
// read them: no read of its own).
func roster(byslug map[string]agents.Agent, self string) []agents.Agent {
	var out []agents.Agent
	for slug, a := range byslug {
		if slug != self {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(x, y agents.Agent) int { return strings.Compare(x.Slug, y.Slug) })
	return out
}
