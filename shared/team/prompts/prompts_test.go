package prompts_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/team/prompts"
)

var luke = agents.Agent{
	TeamID: "team_01", Slug: "luke", Name: "Luke", Tagline: "the team's code reviewer",
	Personality: agents.Personality{Description: "Direct and precise."},
	Skills: []agents.Skill{
		{Name: "code-review", Description: "Review code for bugs"},
		{Name: "triage", Description: "Sort incoming work", InternalOnly: true},
		{Name: "testing", Description: "Write tests"},
	},
}

func TestSystemPrompts(t *testing.T) {
	identity := "You are Luke (@luke), the team's code reviewer.\n" +
		"Direct and precise.\n" +
		"Your skills: code-review: Review code for bugs; testing: Write tests\n"
	for name, tc := range map[string]struct {
		situation prompts.Situation
		want      string
	}{
		"chat": {prompts.Chat{}, identity +
			"You are answering a user in a team conversation; other agents of the team may have replied before you (their replies are marked with their handle).\n"},
		"task": {prompts.Task{Title: "Review the parser", Context: "It panics on empty input", ExpectedOutput: "a list of findings"}, identity +
			"Task: Review the parser\nContext: It panics on empty input\nExpected output: a list of findings\n"},
		"task without optional lines": {prompts.Task{Title: "Review the parser"}, identity + "Task: Review the parser\n"},
		"task with every line": {prompts.Task{Title: "Review the parser", Type: "review", Priority: "urgent", Context: "It panics",
			InputArtifacts: []string{"src/parser.go", "https://ci.example/run/42"}, Input: `{"files":3}`,
			Conversation: []prompts.Line{{Author: "user", Content: "Is the parser safe?"}, {Author: "kyra", Content: "Luke will check."}}}, identity +
			"Task: Review the parser\nType: review; priority: urgent\nContext: It panics\n" +
			"Input artifacts:\n- src/parser.go\n- https://ci.example/run/42\n" + "Input (JSON): {\"files\":3}\n" +
			"The conversation this task came from (its last messages, oldest first):\n[user] Is the parser safe?\n[kyra] Luke will check.\n"},
		"task with a priority alone": {prompts.Task{Title: "T", Priority: "low"}, identity + "Task: T\nPriority: low\n"},
		"identity alone":             {nil, identity},
	} {
		t.Run(name, func(t *testing.T) {
			got := prompts.System(luke, tc.situation)
			assert.Equal(t, tc.want, got)
			assert.NotContains(t, got, "triage", "internal-only skills stay out of the prompt")
		})
	}
}

func TestSystemPromptOfASparseAgent(t *testing.T) {
	assert.Equal(t, "You are Ada (@ada).\n", prompts.System(agents.Agent{Slug: "ada", Name: "Ada"}, nil),
		"no dangling comma, blank personality line or empty skills line")
}

func TestRequest(t *testing.T) {
	tier := "amazon.nova-lite-v1:0"
	for name, tc := range map[string]struct {
		model        *agents.Model
		wantModel    string
		wantProvider string
	}{
		"no model configured: the default":    {nil, tier, ""},
		"provider only: the default id":       {&agents.Model{Provider: "bedrock"}, tier, "bedrock"},
		"the agent's model id wins":           {&agents.Model{Provider: "bedrock", ID: "anthropic.claude-3-5-haiku-20241022-v1:0"}, "anthropic.claude-3-5-haiku-20241022-v1:0", "bedrock"},
		"a script is not part of the request": {&agents.Model{Provider: "local", Script: "fail"}, tier, "local"},
	} {
		t.Run(name, func(t *testing.T) {
			a := luke
			a.Model = tc.model
			req := prompts.Request("team_01", a, "You are Luke.", 1000, tier)
			assert.Equal(t, models.Request{
				ModelID: tc.wantModel, Provider: tc.wantProvider, System: "You are Luke.", MaxTokens: 1000,
				Metadata: map[string]string{models.MetadataTeamID: "team_01", models.MetadataAgent: "luke"},
			}, req)
		})
	}
	req := prompts.Request("team_01", luke, "s", 4000, "")
	assert.Empty(t, req.ModelID, "no default: the provider's own")
}

func TestMemoriesUnderTheirHeadings(t *testing.T) {
	mc := memory.Context{
		UserProfile: []memory.Memory{{Content: "Prefers short answers"}},
		Shared:      []memory.Memory{{Content: "The API is in Go"}, {Content: "Deploys on Fridays are frozen"}},
		Private:     []memory.Memory{{Content: "I reviewed the auth module last week"}},
	}
	assert.Equal(t, "About the user:\n- Prefers short answers\n"+
		"What the team knows:\n- The API is in Go\n- Deploys on Fridays are frozen\n"+
		"What you remember:\n- I reviewed the auth module last week\n", prompts.Memories(mc))
	assert.Empty(t, prompts.Memories(memory.Context{}), "no heading without a memory")
}
