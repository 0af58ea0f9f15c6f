//go:build integration

// What a person starts is theirs beyond conversations (issue 44, items 3
// to 5), with real tokens signed by a local issuer the team registered:
// the plans a member's turns start and the event streams of their
// sessions and plans are 404 to another member, and a person's own
// monthly budget refuses their next model call over HTTP, counted on
// their own month.
package cloud_test

import (
	"context"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/localstack/cloud"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/budget"
)

// openStream opens an event stream on the streaming API with a token and
// answers its status, then closes it (a stream of running work stays open
// until the work ends).
func openStream(t *testing.T, token, path string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", os.Getenv("CONCLAVE_STREAM_URL")+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	return resp.StatusCode
}

func TestAMembersPlansAndStreamsAreNotFoundToAnotherMember(t *testing.T) {
	d, alice, bob, admin := people(t)
	st, conv := withToken(t, alice, "POST", "/v1/conversations", map[string]any{"title": "Alice's plan", "agent": "kyra"})
	require.Equal(t, http.StatusCreated, st, conv)
	st, turn := withToken(t, alice, "POST", "/v1/conversations/"+conv["id"].(string)+"/messages",
		map[string]any{"content": "Review the payment handler for bugs and security issues, then write release notes " + planMarker(threeStepPlan)})
	require.Equal(t, http.StatusCreated, st, turn)
	plan := pendingPlan(t, turn)
	st, ses := withToken(t, alice, "POST", "/v1/sessions", map[string]any{"pattern": "brainstorm", "lead": "kyra", "goal": "names for the launch",
		"participants": []map[string]any{{"agent": "luke", "role": "contributor"}, {"agent": "dana", "role": "contributor"}}})
	require.Equal(t, http.StatusCreated, st, ses)
	session := ses["id"].(string)

	// THEN another member finds neither, nor their streams, nor lists the plan
	st, b := withToken(t, bob, "GET", "/v1/plans/"+plan, nil)
	assert.Equal(t, http.StatusNotFound, st, b)
	assert.Contains(t, b["error"].(map[string]any)["message"], plan)
	st, b = withToken(t, bob, "GET", "/v1/plans", nil)
	require.Equal(t, http.StatusOK, st, b)
	assert.Empty(t, itemIDs(b))
	assert.Equal(t, http.StatusNotFound, openStream(t, bob, "/v1/plans/"+plan+"/events"), "another member's plan stream")
	assert.Equal(t, http.StatusNotFound, openStream(t, bob, "/v1/sessions/"+session+"/events"), "another member's session stream")

	// alice reads and lists her plan and opens both streams; an admin and
	// the key read the plan too
	for name, tok := range map[string]string{"alice": alice, "admin": admin} {
		st, b = withToken(t, tok, "GET", "/v1/plans/"+plan, nil)
		require.Equal(t, http.StatusOK, st, "%s: %v", name, b)
		assert.Equal(t, "alice", b["user_id"], name)
	}
	st, b = d.call("GET", "/v1/plans/"+plan, nil)
	require.Equal(t, http.StatusOK, st, b)
	st, b = withToken(t, alice, "GET", "/v1/plans", nil)
	require.Equal(t, http.StatusOK, st, b)
	assert.Equal(t, []string{plan}, itemIDs(b), "a member lists the plans her turns started")
	assert.Equal(t, http.StatusOK, openStream(t, alice, "/v1/plans/"+plan+"/events"))
	assert.Equal(t, http.StatusOK, openStream(t, alice, "/v1/sessions/"+session+"/events"))
	assert.Equal(t, http.StatusForbidden, func() int { st, _ := withToken(t, alice, "POST", "/v1/plans/"+plan+"/cancel", nil); return st }(),
		"cancelling stays with keys and admins")
}

// A person's monthly budget (per_user_usd) over HTTP: with a limit a
// millionth of a dollar above what alice has spent, her next turn is
// refused 422 naming the person's limit and costs nothing; bob's refusal
// at that limit counts his own month; a higher limit lets both go on.
func TestAPersonsBudgetRefusesTheirTurnOverHTTP(t *testing.T) {
	e := mustEnv(t)
	it := newIssuerTeam(t, e)
	mustAgent(t, e, it.id, "penny", &agents.Model{Provider: "local", ID: pricedModel})
	_, err := agents.NewService(e.db.agents).SetDefault(context.Background(), it.id, "penny")
	require.NoError(t, err)
	alice := mint(t, it.issuer, cloud.TokenRequest{User: "alice"})
	bob := mint(t, it.issuer, cloud.TokenRequest{User: "bob"})
	turn := func(token, conv, content string) (int, map[string]any) {
		return withToken(t, token, "POST", "/v1/conversations/"+conv+"/messages", map[string]any{"content": content})
	}
	open := func(token string) string {
		st, c := withToken(t, token, "POST", "/v1/conversations", map[string]any{"title": "budget", "agent": "penny"})
		require.Equal(t, http.StatusCreated, st, c)
		return c["id"].(string)
	}
	spent := func(token string) float64 {
		st, b := withToken(t, token, "GET", "/v1/usage", nil)
		require.Equal(t, http.StatusOK, st, b)
		return num(t, b["total"].(map[string]any), "usd")
	}
	mine := open(alice)
	st, b := turn(alice, mine, "What does a budget protect us from?")
	require.Equal(t, http.StatusCreated, st, b)
	was := spent(alice)
	require.Positive(t, was, "the priced model's call is charged to alice")

	st, b = it.call("PUT", "/v1/budget", map[string]any{"monthly_limit_usd": 1, "per_user_usd": was + 0.000001})
	require.Equal(t, http.StatusOK, st, b)
	st, b = turn(alice, mine, "One more question, please.")
	require.Equal(t, http.StatusUnprocessableEntity, st, b)
	e422 := b["error"].(map[string]any)
	assert.Equal(t, "rejected", e422["code"])
	assert.Equal(t, budget.ReasonUserExhausted, e422["reason"])
	details := e422["details"].(map[string]any)
	assert.Equal(t, "alice", details["user_id"])
	assert.InDelta(t, was+0.000001, num(t, details, "per_user_usd"), 1e-12)
	assert.InDelta(t, was, spent(alice), 1e-12, "the refused call cost nothing")

	// bob's refusal at the same limit is counted on his own month (he has
	// spent nothing; a call's worst case is more than the limit), and a
	// limit above both lets both go on.
	theirs := open(bob)
	st, b = turn(bob, theirs, "What does a budget protect us from?")
	require.Equal(t, http.StatusUnprocessableEntity, st, b)
	details = b["error"].(map[string]any)["details"].(map[string]any)
	assert.Equal(t, "bob", details["user_id"])
	assert.Zero(t, num(t, details, "user_spent_usd"), "bob's month, not alice's")
	st, b = it.call("PUT", "/v1/budget", map[string]any{"monthly_limit_usd": 1, "per_user_usd": 1})
	require.Equal(t, http.StatusOK, st, b)
	st, b = turn(bob, theirs, "What does a budget protect us from?")
	assert.Equal(t, http.StatusCreated, st, b)
	st, b = turn(alice, mine, "One more question, please.")
	assert.Equal(t, http.StatusCreated, st, b)
	assert.Greater(t, spent(alice), was)
	assert.Positive(t, spent(bob))
}
