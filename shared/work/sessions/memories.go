package sessions

import (
	"context"
	"strings"

	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/team/prompts"
)

// Memories gives an agent its memory context (memory.Service).
type Memories interface {
	ForAgent(ctx context.Context, teamID, agent string) (memory.Context, error)
}

// system is a stage agent's system prompt: its identity and skills, the
// session's goal and context, and what it remembers (the team's shared
// memories, the user's profile and its own). A memory context that cannot
// be read is left out, not fatal: the stage still runs.
func (s *Service) system(ctx context.Context, ses Session, a agents.Agent) string {
	system := prompts.System(a, prompts.Task{Title: "Collaboration session: " + ses.Goal, Context: ses.Context})
	if s.Memories == nil {
		return system
	}
	mc, err := s.Memories.ForAgent(ctx, ses.TeamID, a.Slug)
	if err != nil {
		s.log().WarnContext(ctx, "memory context unavailable; the stage runs without it", "session_id", ses.ID, "agent", a.Slug, "error", err.Error())
		return system
	}
	var b strings.Builder
	b.WriteString(system)
	for _, sec := range []struct {
		title string
		list  []memory.Memory
	}{{"About the user", mc.UserProfile}, {"What the team knows", mc.Shared}, {"What you remember", mc.Private}} {
		if len(sec.list) == 0 {
			continue
		}
		b.WriteString(sec.title + ":\n")
		for _, m := range sec.list {
			b.WriteString("- " + m.Content + "\n")
		}
	}
	return b.String()
}
