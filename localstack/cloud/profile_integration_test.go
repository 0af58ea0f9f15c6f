//go:build integration

// What belongs to a person, beyond conversations (issue 44, item 4), with
// real tokens from the local issuer: a person's user profile reaches only
// their own turns, and the tasks, sessions and reports a member starts are
// theirs to read back.
package cloud_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/localstack/cloud"
)

// people is a fresh demo team with a local issuer registered, and tokens
// of two members (alice, bob) and an admin (root) it signed.
func people(t *testing.T) (d demoTeam, alice, bob, admin string) {
	t.Helper()
	d = mustDemoTeam(t, mustEnv(t))
	issuer := d.registerIssuer()
	return d, mint(t, issuer, cloud.TokenRequest{User: "alice"}), mint(t, issuer, cloud.TokenRequest{User: "bob"}),
		mint(t, issuer, cloud.TokenRequest{User: "root", Admin: true})
}

// profiles are the contents of a context answer's user profile.
func profiles(t *testing.T, b map[string]any) []string {
	t.Helper()
	mem, ok := b["memories"].(map[string]any)
	require.True(t, ok, "a memory context: %v", b)
	var out []string
	list, _ := mem["user_profile"].([]any)
	for _, m := range list {
		out = append(out, m.(map[string]any)["content"].(string))
	}
	return out
}

func TestAMembersProfileReachesOnlyTheirOwnTurns(t *testing.T) {
	d, alice, bob, admin := people(t)

	// GIVEN the team's default profile, alice's (named by the key) and
	// the admin's own (written with their token)
	write := func(call func(string, string, any) (int, map[string]any), body map[string]any) map[string]any {
		t.Helper()
		body["type"], body["visibility"] = "user_profile", "shared"
		st, m := call("POST", "/v1/agents/luke/memories", body)
		require.Equal(t, http.StatusCreated, st, m)
		return m
	}
	key := func(m, p string, b any) (int, map[string]any) { return d.call(m, p, b) }
	asAdmin := func(m, p string, b any) (int, map[string]any) { return withToken(t, admin, m, p, b) }
	def := write(key, map[string]any{"content": "The team answers in English"})
	assert.Nil(t, def["user_id"], "a key's own: the team's default")
	mine := write(key, map[string]any{"content": "Alice is a night-shift nurse", "user_id": "alice"})
	assert.Equal(t, "alice", mine["user_id"])
	roots := write(asAdmin, map[string]any{"content": "Root runs the platform"})
	assert.Equal(t, "root", roots["user_id"], "a person's own write is theirs")
	st, b := d.call("POST", "/v1/agents/luke/memories", map[string]any{"type": "fact", "content": "x", "user_id": "alice"})
	assert.Equal(t, http.StatusBadRequest, st, "only a profile belongs to a person: %v", b)

	// WHEN each asks luke in their own conversation THEN luke's context
	// holds the defaults and the asker's own profile only
	context := func(token string) []string {
		t.Helper()
		call := func(m, p string, body any) (int, map[string]any) { return withToken(t, token, m, p, body) }
		if token == "" {
			call = key
		}
		st, conv := call("POST", "/v1/conversations", map[string]any{"title": "profile", "agent": "luke"})
		require.Equal(t, http.StatusCreated, st, conv)
		id := conv["id"].(string)
		st, turn := call("POST", "/v1/conversations/"+id+"/messages", map[string]any{"content": "What should I eat before work?"})
		require.Equal(t, http.StatusCreated, st, turn)
		var got []string
		for range 2 { // built, then from the cache
			st, ctx := call("GET", "/v1/conversations/"+id+"/context?agent=luke", nil)
			require.Equal(t, http.StatusOK, st, ctx)
			got = profiles(t, ctx)
		}
		return got
	}
	assert.ElementsMatch(t, []string{"Alice is a night-shift nurse", "The team answers in English"}, context(alice))
	assert.ElementsMatch(t, []string{"The team answers in English"}, context(bob), "bob reads no one else's")
	assert.ElementsMatch(t, []string{"Root runs the platform", "The team answers in English"}, context(admin))
	assert.ElementsMatch(t, []string{"The team answers in English"}, context(""), "a key's own turn: the defaults only")
}

func TestWhatAMemberStartsIsTheirsToReadBack(t *testing.T) {
	d, alice, bob, admin := people(t)

	for _, c := range []struct{ kind, base string }{{"task", "/v1/tasks"}, {"report", "/v1/reports"}} {
		body := map[string]any{"assignee": "luke", "title": "for alice"}
		if c.kind == "report" {
			body = map[string]any{"type": "code_review", "to": "luke", "title": "for alice", "parameters": map[string]any{"files": []string{"src/"}}}
		}
		st, made := withToken(t, alice, "POST", c.base, body)
		require.Equal(t, http.StatusCreated, st, made)
		id := made["id"].(string)

		st, b := withToken(t, bob, "GET", c.base+"/"+id, nil)
		assert.Equal(t, http.StatusNotFound, st, "another member's %s: %v", c.kind, b)
		st, b = withToken(t, bob, "GET", c.base+"/"+id+"?wait=2", nil)
		assert.Equal(t, http.StatusNotFound, st, "another member's %s, waited on: %v", c.kind, b)
		st, list := withToken(t, bob, "GET", c.base, nil)
		require.Equal(t, http.StatusOK, st, list)
		assert.NotContains(t, itemIDs(list), id, "another member lists none of alice's")

		st, b = withToken(t, alice, "GET", c.base+"/"+id, nil)
		require.Equal(t, http.StatusOK, st, b)
		assert.Equal(t, "alice", b["user_id"])
		st, list = withToken(t, alice, "GET", c.base, nil)
		require.Equal(t, http.StatusOK, st, list)
		assert.Contains(t, itemIDs(list), id)
		for _, it := range list["items"].([]any) {
			assert.Equal(t, "alice", it.(map[string]any)["user_id"], "a member lists their own only")
		}
		st, b = withToken(t, admin, "GET", c.base+"/"+id, nil)
		assert.Equal(t, http.StatusOK, st, "an admin reads it: %v", b)
		st, b = d.call("GET", c.base+"/"+id, nil)
		assert.Equal(t, http.StatusOK, st, "the key reads it: %v", b)
	}
}
