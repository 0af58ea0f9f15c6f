package prompts

import (
	"fmt"
	"strings"

	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/memory"
)

// Bounds of a skill's part of a system prompt (characters): its system
// prompt (agents.MaxSystemPrompt, clipped again for skills stored before
// the bound) and each context loader's block, so one loader cannot crowd
// out the others or the conversation.
const (
	SkillPromptRunes = agents.MaxSystemPrompt
	LoaderRunes      = 1200
	// LoaderItems bounds the entries of a loader's list (memories, tasks,
	// colleagues).
	LoaderItems = 10
)

// Skill is what an agent chosen because of skill sk is told: which skill
// chose it and the skill's system prompt, clipped; empty when the skill
// has no system prompt.
func Skill(sk agents.Skill) string {
	p := strings.TrimSpace(sk.SystemPrompt)
	if p == "" {
		return ""
	}
	return fmt.Sprintf("You were chosen for your skill %q. %s\n", sk.Name, clip.Clip(p, SkillPromptRunes))
}

// SkillContext is what a skill's context loaders found (agents.ContextLoaders);
// a nil or empty part writes nothing.
type SkillContext struct {
	// Memories: the agent's most recent memories, newest first.
	Memories []memory.Memory
	// Conversation: the conversation's title, participants and last
	// handoff's summary, as lines.
	Conversation []string
	// Tasks: the agent's unfinished tasks, newest first.
	Tasks []OpenTask
	// Roster: the team's other active agents.
	Roster []agents.Agent
}

// OpenTask is an unfinished task as the open_tasks loader prints it: the
// fields of the work wing's task it shows. The team wing comes before the
// work wing, so prompts has its own type and the wire layer, where the two
// meet, converts the tasks it lists into it.
type OpenTask struct {
	ID    string
	Title string
	// Status and Priority are the task's, as the task API spells them
	// (queued, running, blocked; low, normal, high, urgent).
	Status   string
	Priority string
}

// String is the loaders' part of the system prompt, each block under its
// heading and within LoaderRunes.
func (c SkillContext) String() string {
	var b strings.Builder
	block := func(title string, lines []string) {
		if len(lines) == 0 {
			return
		}
		if len(lines) > LoaderItems {
			lines = append(lines[:LoaderItems:LoaderItems], fmt.Sprintf("(+%d more)", len(lines)-LoaderItems))
		}
		b.WriteString(clip.Clip(title+":\n- "+strings.Join(lines, "\n- "), LoaderRunes) + "\n")
	}
	var mem []string
	for _, m := range c.Memories {
		mem = append(mem, clip.Clip(m.Content, 200))
	}
	block("Your recent memories (newest first)", mem)
	block("This conversation", c.Conversation)
	var open []string
	for _, t := range c.Tasks {
		open = append(open, fmt.Sprintf("[%s] %s (%s, task %s)", t.Status, clip.Clip(t.Title, 120), t.Priority, t.ID))
	}
	block("Your open tasks", open)
	var roster []string
	for _, a := range c.Roster {
		var skills []string
		for _, sk := range a.Skills {
			if !sk.InternalOnly {
				skills = append(skills, sk.Name)
			}
		}
		roster = append(roster, fmt.Sprintf("@%s (%s): %s", a.Slug, a.Name, strings.Join(skills, ", ")))
	}
	block("Your team", roster)
	return b.String()
}
