package agenttools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/agenttools"
	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/routing/discovery"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/tools/catalog"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
	"github.com/conclave-ai/conclave/shared/wire/localmodelwiring"
	"github.com/conclave-ai/conclave/shared/work/consultations"
	"github.com/conclave-ai/conclave/shared/work/sessions"
)

// fullyWired is f's tools with every service a tool needs.
func fullyWired(f *fixture) {
	f.withReports()
	f.tools.Sessions = &sessions.Service{Store: f.store, Enabled: true}
	f.tools.Consultations = consultations.New(f.store, nil, localmodelwiring.New(f.store), f.bus, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	f.tools.Memories = &memory.Service{Store: f.store, Dir: f.store, Bus: f.bus}
	f.tools.Colleagues = &fakeColleagues{}
	f.tools.Model = localmodelwiring.New(f.store)
	f.tools.Clipboard = &toolpacks.Clipboard{Store: f.store}
}

// Every tool of every context, for an agent declaring every declared
// tool, as GET /v1/agents/{slug}/tools answers it: a JSON Schema the
// validator resolves, an object with no additional properties, every
// property typed and described (nested ones too).
func TestEveryToolHasACompleteSchema(t *testing.T) {
	f := newFixture(t)
	fullyWired(f)
	all := agents.Agent{Slug: "kyra", Skills: []agents.Skill{{Name: "memory", Tools: catalog.Names()}}}
	lister := agenttools.Lister{Agents: fixedAgent{all}, Chat: agenttools.Chat{Tools: f.tools}, Task: f.tools}
	seen := map[string]bool{}
	for _, where := range []string{catalog.ContextChat, catalog.ContextTask} {
		got, err := lister.Offered(context.Background(), team, "kyra", where, "")
		require.NoError(t, err)
		assert.Equal(t, where, got.Context)
		require.NotEmpty(t, got.Tools)
		for _, tool := range got.Tools {
			seen[tool.Name] = true
			assert.NotEmpty(t, tool.Description, tool.Name)
			raw, err := json.Marshal(tool.InputSchema)
			require.NoError(t, err)
			var s jsonschema.Schema
			require.NoError(t, json.Unmarshal(raw, &s), tool.Name)
			_, err = s.Resolve(nil)
			require.NoError(t, err, "%s: the schema resolves", tool.Name)
			assert.Equal(t, "object", s.Type, tool.Name)
			checkObject(t, tool.Name, &s)
		}
	}
	for _, name := range catalog.Names() {
		assert.True(t, seen[name], "%s is offered in some context and was checked", name)
	}
}

// checkObject checks an object schema and everything it nests.
func checkObject(t *testing.T, where string, s *jsonschema.Schema) {
	t.Helper()
	if len(s.Properties) == 0 {
		// A free-form map (request_report's parameters): its keys are
		// the template's, not the tool's.
		assert.NotNil(t, s.AdditionalProperties, "%s: a map says what its values are", where)
		return
	}
	require.NotNil(t, s.AdditionalProperties, "%s: additionalProperties", where)
	assert.NotNil(t, s.AdditionalProperties.Not, "%s: additionalProperties is false", where)
	for _, req := range s.Required {
		assert.Contains(t, s.Properties, req, "%s: required %s is a property", where, req)
	}
	for name, p := range s.Properties {
		at := where + "." + name
		assert.NotEmpty(t, p.Type, "%s has a type", at)
		assert.NotEmpty(t, p.Description, "%s has a description", at)
		switch p.Type {
		case "object":
			checkObject(t, at, p)
		case "array":
			require.NotNil(t, p.Items, "%s: items", at)
			assert.NotNil(t, p.MaxItems, "%s: bounded", at)
			if p.Items.Type == "object" {
				checkObject(t, at+"[]", p.Items)
			} else {
				assert.NotEmpty(t, p.Items.Type, "%s[] has a type", at)
			}
		case "string":
			if len(p.Enum) == 0 {
				assert.NotNil(t, p.MaxLength, "%s: a free-text string is bounded", at)
			}
		case "integer":
			assert.NotNil(t, p.Minimum, "%s: bounded below", at)
			assert.NotNil(t, p.Maximum, "%s: bounded above", at)
		}
	}
}

// A call whose arguments break the schema is answered with a tool error
// naming the field, in a task and in a chat, and nothing runs.
func TestAWrongArgumentIsAToolErrorNamingTheField(t *testing.T) {
	f := newFixture(t)
	fullyWired(f)
	p := f.working(t, "kyra")
	before := len(f.bus.Events())
	for _, tc := range []struct {
		tool, input, field string
	}{
		{"delegate_task", `{"to_agent":"luke","instructions":"x","priority":"asap"}`, "priority"},
		{"delegate_task", `{"assignee":"luke","instructions":"x"}`, "assignee"},
		{"delegate_task", `{"to_agent":"luke"}`, "instructions"},
		{"delegate_task", `{"to_agent":"Luke!","instructions":"x"}`, "to_agent"},
		{"start_collaboration", `{"pattern":"brainstorm","goal":"g","participants":[{"slug":"luke","role":"boss"}]}`, "participants.role"},
		{"start_collaboration", `{"pattern":"brainstorm","goal":"g","participants":"luke"}`, "participants"},
		{"request_report", `{"to_agent":"luke","report_type":"code_review","title":"t","max_sections":11}`, "max_sections"},
		{"consult_specialist", `{"question":"q","context":{"error_messages":[""]}}`, "context.error_messages"},
		{"close_consultation", `{"consultation_id":"cons_1","rating":0}`, "rating"},
		{"find_colleagues", `{"need":"a reviewer","max":6}`, "max"},
		{"find_colleagues", `{"need":""}`, "need"},
		{"get_agent_inbox", `{"unread_only":"yes"}`, "unread_only"},
	} {
		var got agenttools.InvalidArguments
		out := f.call(t, p, tc.tool, tc.input)
		require.NoError(t, json.Unmarshal([]byte(out), &got), "%s %s: %s", tc.tool, tc.input, out)
		assert.Equal(t, agenttools.ErrInvalidArguments, got.Error, out)
		assert.Equal(t, tc.field, got.Field, "%s %s: %s", tc.tool, tc.input, out)
		assert.NotEmpty(t, got.Message, out)
	}
	assert.Len(t, f.bus.Events(), before, "nothing acted on a refused call")
	assert.Zero(t, f.tools.Colleagues.(*fakeColleagues).calls)

	chat := agenttools.Chat{Tools: f.tools}
	kyra, err := f.store.GetAgent(context.Background(), team, "kyra")
	require.NoError(t, err)
	res, err := chat.Call(context.Background(), conversations.ToolCaller{TeamID: team, ConversationID: "conv_1", Agent: "kyra", WaitUntil: time.Now().Add(time.Minute), Offered: chat.Specs(kyra)},
		models.ToolCall{ID: "call-1", Name: "handoff_to", Input: `{"to_agent":"luke"}`})
	require.NoError(t, err, "a wrong argument is the tool's answer, not a failed turn")
	assert.JSONEq(t, `{"error":"invalid_arguments","field":"reason","message":"required argument missing"}`, res.Text)
	assert.Nil(t, res.Handoff)
}

// find_colleagues asks the gate (through discovery) for the need, leaves
// the caller out, and answers each candidate's slug, name, matching
// skills, confidence, availability and load as JSON.
func TestFindColleaguesAsksTheGate(t *testing.T) {
	f := newFixture(t)
	fake := &fakeColleagues{list: []discovery.Colleague{
		{Slug: "sage", Name: "Sage", MatchingSkills: []string{"security-review"}, Confidence: 0.91, Availability: "active", ActiveTasks: 2},
		{Slug: "luke", Name: "Luke", MatchingSkills: []string{"code-review"}, Confidence: 0.4, Availability: "paused"},
	}}
	kyra := agents.Agent{Slug: "kyra"}
	assert.NotContains(t, names(f.tools.Specs(kyra)), "find_colleagues", "without the gate the tool is left out")
	f.tools.Colleagues = fake
	assert.Contains(t, names(f.tools.Specs(kyra)), "find_colleagues")
	assert.Contains(t, names(agenttools.Chat{Tools: f.tools}.Specs(kyra)), "find_colleagues", "in a chat too")

	p := f.working(t, "kyra")
	out := f.call(t, p, "find_colleagues", map[string]any{"need": "someone to audit our JWT handling", "max": 2})
	var got struct {
		Colleagues []discovery.Colleague `json:"colleagues"`
		Note       string                `json:"note"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	assert.Equal(t, fake.list, got.Colleagues)
	assert.Equal(t, []string{"kyra", "someone to audit our JWT handling", "2"}, fake.asked)

	f.call(t, p, "find_colleagues", map[string]any{"need": "anyone"})
	assert.Equal(t, "3", fake.asked[2], "three by default")

	fake.err = apperr.Invalid("need", "need must be 1 to 8000 characters")
	assert.Contains(t, f.call(t, p, "find_colleagues", map[string]any{"need": "x"}), "rejected: need must be")
}

type fakeColleagues struct {
	list  []discovery.Colleague
	err   error
	asked []string
	calls int
}

func (f *fakeColleagues) FindColleagues(_ context.Context, _, asker, need string, limit int) ([]discovery.Colleague, error) {
	f.calls++
	f.asked = []string{asker, need, fmt.Sprint(limit)}
	return f.list, f.err
}

// The route's answer: chat by default, task on request, the context
// named when it is neither, and an unknown agent not found.
func TestListerAnswersPerContext(t *testing.T) {
	f := newFixture(t)
	lister := agenttools.Lister{Agents: f.store, Chat: agenttools.Chat{Tools: f.tools}, Task: f.tools}
	ctx := context.Background()
	chat, err := lister.Offered(ctx, team, "kyra", "", "")
	require.NoError(t, err)
	assert.Equal(t, catalog.ContextChat, chat.Context)
	assert.Contains(t, offeredNames(chat), "handoff_to")
	task, err := lister.Offered(ctx, team, "kyra", "task", "")
	require.NoError(t, err)
	assert.NotContains(t, offeredNames(task), "handoff_to", "a task has no conversation to hand over")
	kyra, err := f.store.GetAgent(ctx, team, "kyra")
	require.NoError(t, err)
	assert.Equal(t, names(f.tools.Specs(kyra)), offeredNames(task), "exactly what the worker offers")

	_, err = lister.Offered(ctx, team, "kyra", "batch", "")
	assert.Equal(t, "context", apperrField(err))
	_, err = lister.Offered(ctx, team, "nobody", "", "")
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), err)
	_, err = lister.Offered(ctx, "team_other", "kyra", "", "")
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "another team's agent: %v", err)
}

func offeredNames(o catalog.Offered) []string {
	var out []string
	for _, t := range o.Tools {
		out = append(out, t.Name)
	}
	return out
}

func apperrField(err error) string {
	if ae, ok := apperr.As(err); ok && ae.Code == apperr.EINVALID {
		return ae.Field
	}
	return ""
}

type fixedAgent struct{ a agents.Agent }

func (f fixedAgent) GetAgent(context.Context, string, string) (agents.Agent, error) { return f.a, nil }

// A skill's tools belong to it (seed 003): a two-skill agent answering
// through one skill is offered that skill's declared tools and the
// collaboration tools, not the other skill's; without a skill, both.
func TestListerScopesToolsToTheSkill(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, err := agents.NewService(f.store).Create(ctx, team, agents.CreateInput{Slug: "tess", Name: "Tess", Skills: []agents.Skill{
		{Name: "research", Description: "Finds what the team knows", Tools: []string{catalog.SearchMemories}},
		{Name: "editing", Description: "Tightens prose", Tools: []string{catalog.ShareMemory}},
	}})
	require.NoError(t, err)
	lister := agenttools.Lister{Agents: f.store, Chat: agenttools.Chat{Tools: f.tools}, Task: f.tools}

	all, err := lister.Offered(ctx, team, "tess", "", "")
	require.NoError(t, err)
	assert.Subset(t, offeredNames(all), []string{catalog.SearchMemories, catalog.ShareMemory, catalog.DelegateTask})
	assert.Empty(t, all.Skill)

	research, err := lister.Offered(ctx, team, "tess", "", "research")
	require.NoError(t, err)
	assert.Equal(t, "research", research.Skill)
	assert.Contains(t, offeredNames(research), catalog.SearchMemories)
	assert.NotContains(t, offeredNames(research), catalog.ShareMemory, "the other skill's tool")
	assert.Contains(t, offeredNames(research), catalog.DelegateTask, "the collaboration tools stay")

	editing, err := lister.Offered(ctx, team, "tess", "task", "editing")
	require.NoError(t, err)
	assert.Contains(t, offeredNames(editing), catalog.ShareMemory)
	assert.NotContains(t, offeredNames(editing), catalog.SearchMemories)

	_, err = lister.Offered(ctx, team, "tess", "", "cooking")
	assert.Equal(t, "skill", apperrField(err))
}
