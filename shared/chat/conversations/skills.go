package conversations

import (
	"context"
	"slices"
	"strings"

	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/team/prompts"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// MemoryLog reads the team's memories newest first: the recent_memories
// loader (memory's store, as the memory context is built from).
type MemoryLog interface {
	RecentMemories(ctx context.Context, teamID string, limit int) ([]memory.Memory, error)
}

// TaskLister lists tasks: the open_tasks loader (the store behind
// GET /v1/tasks).
type TaskLister interface {
	ListTasks(ctx context.Context, teamID string, f tasks.Filter, p paging.Page) ([]tasks.Task, string, error)
}

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
// system prompt, then what its context loaders found. A loader whose read
// fails (or whose source is not wired) is left out and logged: the agent
// answers without it, as it does without its memory context.
func (s *Service) skillPrompt(ctx context.Context, r *run, a agents.Agent, sk agents.Skill) string {
	out := prompts.Skill(sk)
	if len(sk.ContextLoaders) == 0 {
		return out
	}
	teamID := r.p.Decision().TeamID
	var c prompts.SkillContext
	for _, l := range sk.ContextLoaders {
		var err error
		switch l {
		case agents.LoaderRecentMemories:
			c.Memories, err = s.recentMemories(ctx, teamID, a.Slug)
		case agents.LoaderConversationSummary:
			c.Conversation = conversationSummary(r.p.conv)
		case agents.LoaderOpenTasks:
			c.Tasks, err = s.openTasks(ctx, teamID, a.Slug)
		case agents.LoaderTeamRoster:
			c.Roster = roster(r.byslug, a.Slug)
		}
		if err != nil {
			s.log().WarnContext(ctx, "a skill's context loader failed; answering without it", "agent", a.Slug, "skill", sk.Name, "loader", l, "error", err.Error())
		}
	}
	return out + c.String()
}

// recentMemoryScan is how many of the team's newest memories the
// recent_memories loader reads to find the agent's (one Query).
const recentMemoryScan = 50

func (s *Service) recentMemories(ctx context.Context, teamID, agent string) ([]memory.Memory, error) {
	if s.MemoryLog == nil {
		return nil, nil
	}
	all, err := s.MemoryLog.RecentMemories(ctx, teamID, recentMemoryScan)
	if err != nil {
		return nil, err
	}
	var out []memory.Memory
	for _, m := range all {
		if m.VisibleTo(agent) && len(out) < prompts.LoaderItems {
			out = append(out, m)
		}
	}
	return out, nil
}

// openTasks are the agent's unfinished tasks among its newest
// paging.DefaultLimit (one Query).
func (s *Service) openTasks(ctx context.Context, teamID, agent string) ([]tasks.Task, error) {
	if s.Tasks == nil {
		return nil, nil
	}
	list, _, err := s.Tasks.ListTasks(ctx, teamID, tasks.Filter{Assignee: agent}, paging.Page{Limit: paging.DefaultLimit})
	if err != nil {
		return nil, err
	}
	var out []tasks.Task
	for _, t := range list {
		if !t.Status.Terminal() {
			out = append(out, t)
		}
	}
	return out, nil
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
