//go:build integration

package cloud_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A plan step on an external A2A agent (issue 43): the team's tax-desk,
// served by the official Python SDK's server, is a step target like any
// member. Its step's sub-query goes out as an A2A message, the remote
// answer is the step's result, and the step after it gets that result
// bridged into its context; the plan completes and its synthesis is
// posted into the conversation.
func TestAPlanStepRunsOnAnExternalA2AAgent(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	srv := startA2ARemote(t)
	d.registerRemote(srv)

	conv := d.conversation("kyra")
	steps := `{"step_id":1,"target":"tax-desk/vat-returns","sub_query":"How do I reclaim input VAT on imported goods? (vat-plan)","depends_on":[]},
	{"step_id":2,"target":"wren/writing","sub_query":"Write a short note for the finance team on reclaiming input VAT","depends_on":[1]}`
	turn := d.post(conv, map[string]any{"content": "Ask the tax desk about input VAT, then write a note for finance " + planMarker(steps)})
	id := pendingPlan(t, turn)

	p := d.waitPlan(id, 120*time.Second)
	require.Equal(t, "completed", p["status"], p)
	got := p["steps"].([]any)
	require.Len(t, got, 2)
	remote := d.task(got[0].(map[string]any)["task_id"].(string))
	assert.Equal(t, "tax-desk", remote["assignee"])
	assert.Equal(t, "completed", remote["status"], remote)
	assert.Contains(t, remote["result"], "Remote answer from "+srv.name+":", "the step's result is the remote agent's answer")
	sent := srv.callsWith(t, "(vat-plan)")
	require.Len(t, sent, 1, "one A2A message went out for the step")
	assert.Contains(t, fmt.Sprint(sent[0]["texts"]), "How do I reclaim input VAT on imported goods?")
	second := d.task(got[1].(map[string]any)["task_id"].(string))
	assert.Contains(t, second["context"], "prior_step_1_response: ", "the remote answer is bridged into the next step")
	assert.Contains(t, second["context"], "Remote answer from "+srv.name)

	require.Eventually(t, func() bool {
		for _, m := range d.messages(conv) {
			if ref, ok := m["result_of"].(map[string]any); ok && ref["id"] == id {
				return true
			}
		}
		return false
	}, 30*time.Second, 250*time.Millisecond, "the plan's synthesis is posted into the conversation")
}
