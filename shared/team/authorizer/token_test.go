package authorizer_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/authctx"
	"github.com/conclave-ai/conclave/shared/team/identity"
	"github.com/conclave-ai/conclave/shared/team/teams"
)

// tokens is a TokenVerifier: "good" is alice of team_t, "admin" an admin,
// "down" the table failing, anything else refused.
type tokens struct{}

func (tokens) Verify(_ context.Context, raw string) (identity.Caller, error) {
	switch raw {
	case "good":
		return identity.Caller{TeamID: "team_t", UserID: "alice", Role: identity.RoleMember}, nil
	case "admin":
		return identity.Caller{TeamID: "team_t", UserID: "root", Role: identity.RoleAdmin}, nil
	case "down":
		return identity.Caller{}, errors.New("table down")
	}
	return identity.Caller{}, apperr.New(apperr.EUNAUTHORIZED, "bad token")
}

func bearerRequest(routeKey string, headers map[string]string) events.APIGatewayV2CustomAuthorizerV2Request {
	return events.APIGatewayV2CustomAuthorizerV2Request{RouteKey: routeKey, Headers: headers}
}

func TestABearerTokenActsAsItsTeamWithItsRole(t *testing.T) {
	store := keyStore{keys: map[string]teams.APIKey{teams.Hash("ck_live"): {ID: "key_1", TeamID: "team_a", Status: teams.KeyActive}}}
	h := handler(store)
	h.Tokens = tokens{}
	ctx := context.Background()

	resp, err := h.Handle(ctx, bearerRequest("GET /v1/agents", map[string]string{"authorization": "Bearer good"}))
	require.NoError(t, err)
	assert.True(t, resp.IsAuthorized)
	assert.Equal(t, map[string]any{"team_id": "team_t", "user_id": "alice", "role": "member"}, resp.Context, "no key id")
	resp, _ = h.Handle(ctx, bearerRequest("GET /v1/agents", map[string]string{"authorization": "bearer admin"}))
	assert.Equal(t, "admin", resp.Context[authctx.Role])
	// A write passes with its role: the route function decides what a
	// member may call (manifest.MemberRoutes), before anything runs.
	resp, _ = h.Handle(ctx, bearerRequest("POST /v1/agents", map[string]string{"authorization": "Bearer good"}))
	assert.True(t, resp.IsAuthorized)
	assert.Equal(t, "member", resp.Context[authctx.Role])

	for name, c := range map[string]struct {
		route  string
		header map[string]string
	}{
		"a refused token": {"GET /v1/agents", map[string]string{"authorization": "Bearer forged"}},
		"not bearer":      {"GET /v1/agents", map[string]string{"authorization": "Basic good"}},
		"empty bearer":    {"GET /v1/agents", map[string]string{"authorization": "Bearer "}},
		"no credential":   {"GET /v1/agents", map[string]string{}},
	} {
		resp, err := h.Handle(ctx, bearerRequest(c.route, c.header))
		require.NoError(t, err, name)
		assert.False(t, resp.IsAuthorized, name)
		assert.Empty(t, resp.Context, name)
	}

	// The table failing is no denial: the route answers 503.
	resp, _ = h.Handle(ctx, bearerRequest("GET /v1/agents", map[string]string{"authorization": "Bearer down"}))
	assert.Equal(t, map[string]any{authctx.Unavailable: true}, resp.Context)
	assert.True(t, resp.IsAuthorized)

	// A key is checked as a key, whatever else the request carries.
	resp, _ = h.Handle(ctx, bearerRequest("POST /v1/conversations", map[string]string{"x-api-key": "ck_live", "authorization": "Bearer good"}))
	assert.Equal(t, map[string]any{"team_id": "team_a", "key_id": "key_1"}, resp.Context)

	// The streaming API's event: the same decision by method.
	rest := func(method string) events.APIGatewayCustomAuthorizerResponse {
		out, err := h.HandleREST(ctx, events.APIGatewayCustomAuthorizerRequestTypeRequest{MethodArn: "arn", HTTPMethod: method, Resource: "/v1/x",
			Headers: map[string]string{"Authorization": "Bearer good"}})
		require.NoError(t, err)
		return out
	}
	assert.Equal(t, "Allow", rest("GET").PolicyDocument.Statement[0].Effect)
	assert.Equal(t, "team_t", rest("GET").PrincipalID)
	// A write too: the route function decides by role (httpapi.Router).
	assert.Equal(t, "Allow", rest("POST").PolicyDocument.Statement[0].Effect)
}
