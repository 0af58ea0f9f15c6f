//go:build integration

// Acting for a user (issue 44, item 2): a key issued with act_as_users
// names the user with X-Conclave-User; the team's ordinary key with the
// same header is refused by the authorizer before anything runs.
package cloud_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/e2e/apitest"
	"github.com/conclave-ai/conclave/shared/team/teams"
)

func TestAKeyIssuedToActAsUsersCallsForAUser(t *testing.T) {
	e := mustEnv(t)
	tm, k, err := teams.NewService(e.db.teams).CreateTeam(t.Context(), "act-as")
	require.NoError(t, err)
	team := demoTeam{id: tm.ID, key: k.Secret, t: t}
	as := func(key, method, path, user string, body any) apitest.Response {
		t.Helper()
		return apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), Key: key, T: t}.Do(method, path, body, "X-Conclave-User", user)
	}

	st, issued := team.call("POST", "/v1/keys", map[string]any{"name": "backend", "act_as_users": true})
	require.Equal(t, 201, st, issued)
	assert.Equal(t, true, issued["act_as_users"])
	st, list := team.call("GET", "/v1/keys", nil)
	require.Equal(t, 200, st, list)
	shown := map[string]any{}
	for _, it := range list["items"].([]any) {
		shown[it.(map[string]any)["name"].(string)] = it.(map[string]any)["act_as_users"]
	}
	assert.Equal(t, map[string]any{"backend": true, "initial": false}, shown)

	server := issued["secret"].(string)
	resp := as(server, "GET", "/v1/keys", "auth0|alice@example.com", nil)
	assert.Equal(t, 200, resp.Status, string(resp.Body))
	resp = as(server, "GET", "/v1/keys", "a b", nil)
	assert.Equal(t, 403, resp.Status, "an unsafe user id: "+string(resp.Body))

	// The ordinary key with the header: 403 from the authorizer, read or
	// write, and the write did not happen.
	resp = as(team.key, "GET", "/v1/keys", "alice", nil)
	assert.Equal(t, 403, resp.Status, string(resp.Body))
	resp = as(team.key, "POST", "/v1/keys", "alice", map[string]any{"name": "sneaky"})
	assert.Equal(t, 403, resp.Status, string(resp.Body))
	st, list = team.call("GET", "/v1/keys", nil)
	require.Equal(t, 200, st, list)
	assert.Len(t, list["items"], 2, "nothing written")
}
