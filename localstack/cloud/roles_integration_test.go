//go:build integration

// Roles and what belongs to a person (issue 44, items 3 and 4), with real
// tokens signed by a local issuer the team registered: a member's
// conversation is theirs, a member's forbidden write changes nothing, and
// only the members an approval policy names decide its approvals.
package cloud_test

import (
	"context"
	"net/http"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/e2e/apitest"
	"github.com/conclave-ai/conclave/localstack/cloud"
)

// registerIssuer registers a fresh local issuer with d and returns its URL.
func (d demoTeam) registerIssuer() string {
	d.t.Helper()
	issuer := oidcBase(d.t) + "/" + freshName()
	st, b := d.call("PUT", "/v1/team/identity", map[string]any{"issuer": issuer, "audiences": []string{cloud.OIDCAudience},
		"admin_claim": cloud.OIDCAdminClaim, "admin_value": cloud.OIDCAdminGroup})
	require.Equal(d.t, 200, st, b)
	return issuer
}

// reason is an error response's reason.
func reason(b map[string]any) string {
	e, _ := b["error"].(map[string]any)
	r, _ := e["reason"].(string)
	return r
}

func itemIDs(b map[string]any) []string {
	var out []string
	items, _ := b["items"].([]any)
	for _, it := range items {
		out = append(out, it.(map[string]any)["id"].(string))
	}
	return out
}

func TestAMembersConversationIsNotFoundToAnotherMember(t *testing.T) {
	d, alice, bob, admin := people(t)

	st, conv := withToken(t, alice, "POST", "/v1/conversations", map[string]any{"title": "Alice's", "agent": "luke"})
	require.Equal(t, http.StatusCreated, st, conv)
	assert.Equal(t, "alice", conv["owner"])
	id := conv["id"].(string)
	st, turn := withToken(t, alice, "POST", "/v1/conversations/"+id+"/messages", map[string]any{"content": "Review my function"})
	require.Equal(t, http.StatusCreated, st, turn)
	keys := d.conversation("luke")
	before := d.messages(id)
	require.NotEmpty(t, before)
	reply := before[len(before)-1]["id"].(string)

	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/v1/conversations/" + id, nil},
		{"GET", "/v1/conversations/" + id + "/messages", nil},
		{"GET", "/v1/conversations/" + id + "/handoffs", nil},
		{"GET", "/v1/conversations/" + id + "/work", nil},
		{"GET", "/v1/conversations/" + id + "/context?agent=luke", nil},
		{"POST", "/v1/conversations/" + id + "/messages", map[string]any{"content": "mine now"}},
		{"POST", "/v1/conversations/" + id + "/messages/" + reply + "/feedback", map[string]any{"rating": 1}},
		{"POST", "/v1/conversations/" + id + "/handoff", map[string]any{"to": "kyra", "reason": "take over"}},
		{"POST", "/v1/conversations/" + id + "/agents", map[string]any{"add": []string{"kyra"}}},
		{"POST", "/v1/conversations/" + id + "/close", nil},
		{"GET", "/v1/conversations/" + keys, nil},
	} {
		st, b := withToken(t, bob, c.method, c.path, c.body)
		assert.Equal(t, http.StatusNotFound, st, "%s %s to another member: %v", c.method, c.path, b)
	}
	// The streaming API's turn, with events and without.
	stream := apitest.Client{Base: os.Getenv("CONCLAVE_STREAM_URL"), T: t}
	for _, accept := range []string{"text/event-stream", "application/json"} {
		resp := stream.Do("POST", "/v1/conversations/"+id+"/messages", map[string]any{"content": "mine now"},
			"Authorization", "Bearer "+bob, "Accept", accept)
		assert.Equal(t, http.StatusNotFound, resp.Status, "a streamed turn (%s) to another member: %s", accept, resp.Body)
		assert.Contains(t, string(resp.Body), `conversation \"`+id, "the function's 404, not the gateway's")
	}
	// Its event stream: refused before it opens (an open stream of
	// another's conversation answers 200 and then events).
	resp := stream.Do("GET", "/v1/conversations/"+id+"/events", nil, "Authorization", "Bearer "+bob, "Accept", "text/event-stream")
	assert.Equal(t, http.StatusNotFound, resp.Status, "another member's event stream: %s", resp.Body)
	assert.Contains(t, string(resp.Body), `conversation \"`+id, "the function's 404, not the gateway's")
	assert.Equal(t, before, d.messages(id), "another member's calls changed nothing")

	for name, get := range map[string]func() (int, map[string]any){
		"alice": func() (int, map[string]any) { return withToken(t, alice, "GET", "/v1/conversations/"+id, nil) },
		"admin": func() (int, map[string]any) { return withToken(t, admin, "GET", "/v1/conversations/"+id, nil) },
		"key":   func() (int, map[string]any) { return d.call("GET", "/v1/conversations/"+id, nil) },
	} {
		st, b := get()
		require.Equal(t, http.StatusOK, st, "%s: %v", name, b)
		assert.Equal(t, "alice", b["owner"], name)
		assert.Equal(t, "open", b["status"], name)
	}

	st, mine := withToken(t, alice, "GET", "/v1/conversations", nil)
	require.Equal(t, http.StatusOK, st, mine)
	assert.Equal(t, []string{id}, itemIDs(mine), "a member lists their own")
	st, none := withToken(t, bob, "GET", "/v1/conversations", nil)
	require.Equal(t, http.StatusOK, st, none)
	assert.Empty(t, itemIDs(none))
	st, b := withToken(t, bob, "GET", "/v1/conversations?owner=alice", nil)
	assert.Equal(t, http.StatusForbidden, st, b)
	st, byOwner := d.call("GET", "/v1/conversations?owner=alice", nil)
	require.Equal(t, http.StatusOK, st, byOwner)
	assert.Equal(t, []string{id}, itemIDs(byOwner), "a key filters by owner")
	st, every := withToken(t, admin, "GET", "/v1/conversations", nil)
	require.Equal(t, http.StatusOK, st, every)
	assert.ElementsMatch(t, []string{id, keys}, itemIDs(every), "an admin lists every one")
}

func TestAMembersForbiddenWriteIsRefusedAndChangesNothing(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	issuer := d.registerIssuer()
	member := mint(t, issuer, cloud.TokenRequest{User: "alice"})
	_, keysBefore := d.call("GET", "/v1/keys", nil)
	_, policyBefore := d.call("GET", "/v1/approval-policy", nil)
	_, budgetBefore := d.call("GET", "/v1/budget", nil)

	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/agents", map[string]any{"slug": "mallory", "name": "Mallory"}},
		{"POST", "/v1/agents/luke/archive", nil},
		{"POST", "/v1/keys", map[string]any{"name": "mine"}},
		{"PUT", "/v1/budget", map[string]any{"monthly_usd": 1}},
		{"PUT", "/v1/approval-policy", map[string]any{"tools": []string{}, "deciders": []string{"alice"}}},
		{"PUT", "/v1/team/identity", map[string]any{"issuer": issuer, "audiences": []string{"x"}}},
		{"GET", "/v1/budget", nil}, // GET /v1/usage is a member's own (userrate_integration_test.go)
		{"GET", "/v1/activity", nil},
	} {
		st, b := withToken(t, member, c.method, c.path, c.body)
		assert.Equal(t, http.StatusForbidden, st, "%s %s: %v", c.method, c.path, b)
		assert.Equal(t, "RoleForbidden", reason(b), "%s %s", c.method, c.path)
	}
	st, _ := d.call("GET", "/v1/agents/mallory", nil)
	assert.Equal(t, http.StatusNotFound, st, "no agent was made")
	st, luke := d.call("GET", "/v1/agents/luke", nil)
	require.Equal(t, http.StatusOK, st)
	assert.Equal(t, "active", luke["status"])
	_, keysAfter := d.call("GET", "/v1/keys", nil)
	assert.Equal(t, keysBefore, keysAfter)
	_, policyAfter := d.call("GET", "/v1/approval-policy", nil)
	assert.Equal(t, policyBefore, policyAfter)
	_, budgetAfter := d.call("GET", "/v1/budget", nil)
	assert.Equal(t, budgetBefore, budgetAfter)
	st, b := d.call("GET", "/v1/team/identity", nil)
	require.Equal(t, http.StatusOK, st, b)
	assert.Equal(t, issuer, b["issuer"], "the registration stands")

	// What a member may do, they do: read agents, start a conversation.
	st, _ = withToken(t, member, "GET", "/v1/agents", nil)
	assert.Equal(t, http.StatusOK, st)
	st, _ = withToken(t, member, "POST", "/v1/conversations", map[string]any{"title": "mine"})
	assert.Equal(t, http.StatusCreated, st)
	// What a person starts records them: user_id beside created_by.
	st, task := withToken(t, member, "POST", "/v1/tasks", map[string]any{"assignee": "luke", "title": "for alice"})
	require.Equal(t, http.StatusCreated, st, task)
	assert.Equal(t, "alice", task["user_id"])
	assert.Equal(t, map[string]any{"type": "user", "id": "alice"}, task["created_by"])
	st, _ = withToken(t, member, "GET", "/v1/tasks/"+task["id"].(string), nil)
	assert.Equal(t, http.StatusOK, st, "a member reads their own task")
	st, byKey := d.call("GET", "/v1/tasks/"+task["id"].(string), nil)
	require.Equal(t, http.StatusOK, st, byKey)
	assert.Equal(t, "alice", byKey["user_id"], "stored")
}

func TestOnlyTheMembersThePolicyNamesDecideApprovals(t *testing.T) {
	e := mustEnv(t)
	d := approvalTeam(t, e, 600)
	st, p := d.call("PUT", "/v1/approval-policy", map[string]any{"tools": []string{"send_agent_message"}, "expiry_seconds": 600, "deciders": []string{"carol"}})
	require.Equal(t, http.StatusOK, st, p)
	assert.Equal(t, []any{"carol"}, p["deciders"])
	issuer := d.registerIssuer()
	bob := mint(t, issuer, cloud.TokenRequest{User: "bob"})
	carol := mint(t, issuer, cloud.TokenRequest{User: "carol"})
	svc, _ := taskService(t, e)
	task, err := svc.Create(context.Background(), d.id, user, executed(d.id, "ava", "Ask luke about the release", 60), false)
	require.NoError(t, err)
	apr := d.pendingApproval(task.ID)
	id := apr["id"].(string)

	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/v1/approvals", nil},
		{"GET", "/v1/approvals/" + id, nil},
		{"POST", "/v1/approvals/" + id, map[string]any{"decision": "approve"}},
	} {
		st, b := withToken(t, bob, c.method, c.path, c.body)
		assert.Equal(t, http.StatusForbidden, st, "%s %s: %v", c.method, c.path, b)
		assert.Equal(t, "ApprovalForbidden", reason(b))
	}
	st, still := d.call("GET", "/v1/approvals/"+id, nil)
	require.Equal(t, http.StatusOK, st, still)
	assert.Equal(t, "pending", still["status"], "bob's decision changed nothing")

	st, list := withToken(t, carol, "GET", "/v1/approvals?task_id="+task.ID, nil)
	require.Equal(t, http.StatusOK, st, list)
	assert.Equal(t, []string{id}, itemIDs(list))
	st, decided := withToken(t, carol, "POST", "/v1/approvals/"+id, map[string]any{"decision": "reject", "reason": "not now"})
	require.Equal(t, http.StatusOK, st, decided)
	assert.Equal(t, "rejected", decided["status"])
	assert.Equal(t, "carol", decided["user_id"], "the approval records who decided")
}
