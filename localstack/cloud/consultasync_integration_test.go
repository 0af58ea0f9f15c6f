//go:build integration

// Consultations asked from a chat reply or a task do not wait for the
// specialist: its answer comes from a task of the specialist's, run by the
// delegation workflow; the report-finalizer records it on the
// consultation, and the result-poster posts it into the conversation.
package cloud_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// waitConsultation polls the consultation until it is no longer pending.
func (d demoTeam) waitConsultation(id string, within time.Duration) map[string]any {
	d.t.Helper()
	deadline := time.Now().Add(within)
	for {
		st, c := d.call("GET", "/v1/consultations/"+id, nil)
		require.Equal(d.t, 200, st, c)
		if s := c["status"]; s != "pending" && s != "in_progress" {
			return c
		}
		require.True(d.t, time.Now().Before(deadline), "consultation %s still %s after %s", id, c["status"], within)
		time.Sleep(300 * time.Millisecond)
	}
}

// A chat turn's agent consults a specialist: the reply lists the
// consultation pending without waiting; the specialist's task answers it,
// the consultation is completed with its task's tokens, and the answer
// arrives in the conversation as the specialist's message result_of the
// consultation.
func TestConsultSpecialistFromAChatTurn(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.script(e, "kyra", "consult:dana")
	conv := d.conversation("kyra")
	r := lastReply(t, d.post(conv, map[string]any{"content": "@kyra how should we rotate our JWT signing keys?"}))
	require.Equal(t, []string{"consult_specialist"}, toolNames(r))
	pending := r["pending"].([]any)[0].(map[string]any)
	assert.Equal(t, "consultation", pending["type"])
	assert.Equal(t, "pending", pending["status"])
	consID := pending["id"].(string)

	posted := d.awaitPosted(conv, r["id"].(string), consID)
	ref := posted["result_of"].(map[string]any)
	assert.Equal(t, "consultation", ref["type"])
	assert.Equal(t, "completed", ref["status"])
	assert.NotEmpty(t, posted["content"])

	c := d.waitConsultation(consID, 60*time.Second)
	assert.Equal(t, "completed", c["status"], c)
	assert.Equal(t, conv, c["conversation_id"])
	assert.Equal(t, posted["agent"], c["consulted_agent"], "the specialist's message")
	taskID, _ := c["task_id"].(string)
	require.NotEmpty(t, taskID, "linked to the specialist's task")
	task := d.task(taskID)
	assert.Equal(t, consID, task["consultation_id"])
	assert.Equal(t, "completed", task["status"])
	assert.Equal(t, c["consulted_agent"], task["assignee"])
	assert.NotEmpty(t, c["response"].(map[string]any)["answer"])
	assert.Len(t, c["exchanges"].([]any), 1)
	assert.EqualValues(t, task["tokens_used"], c["tokens_used"], "the task's tokens")
	// Posted once.
	assert.Len(t, d.results(conv, consID), 1)
}

// A task consults a specialist: it waits for the specialist's task in its
// workflow and completes with the answer as its tool's result.
func TestATaskConsultsASpecialistAndCompletesWithTheAnswer(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.script(e, "kyra", "consult:dana")
	st, tk := d.call("POST", "/v1/tasks", map[string]any{"assignee": "kyra", "title": "Key rotation", "instructions": "How should we rotate our JWT signing keys?", "execute": true})
	require.Equal(t, 201, st, tk)
	done := d.waitTaskEnds(tk["id"].(string), 90*time.Second)
	require.Equal(t, "completed", done["status"], done)
	assert.Contains(t, done["result"], "consultation cons_", "the answer came back as the tool's result")

	st, list := d.call("GET", "/v1/consultations?agent=kyra", nil)
	require.Equal(t, 200, st, list)
	items := list["items"].([]any)
	require.NotEmpty(t, items)
	c := items[0].(map[string]any)
	assert.Equal(t, "completed", c["status"], c)
	child := d.task(c["task_id"].(string))
	assert.Equal(t, tk["id"], child["parent_task_id"], "the asking task's child")
	assert.Equal(t, c["collaboration_id"], child["consultation_id"])
	assert.Contains(t, done["result"], c["collaboration_id"])
}
