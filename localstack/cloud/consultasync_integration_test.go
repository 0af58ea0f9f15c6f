//go:build integration

// Consultations asked from a chat reply or a task do not wait for the
// specialist: its answer comes from a task of the specialist's, run by the
// delegation workflow; the report-finalizer records it on the
// consultation, and the result-poster posts it into the conversation.
package cloud_test

import (
	"fmt"
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

// A consultation asked from a chat turn is its team's: another team's key
// reads, lists, follows up on and rates neither it nor its specialist's
// task (404, nothing listed). A consult_specialist call the schema
// refuses (an empty question, a suggested_agent that is not a slug) asks
// nothing: the tool's result names the field, the reply has no pending
// work and no consultation is stored. A suggested agent the team does not
// have is a hint not taken: the gate chooses, and the decision says why.
func TestAChatTurnsConsultationIsTheTeamsAndBadInputAsksNothing(t *testing.T) {
	e := mustEnv(t)
	d, other := mustDemoTeam(t, e), mustDemoTeam(t, e)
	d.script(e, "kyra", "consult:dana")
	conv := d.conversation("kyra")
	r := lastReply(t, d.post(conv, map[string]any{"content": "@kyra how should we rotate our JWT signing keys?"}))
	require.Equal(t, []string{"consult_specialist"}, toolNames(r))
	consID := r["pending"].([]any)[0].(map[string]any)["id"].(string)
	c := d.waitConsultation(consID, 60*time.Second)
	taskID, _ := c["task_id"].(string)
	require.NotEmpty(t, taskID, c)

	for _, probe := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/v1/consultations/" + consID, nil},
		{"GET", "/v1/consultations/" + consID + "?wait=1", nil},
		{"GET", "/v1/tasks/" + taskID, nil},
		{"POST", "/v1/consultations/" + consID + "/exchanges", map[string]any{"message": "and the refresh tokens?"}},
		{"POST", "/v1/consultations/" + consID + "/outcome", map[string]any{"rating": 5}},
	} {
		st, res := other.call(probe.method, probe.path, probe.body)
		assert.Equal(t, 404, st, "%s %s: %v", probe.method, probe.path, res)
		assert.NotContains(t, fmt.Sprint(res), "JWT", "%s %s", probe.method, probe.path)
	}
	for _, path := range []string{"/v1/consultations", "/v1/consultations?agent=kyra", "/v1/tasks?assignee=" + c["consulted_agent"].(string)} {
		st, list := other.call("GET", path, nil)
		require.Equal(t, 200, st, list)
		assert.Empty(t, list["items"], path)
	}
	st, mine := d.call("GET", "/v1/consultations/"+consID, nil)
	require.Equal(t, 200, st, mine)
	assert.Equal(t, "completed", mine["status"], "the team itself still reads it")

	// Bad input, from the unscripted agent's [call:…] marker.
	d.script(e, "kyra", "")
	asked := func() int {
		st, list := d.call("GET", "/v1/consultations?agent=kyra", nil)
		require.Equal(t, 200, st, list)
		return len(list["items"].([]any))
	}
	n := asked()
	for field, args := range map[string]string{
		"question":        `{"question":""}`,
		"suggested_agent": `{"question":"How should we rotate signing keys?","suggested_agent":"Dana!"}`,
	} {
		r = lastReply(t, d.post(conv, map[string]any{"content": "@kyra [call:consult_specialist " + args + "] help me"}))
		require.Equal(t, []string{"consult_specialist"}, toolNames(r), field)
		out := r["tool_calls"].([]any)[0].(map[string]any)["output"].(string)
		assert.Contains(t, out, `"error":"invalid_arguments"`, field)
		assert.Contains(t, out, `"field":"`+field+`"`, "the result names the field")
		assert.Empty(t, r["pending"], "%s: nothing asked", field)
	}
	assert.Equal(t, n, asked(), "no consultation stored")

	r = lastReply(t, d.post(conv, map[string]any{"content": `@kyra [call:consult_specialist {"question":"How should we rotate signing keys?","suggested_agent":"nobody"}] help me`}))
	require.Equal(t, []string{"consult_specialist"}, toolNames(r))
	require.Len(t, r["pending"], 1, "asked anyway: %v", r)
	c = d.waitConsultation(r["pending"].([]any)[0].(map[string]any)["id"].(string), 60*time.Second)
	dec := c["decision"].(map[string]any)
	assert.Equal(t, false, dec["suggestion_taken"])
	assert.Contains(t, dec["reason"], "suggestion nobody not taken: not an active agent of the team")
	assert.NotEqual(t, "nobody", c["consulted_agent"])
	assert.Equal(t, n+1, asked())
}
