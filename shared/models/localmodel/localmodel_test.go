package localmodel_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/models/localmodel"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
)

// directory is the agents the local model can read, by team/slug.
type directory map[string]localmodel.Agent

func (d directory) GetAgent(_ context.Context, team, slug string) (localmodel.Agent, error) {
	a, ok := d[team+"/"+slug]
	if !ok {
		return localmodel.Agent{}, apperr.NotFound("agent", slug)
	}
	return a, nil
}

func luke(script string) localmodel.Agent {
	return localmodel.Agent{Name: "Luke", Script: script,
		Skills: []localmodel.Skill{
			{Name: "triage", Description: "Sort incoming work", InternalOnly: true},
			{Name: "code-review", Description: "Review code for bugs"},
		}}
}

func ask(script, message string) models.Request {
	return models.Request{ModelID: "amazon.nova-lite-v1:0", Messages: []models.Message{{Role: "user", Content: message}},
		Metadata: map[string]string{models.MetadataTeamID: "t", models.MetadataAgent: "luke-" + script}}
}

func model() localmodel.Model {
	d := directory{}
	for _, s := range []string{"", "refuse", "fail", "timeout", "tools:2", "tokens:77", "delegate:dana", "delegate2:dana,archie", "delegate-fail:dana", "delegate-async:dana", "collab:dana,archie",
		"handoff:dana", "message:dana", "recall", "report-async:dana", "consult:dana", "spend:1500"} {
		d["t/luke-"+s] = luke(s)
	}
	return localmodel.New(d)
}

func TestScriptsAndVoiceComeFromTheAgent(t *testing.T) {
	req := ask("", "check my loop")
	a, err := model().Converse(context.Background(), req)
	require.NoError(t, err)
	b, _ := model().Converse(context.Background(), req)
	assert.Equal(t, a.Text, b.Text, "deterministic")
	assert.Contains(t, a.Text, "As Luke, on code review: review code for bugs.", "the first user-facing skill; internal ones stay out of the voice")
	assert.Equal(t, "amazon.nova-lite-v1:0", a.ModelID)
	assert.Positive(t, a.OutputTokens)

	r, err := model().Converse(context.Background(), ask("refuse", "x"))
	require.NoError(t, err)
	assert.True(t, r.Refused)
	_, err = model().Converse(context.Background(), ask("fail", "x"))
	assert.ErrorIs(t, err, models.ErrModel)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = model().Converse(ctx, ask("timeout", "x"))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	r, err = model().Converse(context.Background(), ask("tokens:77", "x"))
	require.NoError(t, err)
	assert.Equal(t, 77, r.OutputTokens)
}

func TestToolAndDelegateScripts(t *testing.T) {
	req := ask("tools:2", "x")
	req.Tools = []models.Tool{{Name: "a"}, {Name: "b"}}
	for _, want := range []string{"a", "b"} {
		r, err := model().Converse(context.Background(), req)
		require.NoError(t, err)
		require.Len(t, r.ToolCalls, 1)
		assert.Equal(t, want, r.ToolCalls[0].Name)
		req.Messages = append(req.Messages, models.Message{Role: "assistant", ToolCalls: r.ToolCalls}, models.Message{Role: "tool", Content: "ok", ToolCallID: r.ToolCalls[0].ID})
	}
	r, _ := model().Converse(context.Background(), req)
	assert.Empty(t, r.ToolCalls, "after N calls it answers")
	assert.NotEmpty(t, r.Text)

	req = ask("delegate:dana", "count the signups")
	req.Tools = []models.Tool{{Name: "delegate_task"}}
	r, _ = model().Converse(context.Background(), req)
	require.Len(t, r.ToolCalls, 1)
	var in map[string]string
	require.NoError(t, json.Unmarshal([]byte(r.ToolCalls[0].Input), &in))
	assert.Equal(t, "dana", in["to_agent"])
	assert.Equal(t, "count the signups", in["instructions"])
	req.Messages = append(req.Messages, models.Message{Role: "assistant", ToolCalls: r.ToolCalls}, models.Message{Role: "tool", Content: "42 a week", ToolCallID: "call-1"})
	r, _ = model().Converse(context.Background(), req)
	assert.Contains(t, r.Text, "Delegated work: 42 a week")

	// delegate2: two delegations in one response, then one answer with
	// both results.
	req = ask("delegate2:dana,archie", "count the signups")
	req.Tools = []models.Tool{{Name: "delegate_task"}}
	r, _ = model().Converse(context.Background(), req)
	require.Len(t, r.ToolCalls, 2)
	for i, want := range []string{"dana", "archie"} {
		var in map[string]string
		require.NoError(t, json.Unmarshal([]byte(r.ToolCalls[i].Input), &in))
		assert.Equal(t, want, in["to_agent"])
		assert.Equal(t, "count the signups", in["instructions"])
	}
	assert.NotEqual(t, r.ToolCalls[0].ID, r.ToolCalls[1].ID)
	req.Messages = append(req.Messages, models.Message{Role: "assistant", ToolCalls: r.ToolCalls},
		models.Message{Role: "tool", Content: "42 a week", ToolCallID: r.ToolCalls[0].ID}, models.Message{Role: "tool", Content: "one queue", ToolCallID: r.ToolCalls[1].ID})
	r, _ = model().Converse(context.Background(), req)
	assert.Empty(t, r.ToolCalls)
	assert.Contains(t, r.Text, "Delegated work: 42 a week | one queue")

	// delegate-fail: the same delegation, then no answer.
	req = ask("delegate-fail:dana", "count the signups")
	req.Tools = []models.Tool{{Name: "delegate_task"}}
	r, err := model().Converse(context.Background(), req)
	require.NoError(t, err)
	require.Len(t, r.ToolCalls, 1)
	assert.Equal(t, "delegate_task", r.ToolCalls[0].Name)
	req.Messages = append(req.Messages, models.Message{Role: "assistant", ToolCalls: r.ToolCalls}, models.Message{Role: "tool", Content: "42 a week", ToolCallID: "call-1"})
	_, err = model().Converse(context.Background(), req)
	assert.ErrorIs(t, err, models.ErrModel)
}

// The chat scripts call their tools in order, each only when it is
// offered, then answer with what the tools said.
func TestChatToolScripts(t *testing.T) {
	offered := []models.Tool{{Name: "delegate_task"}, {Name: "check_task_status"}, {Name: "start_collaboration"}, {Name: "handoff_to"},
		{Name: "send_agent_message"}, {Name: "get_agent_inbox"}, {Name: "search_memories"}, {Name: "request_report"}, {Name: "consult_specialist"}}
	cases := map[string][]string{
		"delegate-async:dana": {"delegate_task", "check_task_status"},
		"collab:dana,archie":  {"start_collaboration"},
		"handoff:dana":        {"handoff_to"},
		"message:dana":        {"send_agent_message", "get_agent_inbox"},
		"recall":              {"search_memories"},
		"report-async:dana":   {"request_report"},
		"consult:dana":        {"consult_specialist"},
	}
	for script, want := range cases {
		req := ask(script, "plan the launch")
		req.Tools = offered
		var got []string
		for range 4 {
			r, err := model().Converse(context.Background(), req)
			require.NoError(t, err)
			if len(r.ToolCalls) == 0 {
				assert.Contains(t, r.Text, "Tools: ", script)
				break
			}
			got = append(got, r.ToolCalls[0].Name)
			var in map[string]any
			require.NoError(t, json.Unmarshal([]byte(r.ToolCalls[0].Input), &in), script)
			// delegate_task's result names a task for check_task_status.
			req.Messages = append(req.Messages, models.Message{Role: "assistant", ToolCalls: r.ToolCalls},
				models.Message{Role: "tool", Content: "delegated as task task_01abc to dana", ToolCallID: r.ToolCalls[0].ID})
			if r.ToolCalls[0].Name == "check_task_status" {
				assert.Equal(t, "task_01abc", in["task_id"])
			}
			if r.ToolCalls[0].Name == "start_collaboration" {
				assert.Len(t, in["participants"], 2)
			}
		}
		assert.Equal(t, want, got, script)
		// Without the tool offered it answers at once.
		r, err := model().Converse(context.Background(), ask(script, "plan the launch"))
		require.NoError(t, err)
		assert.Empty(t, r.ToolCalls, script)
	}
	req := ask("spend:1500", "x")
	req.Tools = offered[:1]
	r, err := model().Converse(context.Background(), req)
	require.NoError(t, err)
	assert.Len(t, r.ToolCalls, 1)
	assert.Equal(t, 1500, r.OutputTokens)
}

// Without attribution, or when the agent cannot be read, the model still
// answers: plainly, with no script and no voice.
func TestWithoutAnAgentItAnswersPlainly(t *testing.T) {
	plain := "Let me work through this. On \"check my loop\": the key points are scope, risks and next steps."
	for name, req := range map[string]models.Request{
		"no metadata":   {Messages: []models.Message{{Role: "user", Content: "check my loop"}}},
		"unknown agent": {Messages: []models.Message{{Role: "user", Content: "check my loop"}}, Metadata: map[string]string{models.MetadataTeamID: "t", models.MetadataAgent: "ghost"}},
	} {
		r, err := model().Converse(context.Background(), req)
		require.NoError(t, err, name)
		assert.Equal(t, localmodel.ModelID, r.ModelID, name)
		assert.Equal(t, plain, r.Text, name)
	}
	r, err := localmodel.Model{}.Converse(context.Background(), ask("fail", "check my loop"))
	require.NoError(t, err, "no agent reader: no script")
	assert.Equal(t, "amazon.nova-lite-v1:0", r.ModelID)
}

// brokenDirectory cannot be read (the table is unavailable).
type brokenDirectory struct{}

func (brokenDirectory) GetAgent(context.Context, string, string) (localmodel.Agent, error) {
	return localmodel.Agent{}, apperr.New(apperr.EINTERNAL, "the table did not answer")
}

// An agent that cannot be read fails the call, as a provider's error
// would: a scripted agent (a "timeout" one) never answers as an
// unscripted one because a read failed. An unknown agent has no script.
func TestAnUnreadableAgentFailsTheCall(t *testing.T) {
	_, err := localmodel.New(brokenDirectory{}).Converse(context.Background(), ask("timeout", "x"))
	assert.ErrorIs(t, err, models.ErrModel)
	r, err := localmodel.New(directory{}).Converse(context.Background(), ask("timeout", "x"))
	require.NoError(t, err, "not found: no script")
	assert.NotEmpty(t, r.Text)
}

// A request with OnDelta gets the answer's text in pieces of a few words,
// in order and before Converse returns, that concatenate exactly to the
// text; the answer is the one the same request gets without it. A failed
// call and an answer with no text hand out nothing.
func TestOnDeltaHandsOutTheTextInWordChunks(t *testing.T) {
	want, err := model().Converse(context.Background(), ask("", "check my loop"))
	require.NoError(t, err)
	require.Greater(t, len(strings.Fields(want.Text)), 6, "an answer long enough to come in several pieces")

	var pieces []string
	req := ask("", "check my loop")
	req.OnDelta = func(s string) { pieces = append(pieces, s) }
	got, err := model().Converse(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Equal(t, want.Text, strings.Join(pieces, ""))
	assert.Greater(t, len(pieces), 1)
	for _, p := range pieces {
		assert.NotEmpty(t, p)
		assert.LessOrEqual(t, len(strings.Fields(p)), 3, p)
	}

	for _, script := range []string{"fail", "delegate:dana"} {
		pieces = nil
		req := ask(script, "who can help with signups?")
		req.Tools = []models.Tool{{Name: "delegate_task"}}
		req.OnDelta = func(s string) { pieces = append(pieces, s) }
		resp, err := model().Converse(context.Background(), req)
		assert.Equal(t, script == "fail", err != nil, script)
		assert.Empty(t, resp.Text, script)
		assert.Empty(t, pieces, script)
	}
}
