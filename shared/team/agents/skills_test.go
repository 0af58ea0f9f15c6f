package agents_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/teams"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
)

func TestParseKind(t *testing.T) {
	for kind, want := range map[string][2]string{
		"": {"chat", ""}, "chat": {"chat", ""}, "report:code_review": {"report", "code_review"}, "session:peer_review": {"session", "peer_review"},
	} {
		typ, target, ok := agents.ParseKind(kind)
		assert.True(t, ok, kind)
		assert.Equal(t, want, [2]string{typ, target}, kind)
	}
	for _, kind := range []string{"Chat", "report", "report:", "session:", "session:debate", "report:haiku", "plan:x", "chat:"} {
		_, _, ok := agents.ParseKind(kind)
		assert.False(t, ok, kind)
	}
}

// skillTeam is a memstore with two teams: t1 with kyra (chat and report
// skills), luke (a session skill) and an archived agent, t2 with its own.
func skillTeam(t *testing.T) (*agents.Service, *memstore.Store) {
	t.Helper()
	ctx := context.Background()
	store := memstore.New()
	for _, id := range []string{"t1", "t2"} {
		require.NoError(t, store.CreateTeam(ctx, teams.Team{ID: id, Name: id}, teams.APIKey{ID: "k-" + id}, "h-"+id))
	}
	svc := agents.NewService(store)
	_, err := svc.Create(ctx, "t1", agents.CreateInput{Slug: "kyra", Name: "Kyra", Skills: []agents.Skill{
		{Name: "code-review", Description: "Reviews code", Domains: []string{"code"}, Tools: []string{"search_memories"},
			SystemPrompt: "Review line by line.", ContextLoaders: []string{"open_tasks"}, Public: true},
		{Name: "audit", Description: "Security audit report", Domains: []string{"security", "code"}, Kind: "report:security_audit"},
	}})
	require.NoError(t, err)
	_, err = svc.Create(ctx, "t1", agents.CreateInput{Slug: "luke", Name: "Luke", Skills: []agents.Skill{
		{Name: "brainstorm", Description: "Brainstorms with the team", Domains: []string{"ideas"}, Kind: "session:brainstorm", InternalOnly: true},
	}})
	require.NoError(t, err)
	_, err = svc.Create(ctx, "t1", agents.CreateInput{Slug: "old-one", Name: "Old", Skills: []agents.Skill{{Name: "code-review", Description: "Old reviews", Domains: []string{"code"}}}})
	require.NoError(t, err)
	_, err = svc.SetStatus(ctx, "t1", "old-one", agents.StatusArchived)
	require.NoError(t, err)
	_, err = svc.Create(ctx, "t2", agents.CreateInput{Slug: "kyra", Name: "Other Kyra", Skills: []agents.Skill{{Name: "secret", Description: "t2 only", Domains: []string{"code"}}}})
	require.NoError(t, err)
	return svc, store
}

func names(list []agents.SkillEntry) []string {
	out := []string{}
	for _, e := range list {
		out = append(out, e.Agent+"/"+e.Name)
	}
	return out
}

func TestSkillRegistryListsAndFilters(t *testing.T) {
	svc, _ := skillTeam(t)
	ctx := context.Background()
	cases := []struct {
		name string
		f    agents.SkillFilter
		want []string
	}{
		{"every skill of the team's agents that are not archived", agents.SkillFilter{}, []string{"kyra/code-review", "kyra/audit", "luke/brainstorm"}},
		{"by agent", agents.SkillFilter{Agent: "luke"}, []string{"luke/brainstorm"}},
		{"unknown agent", agents.SkillFilter{Agent: "nobody"}, []string{}},
		{"malformed agent", agents.SkillFilter{Agent: "No Body"}, []string{}},
		{"archived agent", agents.SkillFilter{Agent: "old-one"}, []string{}},
		{"by domain", agents.SkillFilter{Domain: "code"}, []string{"kyra/code-review", "kyra/audit"}},
		{"by kind type", agents.SkillFilter{Kind: "report"}, []string{"kyra/audit"}},
		{"by exact kind", agents.SkillFilter{Kind: "session:brainstorm"}, []string{"luke/brainstorm"}},
		{"chat is the default kind", agents.SkillFilter{Kind: "chat"}, []string{"kyra/code-review"}},
		{"by tool", agents.SkillFilter{Tool: "search_memories"}, []string{"kyra/code-review"}},
		{"filters combine", agents.SkillFilter{Domain: "code", Kind: "chat", Agent: "kyra"}, []string{"kyra/code-review"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			list, next, err := svc.Skills(ctx, "t1", c.f, paging.Page{})
			require.NoError(t, err)
			assert.Empty(t, next)
			assert.Equal(t, c.want, names(list))
			for _, e := range list {
				assert.Empty(t, e.SystemPrompt, "the listing leaves system prompts to GET /v1/skills/{agent}/{name}")
				assert.NotEqual(t, "t2 only", e.Description)
			}
		})
	}
	list, _, err := svc.Skills(ctx, "t1", agents.SkillFilter{Agent: "kyra"}, paging.Page{})
	require.NoError(t, err)
	assert.Equal(t, agents.SkillEntry{Agent: "kyra", AgentName: "Kyra", AgentStatus: "active", Skill: agents.Skill{
		Name: "code-review", Description: "Reviews code", Domains: []string{"code"}, Tools: []string{"search_memories"},
		ContextLoaders: []string{"open_tasks"}, Kind: "chat", Public: true}}, list[0])

	_, _, err = svc.Skills(ctx, "t1", agents.SkillFilter{Kind: "report:haiku"}, paging.Page{})
	assert.Equal(t, "kind", fieldOf(t, err))
	_, _, err = svc.Skills(ctx, "t1", agents.SkillFilter{}, paging.Page{Limit: 101})
	assert.Equal(t, "limit", fieldOf(t, err))
}

func TestSkillRegistryPagesByAgent(t *testing.T) {
	svc, _ := skillTeam(t)
	ctx := context.Background()
	var got []string
	p := paging.Page{Limit: 1}
	pages := 0
	for {
		list, next, err := svc.Skills(ctx, "t1", agents.SkillFilter{}, p)
		require.NoError(t, err)
		got = append(got, names(list)...)
		pages++
		if next == "" {
			break
		}
		p.Token = next
	}
	assert.Equal(t, []string{"kyra/code-review", "kyra/audit", "luke/brainstorm"}, got)
	assert.GreaterOrEqual(t, pages, 3, "one agent a page (the archived one's page is empty)")
}

func TestSkillRegistryGetsOneSkill(t *testing.T) {
	svc, _ := skillTeam(t)
	ctx := context.Background()
	e, err := svc.Skill(ctx, "t1", "kyra", "code-review")
	require.NoError(t, err)
	assert.Equal(t, "Review line by line.", e.SystemPrompt)
	assert.Equal(t, "chat", e.Kind)
	for _, c := range [][3]string{{"t1", "kyra", "nope"}, {"t1", "nobody", "code-review"}, {"t1", "Bad Slug", "x"}, {"t1", "old-one", "code-review"}, {"t2", "luke", "brainstorm"}, {"t1", "kyra", "secret"}} {
		_, err := svc.Skill(ctx, c[0], c[1], c[2])
		assert.Equal(t, apperr.ENOTFOUND, apperr.Code(err), "%v", c)
	}
}

// Skills stored before kinds existed read back as chat skills, and a PATCH
// that sends them back unchanged writes nothing.
func TestSkillsWithoutKindAreChat(t *testing.T) {
	svc, store := skillTeam(t)
	ctx := context.Background()
	a, err := store.GetAgent(ctx, "t1", "kyra")
	require.NoError(t, err)
	a.Skills[0].Kind = ""
	a.Version++
	require.NoError(t, store.UpdateAgent(ctx, a))
	got, err := svc.Get(ctx, "t1", "kyra")
	require.NoError(t, err)
	assert.Equal(t, "chat", got.Skills[0].Kind)
	skills := got.Skills
	again, err := svc.Update(ctx, "t1", "kyra", agents.UpdateInput{Skills: &skills})
	require.NoError(t, err)
	assert.Equal(t, got.Version, again.Version)
}

func fieldOf(t *testing.T, err error) string {
	t.Helper()
	e, ok := apperr.As(err)
	require.True(t, ok, "got %v", err)
	assert.Equal(t, apperr.EINVALID, e.Code)
	return e.Field
}

func TestWithSkillKeepsTheNamedSkillAlone(t *testing.T) {
	a := agents.Agent{Slug: "luke", Skills: []agents.Skill{{Name: "code-review", Tools: []string{"search_memories"}}, {Name: "writing", Tools: []string{"summarize_text"}}}}
	got, ok := a.WithSkill("writing")
	require.True(t, ok)
	assert.Equal(t, []agents.Skill{{Name: "writing", Tools: []string{"summarize_text"}}}, got.Skills)
	assert.Len(t, a.Skills, 2, "the agent itself is unchanged")
	same, ok := a.WithSkill("cooking")
	assert.False(t, ok)
	assert.Equal(t, a, same)
}
