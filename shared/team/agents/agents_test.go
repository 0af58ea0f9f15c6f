package agents_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// refusingStore fails the test on any write: a rejected request must not
// reach the store.
type refusingStore struct{ t *testing.T }

func (s refusingStore) CreateAgent(context.Context, agents.Agent) error {
	s.t.Fatal("CreateAgent called for an invalid agent")
	return nil
}

// acceptingStore stores nothing and accepts every new agent.
type acceptingStore struct{ refusingStore }

func (acceptingStore) CreateAgent(context.Context, agents.Agent) error { return nil }

func (s refusingStore) GetAgent(context.Context, string, string) (agents.Agent, error) {
	return agents.Agent{}, apperr.NotFound("agent", "")
}
func (s refusingStore) ListAgents(context.Context, string, agents.Filter, paging.Page) ([]agents.Agent, string, error) {
	return nil, "", nil
}
func (s refusingStore) UpdateAgent(context.Context, agents.Agent) error {
	s.t.Fatal("UpdateAgent called")
	return nil
}
func (s refusingStore) SetStatus(context.Context, string, string, string, time.Time) (agents.Agent, error) {
	s.t.Fatal("SetStatus called")
	return agents.Agent{}, nil
}
func (s refusingStore) SetDefault(context.Context, string, string) error {
	s.t.Fatal("SetDefault called")
	return nil
}
func (s refusingStore) DefaultAgent(context.Context, string) (string, error) { return "", nil }

func TestCreateRejectsInvalidAgents(t *testing.T) {
	good := func() agents.CreateInput {
		return agents.CreateInput{Slug: "luke", Name: "Luke", Skills: []agents.Skill{{Name: "code-review", Description: "reviews code"}}}
	}
	cases := []struct {
		name  string
		edit  func(*agents.CreateInput)
		field string
	}{
		{"uppercase slug", func(in *agents.CreateInput) { in.Slug = "Luke" }, "slug"},
		{"short slug", func(in *agents.CreateInput) { in.Slug = "lu" }, "slug"},
		{"slug ending in dash", func(in *agents.CreateInput) { in.Slug = "luke-" }, "slug"},
		{"slug with space", func(in *agents.CreateInput) { in.Slug = "lu ke" }, "slug"},
		{"long slug", func(in *agents.CreateInput) { in.Slug = "a" + strings.Repeat("b", 40) }, "slug"},
		{"missing name", func(in *agents.CreateInput) { in.Name = " " }, "name"},
		{"long tagline", func(in *agents.CreateInput) { in.Tagline = strings.Repeat("x", 201) }, "tagline"},
		{"humor above 1", func(in *agents.CreateInput) { in.Personality = &agents.Personality{Humor: 1.5} }, "personality.humor"},
		{"negative formality", func(in *agents.CreateInput) { in.Personality = &agents.Personality{Formality: -0.1} }, "personality.formality"},
		{"archived at creation", func(in *agents.CreateInput) { in.Status = "archived" }, "status"},
		{"bad skill name", func(in *agents.CreateInput) { in.Skills[0].Name = "Code Review" }, "skills[0].name"},
		{"duplicate skill", func(in *agents.CreateInput) { in.Skills = append(in.Skills, in.Skills[0]) }, "skills[1].name"},
		{"skill without description", func(in *agents.CreateInput) { in.Skills[0].Description = "" }, "skills[0].description"},
		{"priority out of range", func(in *agents.CreateInput) { in.Skills[0].Priority = 101 }, "skills[0].priority"},
		{"empty keyword", func(in *agents.CreateInput) { in.Skills[0].Keywords = []string{""} }, "skills[0].keywords"},
		{"unknown tool", func(in *agents.CreateInput) { in.Skills[0].Tools = []string{"search_memories", "read_file"} }, "skills[0].tools"},
		{"explicit keywords without keywords", func(in *agents.CreateInput) { in.Skills[0].RequiresExplicitKeywords = true }, "skills[0].keywords"},
		{"long system prompt", func(in *agents.CreateInput) { in.Skills[0].SystemPrompt = strings.Repeat("x", 4001) }, "skills[0].system_prompt"},
		{"system prompts too long together", func(in *agents.CreateInput) {
			for i := range 6 {
				in.Skills = append(in.Skills, agents.Skill{Name: "s" + string(rune('a'+i)), Description: "d", SystemPrompt: strings.Repeat("x", 4000)})
			}
		}, "skills[6].system_prompt"},
		{"unknown context loader", func(in *agents.CreateInput) { in.Skills[0].ContextLoaders = []string{"open_tasks", "weather"} }, "skills[0].context_loaders"},
		{"duplicate context loader", func(in *agents.CreateInput) { in.Skills[0].ContextLoaders = []string{"open_tasks", "open_tasks"} }, "skills[0].context_loaders"},
		{"unknown kind", func(in *agents.CreateInput) { in.Skills[0].Kind = "workflow" }, "skills[0].kind"},
		{"unknown report type", func(in *agents.CreateInput) { in.Skills[0].Kind = "report:haiku" }, "skills[0].kind"},
		{"report without type", func(in *agents.CreateInput) { in.Skills[0].Kind = "report:" }, "skills[0].kind"},
		{"unknown session pattern", func(in *agents.CreateInput) { in.Skills[0].Kind = "session:debate" }, "skills[0].kind"},
		{"chat with a target", func(in *agents.CreateInput) { in.Skills[0].Kind = "chat:x" }, "skills[0].kind"},
		{"unknown provider", func(in *agents.CreateInput) { in.Model = &agents.Model{Provider: "acme"} }, "model.provider"},
		{"unknown script", func(in *agents.CreateInput) { in.Model = &agents.Model{Script: "explode"} }, "model.script"},
	}
	svc := agents.NewService(refusingStore{t})
	known := good()
	known.Skills[0].Tools = []string{"search_memories", "share_memory", "delegate_task"}
	_, err := agents.NewService(acceptingStore{refusingStore{t}}).Create(context.Background(), "team", known)
	assert.NoError(t, err, "known tools are accepted")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := good()
			c.edit(&in)
			_, err := svc.Create(context.Background(), "team", in)
			e, ok := apperr.As(err)
			require.True(t, ok, "got %v", err)
			assert.Equal(t, apperr.EINVALID, e.Code)
			assert.Equal(t, c.field, e.Field)
		})
	}
}

func TestValidScripts(t *testing.T) {
	for _, s := range []string{"fail", "timeout", "tools:11", "tokens:5000", "omit:findings", "omit-once:findings,risk_matrix", "report:luke", "delegate-async:luke", "delegate2:luke,dana", "handoff:luke", "message:dana", "collab:luke,dana", "recall", "report-async:dana", "spend:1500"} {
		assert.True(t, agents.ValidScript(s), s)
	}
	for _, s := range []string{"", "tools:", "tools:x", "fail;rm", "tokens:1234567", "omit:", "omit:Findings", "omit-twice:x", "delegate2:luke", "delegate2:luke,dana,sam"} {
		assert.False(t, agents.ValidScript(s), s)
	}
}

func TestSetStatusRejectsUnknownStatusBeforeTheStore(t *testing.T) {
	_, err := agents.NewService(refusingStore{t}).SetStatus(context.Background(), "team", "luke", "deleted")
	assert.Equal(t, apperr.EINVALID, apperr.Code(err))
}

// oneAgentStore holds one agent and, like refusingStore, fails on writes.
type oneAgentStore struct {
	refusingStore
	a agents.Agent
}

func (s oneAgentStore) GetAgent(context.Context, string, string) (agents.Agent, error) {
	return s.a, nil
}

// A PATCH that changes nothing writes nothing and keeps the version.
func TestUpdateThatChangesNothingKeepsTheVersion(t *testing.T) {
	a := agents.Agent{Slug: "kyra", Name: "Kyra", Tagline: "t", Status: agents.StatusActive, Version: 4,
		Skills: []agents.Skill{{Name: "code-review", Description: "reviews"}}}
	svc := &agents.Service{Store: oneAgentStore{refusingStore{t}, a}, Now: time.Now}
	name, tagline, skills, version := " Kyra ", "t", []agents.Skill{{Name: "code-review", Description: "reviews"}}, 4
	for label, in := range map[string]agents.UpdateInput{
		"empty":         {},
		"same name":     {Name: &name},
		"same values":   {Tagline: &tagline, Skills: &skills},
		"version alone": {Version: &version},
	} {
		got, err := svc.Update(context.Background(), "team", "kyra", in)
		require.NoError(t, err, label)
		assert.Equal(t, 4, got.Version, label)
	}
}

// updatingStore holds one agent and records the update written.
type updatingStore struct {
	oneAgentStore
	written *agents.Agent
}

func (s updatingStore) UpdateAgent(_ context.Context, a agents.Agent) error {
	*s.written = a
	return nil
}

// A PATCH is validated as a create is: a declared tool the catalog does
// not know is refused on skills[i].tools before anything is written; known
// ones are stored.
func TestUpdateRejectsAnUnknownTool(t *testing.T) {
	a := agents.Agent{Slug: "luke", Name: "Luke", Status: agents.StatusActive, Version: 2,
		Skills: []agents.Skill{{Name: "code-review", Description: "reviews code"}}}
	svc := &agents.Service{Store: oneAgentStore{refusingStore{t}, a}, Now: time.Now}
	skills := []agents.Skill{{Name: "code-review", Description: "reviews code"}, {Name: "research", Description: "reads", Tools: []string{"search_memories", "read_file"}}}
	_, err := svc.Update(context.Background(), "team", "luke", agents.UpdateInput{Skills: &skills})
	e, ok := apperr.As(err)
	require.True(t, ok, "got %v", err)
	assert.Equal(t, apperr.EINVALID, e.Code)
	assert.Equal(t, "skills[1].tools", e.Field)
	assert.Contains(t, e.Message, `"read_file"`)

	var written agents.Agent
	svc.Store = updatingStore{oneAgentStore{refusingStore{t}, a}, &written}
	skills[1].Tools = []string{"search_memories", "share_memory"}
	got, err := svc.Update(context.Background(), "team", "luke", agents.UpdateInput{Skills: &skills})
	require.NoError(t, err)
	assert.Equal(t, []string{"search_memories", "share_memory"}, written.Skills[1].Tools)
	assert.Equal(t, 3, got.Version)
}
