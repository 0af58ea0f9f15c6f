//go:build integration

package cloud_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/e2e/apitest"
	"github.com/conclave-ai/conclave/localstack/cloud"
	"github.com/conclave-ai/conclave/shared/team/teams"
)

// Routing that learns from use, end to end (issue 42, item 6): a user's
// @mention right after the gate chose, and a handoff the client asks for
// right after, each reach the routing-evaluator as RoutingCorrected
// through its rule and queue and become a suggested example of the chosen
// agent; a key lists, accepts (the example is in the skill, replayed by
// its Idempotency-Key) and dismisses them, within their call budgets; bad
// input is 400 naming the field and changes nothing; another team sees
// none of it.
func TestACorrectionOfTheRouterBecomesASuggestedExample(t *testing.T) {
	e := mustEnv(t)
	tm, k, err := teams.NewService(e.db.teams).CreateTeam(context.Background(), "suggestions")
	require.NoError(t, err)
	api := apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), Key: k.Secret, T: t}
	other := apiTeam(t, e, "suggestions other")
	gardenTeam(t, api)
	gardenTeam(t, other)
	list := func(c apitest.Client, agent string) []any {
		r := c.Do("GET", "/v1/agents/"+agent+"/example-suggestions", nil)
		require.Equal(t, 200, r.Status, string(r.Body))
		return r.JSON(t)["items"].([]any)
	}
	// routedThenCorrected sends content to a new conversation (the gate
	// chooses), corrects it with correct(conv, answered, chosen), and
	// waits for the suggestion of the chosen agent.
	routedThenCorrected := func(content string, correct func(conv, answered, chosen string)) (string, map[string]any) {
		r := api.Do("POST", "/v1/conversations", map[string]any{"title": "suggestions"})
		require.Equal(t, 201, r.Status, string(r.Body))
		conv := r.JSON(t)["id"].(string)
		r = api.Do("POST", "/v1/conversations/"+conv+"/messages", map[string]any{"content": content})
		require.Equal(t, 201, r.Status, string(r.Body))
		turn := r.JSON(t)
		answered := lastReply(t, turn)["agent"].(string)
		chosen := "mechanic"
		if answered == "mechanic" {
			chosen = "gardener"
		}
		correct(conv, answered, chosen)
		var got map[string]any
		require.Eventually(t, func() bool {
			for _, it := range list(api, chosen) {
				if s := it.(map[string]any); s["id"] == turn["user_message"].(map[string]any)["id"] {
					got = s
					return true
				}
			}
			return false
		}, 60*time.Second, 300*time.Millisecond, "the correction of %q became a suggestion of %s", content, chosen)
		assert.Equal(t, answered, got["routed_to"])
		assert.Equal(t, content, got["content"])
		assert.Equal(t, conv, got["conversation_id"])
		return chosen, got
	}

	chosen, sg := routedThenCorrected("the leaves of my cucumber plant are going brown at the edges", func(conv, _, chosen string) {
		r := api.Do("POST", "/v1/conversations/"+conv+"/messages", map[string]any{"content": "@" + chosen + " could you take this one?"})
		require.Equal(t, 201, r.Status, string(r.Body))
	})
	id := sg["id"].(string)
	skill := map[string]string{"mechanic": "car-repair", "gardener": "plant-care"}[chosen]
	assert.Equal(t, "mention", sg["kind"])
	assert.Equal(t, skill, sg["skill"])

	// Another team: nothing listed, nothing to accept or dismiss.
	assert.Empty(t, list(other, chosen))
	base := "/v1/agents/" + chosen + "/example-suggestions/" + id
	assert.Equal(t, 404, other.Do("POST", base+"/accept", nil).Status)
	assert.Equal(t, 404, other.Do("POST", base+"/dismiss", nil).Status)
	assert.Equal(t, 404, api.Do("GET", "/v1/agents/nobody/example-suggestions", nil).Status)

	// Bad input: 400 naming the field, the suggestion still there.
	for field, body := range map[string]any{"skill": map[string]any{"skill": "no-such-skill"}, "bogus": map[string]any{"bogus": 1}} {
		r := api.Do("POST", base+"/accept", body)
		require.Equal(t, 400, r.Status, string(r.Body))
		_, got, _ := r.ErrorFields(t)
		assert.Equal(t, field, got)
	}
	assert.Equal(t, 400, api.Do("POST", base+"/dismiss", map[string]any{"skill": skill}).Status, "dismiss takes no body")
	assert.Equal(t, 404, api.Do("POST", "/v1/agents/"+chosen+"/example-suggestions/msg_nope/accept", nil).Status)
	require.Len(t, list(api, chosen), 1, "refused requests change nothing")

	// Listed and accepted within their budgets; the accept replayed by
	// its Idempotency-Key.
	lit := func(s string) func() string { return func() string { return s } }
	table := runSteps(t, api, tm.ID, []step{
		// the agent read (and the team item: its default) to check it
		// exists, one query of its suggestions.
		{op: "GET /v1/agents/{slug}/example-suggestions", method: "GET", path: lit("/v1/agents/" + chosen + "/example-suggestions"), status: 200,
			max: calls{"DynamoDB": 3, "DynamoDB.Query": 1}},
	})
	r := api.Do("POST", base+"/accept", nil, "Idempotency-Key", "accept-1")
	require.Equal(t, 200, r.Status, string(r.Body))
	accepted := r.JSON(t)
	var got map[string]int
	require.NoError(t, json.Unmarshal([]byte(r.Header.Get(cloud.AWSCallsHeader)), &got))
	// the idempotency claim and its record (two puts), the suggestion,
	// the agent twice (read, then read again by the update, each with the
	// team item), the conditional put of the new version, announced
	// (AgentsChanged), the suggestion removed.
	within(t, "POST …/example-suggestions/{id}/accept", got, calls{"DynamoDB": 9, "DynamoDB.GetItem": 5, "DynamoDB.PutItem": 3, "DynamoDB.DeleteItem": 1, "EventBridge": 1})
	table = append(table, measured{op: "POST …/example-suggestions/{id}/accept", calls: got})
	again := api.Do("POST", base+"/accept", nil, "Idempotency-Key", "accept-1")
	require.Equal(t, 200, again.Status, string(again.Body))
	assert.Equal(t, accepted, again.JSON(t), "replayed, not accepted twice")
	assert.Equal(t, skill, accepted["skill"])
	assert.EqualValues(t, 4, accepted["examples"])
	r = api.Do("GET", "/v1/skills/"+chosen+"/"+skill, nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	assert.Contains(t, r.JSON(t)["examples"], sg["content"])
	assert.Empty(t, list(api, chosen))
	assert.Equal(t, 404, api.Do("POST", base+"/accept", nil).Status, "accepted once")

	// A handoff the client asks for right after the gate chose; dismissed.
	chosen2, sg2 := routedThenCorrected("how much sun does a lemon tree in a pot need?", func(conv, answered, chosen string) {
		r := api.Do("POST", "/v1/conversations/"+conv+"/handoff", map[string]any{"from": answered, "to": chosen, "reason": "the user asked for them"})
		require.Equal(t, 201, r.Status, string(r.Body))
	})
	assert.Equal(t, "handoff", sg2["kind"])
	base2 := "/v1/agents/" + chosen2 + "/example-suggestions/" + sg2["id"].(string)
	table = append(table, runSteps(t, api, tm.ID, []step{
		// one conditional update.
		{op: "POST …/example-suggestions/{id}/dismiss", method: "POST", path: lit(base2 + "/dismiss"), status: 200, max: calls{"DynamoDB": 1, "DynamoDB.UpdateItem": 1}},
	})...)
	for _, m := range table {
		t.Logf("| %s | %s |", m.op, m.list())
	}
	assert.Empty(t, list(api, chosen2))
	assert.Equal(t, 404, api.Do("POST", base2+"/dismiss", nil).Status, "dismissed once")
	assert.Equal(t, 404, api.Do("POST", base2+"/accept", nil).Status, "a dismissed suggestion is not accepted")
}
