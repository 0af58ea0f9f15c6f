package prompts_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/team/prompts"
)

func TestTheSkillPromptIsClipped(t *testing.T) {
	assert.Empty(t, prompts.Skill(agents.Skill{Name: "review", SystemPrompt: "  "}))
	got := prompts.Skill(agents.Skill{Name: "review", SystemPrompt: strings.Repeat("x", 2*agents.MaxSystemPrompt)})
	assert.True(t, strings.HasPrefix(got, `You were chosen for your skill "review". `))
	assert.LessOrEqual(t, utf8.RuneCountInString(got), agents.MaxSystemPrompt+60)
}

// Each loader's block is bounded in entries and characters, so one cannot
// crowd out the others.
func TestLoaderBlocksAreBounded(t *testing.T) {
	var c prompts.SkillContext
	for i := range 30 {
		c.Memories = append(c.Memories, memory.Memory{Content: fmt.Sprintf("memory %d %s", i, strings.Repeat("y", 300))})
	}
	c.Conversation = []string{"Title: T"}
	out := c.String()
	mem, rest, _ := strings.Cut(out, "This conversation:")
	assert.LessOrEqual(t, utf8.RuneCountInString(mem), prompts.LoaderRunes+1)
	assert.Contains(t, mem, "memory 0 ")
	assert.NotContains(t, mem, "memory 10 ")
	assert.Equal(t, "\n- Title: T\n", rest)
	assert.Empty(t, prompts.SkillContext{}.String())
}

// An open task is listed with what the open_tasks loader shows of it.
func TestAnOpenTaskIsListedWithItsStatusAndPriority(t *testing.T) {
	c := prompts.SkillContext{Tasks: []prompts.OpenTask{{ID: "task_1", Title: "Fix the parser", Status: "queued", Priority: "high"}}}
	assert.Equal(t, "Your open tasks:\n- [queued] Fix the parser (high, task task_1)\n", c.String())
}
