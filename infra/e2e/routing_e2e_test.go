//go:build e2e

package e2e

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A chat turn over HTTP on any stage: with collaboration on the mention
// routes, with it off (prod's default) the conversation's agent answers;
// both land on the agent, and the decision is in the log.
func TestChatTurnIsAnsweredAndLogged(t *testing.T) {
	me, other := clients(t)
	slug := mkAgent(t, me, "chat")
	r := me.do("POST", "/v1/conversations", map[string]any{"title": "e2e", "agent": slug})
	require.Equal(t, 201, r.Status, string(r.Body))
	conv := r.JSON(t)["id"].(string)

	r = me.do("POST", "/v1/conversations/"+conv+"/messages", map[string]any{"content": "@" + slug + " hello, can you help?"})
	require.Equal(t, 201, r.Status, string(r.Body))
	turn := r.JSON(t)
	replies := turn["replies"].([]any)
	reply := replies[len(replies)-1].(map[string]any)
	assert.Equal(t, "assistant", reply["role"])
	assert.Equal(t, slug, reply["agent"])
	decision := turn["routing"].(map[string]any)["id"].(string)

	r = me.do("GET", "/v1/routing/decisions/"+decision, nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	assert.Equal(t, conv, r.JSON(t)["conversation_id"])
	r = me.do("GET", "/v1/conversations/"+conv+"/messages", nil)
	require.Equal(t, 200, r.Status)
	assert.Len(t, r.JSON(t)["items"], 1+len(replies))

	r = me.do("POST", "/v1/conversations/"+conv+"/messages", map[string]any{"content": ""})
	assert.Equal(t, 400, r.Status)
	code, field, _ := r.ErrorFields(t)
	assert.Equal(t, "invalid_request", code)
	assert.Equal(t, "content", field)

	assert.Equal(t, 404, other.do("GET", "/v1/conversations/"+conv, nil).Status)
	assert.Equal(t, 404, other.do("GET", "/v1/routing/decisions/"+decision, nil).Status)
	assert.Equal(t, 404, other.do("POST", "/v1/conversations/"+conv+"/messages", map[string]any{"content": "hi"}).Status)
}

// BenchmarkChatTurn is one chat turn over HTTP: route (the expert-gate
// function through Lambda Invoke where the gate is on), one model reply,
// and the turn's transaction.
func BenchmarkChatTurn(b *testing.B) {
	t := &testing.T{}
	me, _ := clients(t)
	slug := mkAgent(t, me, "bench")
	r := me.do("POST", "/v1/conversations", map[string]any{"agent": slug})
	if r.Status != 201 {
		b.Fatal(string(r.Body))
	}
	conv := r.JSON(t)["id"].(string)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r := me.do("POST", "/v1/conversations/"+conv+"/messages", map[string]any{"content": "Can you review this function for bugs?"}); r.Status != 201 {
			b.Fatal(string(r.Body))
		}
	}
}
