//go:build integration

package cloud_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 23, through the API on the local cloud, with the expert-gate
// function's semantic signal (wordllama): everyday phrasing reaches the
// specialist, a follow-up stays with the agent answering, a removed agent
// does not answer until @mentioned, and small talk is not routed.

func TestEverydayPhrasingIsRoutedByMeaning(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	for _, tc := range []struct{ q, want string }{
		{"Is my login flow safe against attackers?", "sage"},
		{"My program crashes when I call it twice, why?", "luke"},
	} {
		conv := d.conversation("") // a new conversation: no current agent to keep
		turn := d.post(conv, map[string]any{"content": tc.q})
		assert.Equal(t, tc.want, lastReply(t, turn)["agent"], tc.q)
		r := turn["routing"].(map[string]any)
		assert.Equal(t, "expert_gate", r["reason"], tc.q)
		assert.Equal(t, false, r["fallback_used"], tc.q)
		assert.GreaterOrEqual(t, r["confidence"].(float64), 0.6, tc.q)
		scores := r["scores"].([]any)
		require.NotEmpty(t, scores)
		top := scores[0].(map[string]any)
		assert.Equal(t, tc.want, top["agent_slug"])
		assert.Equal(t, r["confidence"], top["confidence"], "the decision's confidence is the chosen agent's match confidence")
	}
	// Off topic: nobody is confident, the default agent answers and says so.
	conv := d.conversation("")
	turn := d.post(conv, map[string]any{"content": "Recommend me a good pizza place nearby."})
	assert.Equal(t, "kyra", lastReply(t, turn)["agent"])
	assert.Equal(t, true, turn["routing"].(map[string]any)["fallback_used"])
}

func TestAFollowUpStaysWithTheAgentAnswering(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	conv := d.conversation("kyra")
	turn := d.post(conv, map[string]any{"content": "Can you review this Go function for bugs?"})
	require.Equal(t, "luke", lastReply(t, turn)["agent"], "the gate moves a clear change of subject to the specialist")
	turn = d.post(conv, map[string]any{"content": "Thanks! Can you explain the second point in more detail?"})
	assert.Equal(t, "luke", lastReply(t, turn)["agent"])
	r := turn["routing"].(map[string]any)
	assert.Equal(t, "current_agent", r["reason"])
	assert.Equal(t, false, r["fallback_used"])
	// A clear change of subject still moves.
	turn = d.post(conv, map[string]any{"content": "Is my login flow safe against attackers?"})
	assert.Equal(t, "sage", lastReply(t, turn)["agent"])
}

func TestARemovedAgentAnswersOnlyWhenMentioned(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	conv := d.conversation("kyra")
	st, c := d.call("POST", "/v1/conversations/"+conv+"/agents", map[string]any{"add": []string{"sage"}})
	require.Equal(t, 200, st, c)
	st, c = d.call("POST", "/v1/conversations/"+conv+"/agents", map[string]any{"remove": []string{"sage"}})
	require.Equal(t, 200, st, c)

	// Sage's question: sage was removed, so it does not answer.
	turn := d.post(conv, map[string]any{"content": "Is my login flow safe against attackers?"})
	assert.NotEqual(t, "sage", lastReply(t, turn)["agent"])
	for _, s := range turn["routing"].(map[string]any)["scores"].([]any) {
		assert.NotEqual(t, "sage", s.(map[string]any)["agent_slug"], "a removed agent is not even scored")
	}
	st, c = d.call("GET", "/v1/conversations/"+conv, nil)
	require.Equal(t, 200, st)
	left := func() any {
		for _, p := range c["participants"].([]any) {
			if pm := p.(map[string]any); pm["agent"] == "sage" {
				return pm["left_at"]
			}
		}
		return "absent"
	}
	assert.NotNil(t, left(), "still removed: not silently re-joined")

	// @sage: it answers and is re-joined explicitly.
	turn = d.post(conv, map[string]any{"content": "@sage what do you think?"})
	assert.Equal(t, "sage", lastReply(t, turn)["agent"])
	st, c = d.call("GET", "/v1/conversations/"+conv, nil)
	require.Equal(t, 200, st)
	assert.Nil(t, left(), "re-joined")
}

func TestSmallTalkIsNotRouted(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	// A new conversation: the default agent.
	conv := d.conversation("")
	turn := d.post(conv, map[string]any{"content": "Hi there!"})
	assert.Equal(t, "kyra", lastReply(t, turn)["agent"])
	r := turn["routing"].(map[string]any)
	assert.Equal(t, "greeting", r["strategy"])
	assert.Equal(t, "greeting", r["reason"])
	assert.Empty(t, r["scores"], "the gate was not asked")
	assert.Zero(t, r["gate_latency_ms"])
	// In a conversation luke answers, thanks stay with luke.
	conv = d.conversation("luke")
	turn = d.post(conv, map[string]any{"content": "thanks a lot!"})
	assert.Equal(t, "luke", lastReply(t, turn)["agent"])
	assert.Equal(t, "greeting", turn["routing"].(map[string]any)["strategy"])
}

func TestMessageContextGatesSkills(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	conv := d.conversation("")
	// Bad context: 400 naming the field, nothing stored.
	st, res := d.call("POST", "/v1/conversations/"+conv+"/messages", map[string]any{"content": "look at this",
		"context": map[string]any{"attachments": []any{map[string]any{"type": "video"}}}})
	require.Equal(t, 400, st, res)
	assert.Contains(t, res["error"].(map[string]any)["field"], "context.attachments")
	st, msgs := d.call("GET", "/v1/conversations/"+conv+"/messages", nil)
	require.Equal(t, 200, st)
	assert.Empty(t, msgs["items"])
	// A good one is accepted.
	turn := d.post(conv, map[string]any{"content": "Is my login flow safe against attackers?",
		"context": map[string]any{"editor": map[string]any{"type": "code"}, "attachments": []any{map[string]any{"type": "image", "media_type": "image/png", "name": "flow.png"}}}})
	assert.Equal(t, "sage", lastReply(t, turn)["agent"])
}
