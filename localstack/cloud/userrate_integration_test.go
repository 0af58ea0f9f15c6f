//go:build integration

package cloud_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/localstack/cloud"
	"github.com/conclave-ai/conclave/shared/store/identitystore"
	"github.com/conclave-ai/conclave/shared/team/authorizer"
	"github.com/conclave-ai/conclave/shared/team/identity"
	"github.com/conclave-ai/conclave/shared/team/teams"
)

// A person's rate (issue 44, item 5) with real tokens signed by the local
// issuer, verified and counted on the real table: with a team rate of 10,
// each person may make 2 requests a second (a fifth); the third is marked
// with the person's rate, another person of the team goes on; of 12
// concurrent requests of one person in a second exactly 2 pass.
func TestUserRateLimitWithRealTokens(t *testing.T) {
	e := mustEnv(t)
	it := newIssuerTeam(t, e)
	alice := mint(t, it.issuer, cloud.TokenRequest{User: "alice"})
	bob := mint(t, it.issuer, cloud.TokenRequest{User: "bob"})
	second := time.Now().Add(2 * time.Hour) // a second no other request uses
	h := &authorizer.Handler{Teams: teams.NewService(e.db.teams), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Rate:   &authorizer.RateLimit{PerSecond: 10, Counter: e.db.core, Now: func() time.Time { return second }},
		Tokens: &identity.Verifier{Pairs: identitystore.New(e.db.core.DB, e.db.core.Table), Keys: &identity.KeyCache{Client: http.DefaultClient}}}
	authz := func(token string) map[string]any {
		t.Helper()
		resp, err := h.Handle(context.Background(), events.APIGatewayV2CustomAuthorizerV2Request{RouteKey: "GET /v1/agents",
			Headers: map[string]string{"authorization": "Bearer " + token}})
		require.NoError(t, err)
		require.True(t, resp.IsAuthorized)
		require.Equal(t, it.id, resp.Context[authorizer.ContextTeamID])
		return resp.Context
	}
	for i := range 2 {
		assert.NotContains(t, authz(alice), authorizer.ContextRateLimited, "alice's request %d", i+1)
	}
	third := authz(alice)
	assert.Equal(t, true, third[authorizer.ContextRateLimited])
	assert.Equal(t, 2, third[authorizer.ContextUserRateLimit], "the person's rate, named")
	assert.NotContains(t, authz(bob), authorizer.ContextRateLimited, "bob has his own")

	second = second.Add(time.Second)
	var limited, byUser atomic.Int32
	var wg sync.WaitGroup
	for range 12 {
		wg.Go(func() {
			c := authz(alice)
			if c[authorizer.ContextRateLimited] == true {
				limited.Add(1)
			}
			if c[authorizer.ContextUserRateLimit] == 2 {
				byUser.Add(1)
			}
		})
	}
	wg.Wait()
	assert.EqualValues(t, 10, limited.Load(), "two pass")
	assert.EqualValues(t, 8, byUser.Load(), "of the team's ten, alice's two pass and eight are over her rate; the other two are over the team's")
}

// per_user_usd through the API (issue 44, item 5): validated against the
// team's limit, stored with it; GET /v1/usage by user for the key and an
// admin, a member's own only; a member sets no budget.
func TestPerUserBudgetAndUsageThroughTheAPI(t *testing.T) {
	e := mustEnv(t)
	it := newIssuerTeam(t, e)
	st, b := it.call("PUT", "/v1/budget", map[string]any{"monthly_limit_usd": 10, "per_user_usd": 10.01})
	require.Equal(t, 400, st, b)
	assert.Equal(t, "per_user_usd", b["error"].(map[string]any)["field"], "one past the team's limit")
	st, b = it.call("PUT", "/v1/budget", map[string]any{"monthly_limit_usd": 10, "per_user_usd": 10})
	require.Equal(t, 200, st, b)
	assert.EqualValues(t, 10, b["per_user_usd"], "the team's limit exactly")
	st, b = it.call("GET", "/v1/budget", nil)
	require.Equal(t, 200, st, b)
	assert.EqualValues(t, 10, b["per_user_usd"])

	admin := mint(t, it.issuer, cloud.TokenRequest{User: "root", Admin: true})
	member := mint(t, it.issuer, cloud.TokenRequest{User: "alice"})
	st, b = withToken(t, admin, "GET", "/v1/usage?group_by=user", nil)
	require.Equal(t, 200, st, b)
	assert.Equal(t, "user", b["group_by"])
	assert.NotContains(t, b, "user_id", "the team's usage")
	st, b = withToken(t, member, "GET", "/v1/usage", nil)
	require.Equal(t, 200, st, b)
	assert.Equal(t, "alice", b["user_id"], "a member's own usage")
	st, _ = withToken(t, member, "PUT", "/v1/budget", map[string]any{"monthly_limit_usd": 1000})
	assert.Equal(t, 403, st)
}
