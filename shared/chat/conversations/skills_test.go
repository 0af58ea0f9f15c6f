package conversations_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/team/prompts"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// storeTasks are the agent's open tasks on the fixture's store, listed as
// the functions' wiring lists them (conversationsfn.Tasks, tested
// there): the unfinished among its newest.
type storeTasks struct{ store *memstore.Store }

func (s storeTasks) OpenTasks(ctx context.Context, teamID, agent string) ([]prompts.OpenTask, error) {
	list, _, err := s.store.ListTasks(ctx, teamID, tasks.Filter{Assignee: agent}, paging.Page{Limit: paging.DefaultLimit})
	var out []prompts.OpenTask
	for _, t := range list {
		if !t.Status.Terminal() {
			out = append(out, prompts.OpenTask{ID: t.ID, Title: t.Title, Status: string(t.Status), Priority: t.Priority})
		}
	}
	return out, err
}

// withSkill replaces luke's code-review skill by one with the execution
// fields edit sets.
func (f *fixture) withSkill(tb testing.TB, edit func(*agents.Skill)) {
	tb.Helper()
	ctx := context.Background()
	a, err := f.store.GetAgent(ctx, team, "luke")
	require.NoError(tb, err)
	edit(&a.Skills[0])
	a.Version++
	require.NoError(tb, f.store.UpdateAgent(ctx, a))
}

// The skill that chose the agent adds its system prompt and what its
// loaders found; an agent chosen otherwise (here, by a mention) is told
// neither.
func TestTheChosenSkillShapesTheSystemPrompt(t *testing.T) {
	f := newFixture(t, collaborationOn)
	ctx := context.Background()
	f.withSkill(t, func(sk *agents.Skill) {
		sk.SystemPrompt = "Cite the line of every bug you find."
		sk.ContextLoaders = []string{agents.LoaderRecentMemories, agents.LoaderConversationSummary, agents.LoaderOpenTasks, agents.LoaderTeamRoster}
	})
	_, err := f.memory.Create(ctx, team, "luke", memory.CreateInput{Type: "fact", Visibility: "private", Content: "the parser crashed on empty input last week"})
	require.NoError(t, err)
	require.NoError(t, f.store.CreateTask(ctx, tasks.Task{TeamID: team, ID: "task_open1", RootID: "task_open1", Assignee: "luke", Title: "Fix the parser",
		Status: tasks.Queued, Priority: "high", CreatedBy: tasks.Creator{Type: "user", ID: "u"}, CreatedAt: now, UpdatedAt: now}, nil, nil))
	f.sources.MemoryLog, f.sources.Tasks = f.store, storeTasks{f.store}
	f.rebuild()

	c := f.create(t, "")
	res := f.post(t, c.ID, "Can you review this Go function for bugs?")
	require.Equal(t, []string{"luke"}, res.Routing.SelectedAgents)
	sys := f.model.last(t).System
	assert.Contains(t, sys, `You were chosen for your skill "code-review". Cite the line of every bug you find.`)
	assert.Contains(t, sys, "Your recent memories (newest first):\n- the parser crashed on empty input last week")
	assert.Contains(t, sys, "This conversation:\n- Title: Chat")
	assert.Contains(t, sys, "Your open tasks:\n- [queued] Fix the parser (high, task task_open1)")
	assert.Contains(t, sys, "Your team:\n- @archie (Archie): architecture")
	assert.NotContains(t, sys, "@luke (Luke):", "not its own colleague")

	f.post(t, c.ID, "@dana what is the trend of these numbers?")
	sys = f.model.last(t).System
	assert.NotContains(t, sys, "You were chosen for your skill")
	assert.NotContains(t, sys, "Your open tasks")
}

// Without loaders or a system prompt, the chosen skill adds nothing: the
// prompt is what it was before skills had them.
func TestASkillWithoutExecutionFieldsAddsNothing(t *testing.T) {
	f := newFixture(t, collaborationOn)
	c := f.create(t, "")
	f.post(t, c.ID, "Can you review this Go function for bugs?")
	sys := f.model.last(t).System
	assert.NotContains(t, sys, "You were chosen for your skill")
	assert.NotContains(t, sys, "Your team:\n")
}
