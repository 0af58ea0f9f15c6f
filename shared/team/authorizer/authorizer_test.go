package authorizer_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/authctx"
	"github.com/conclave-ai/conclave/shared/team/authorizer"
	"github.com/conclave-ai/conclave/shared/team/teams"
)

// keyStore is an in-memory teams.Store holding keys by hash.
type keyStore struct {
	teams.Store
	keys map[string]teams.APIKey
	err  error
	// wait, when set, is the store's answer (a table that stalls).
	wait func(context.Context) error
}

func (s keyStore) APIKeyByHash(ctx context.Context, hash string) (teams.APIKey, error) {
	if s.wait != nil {
		return teams.APIKey{}, s.wait(ctx)
	}
	if s.err != nil {
		return teams.APIKey{}, s.err
	}
	k, ok := s.keys[hash]
	if !ok {
		return teams.APIKey{}, apperr.NotFound("api key", "")
	}
	return k, nil
}

func handler(store keyStore) *authorizer.Handler {
	return &authorizer.Handler{Teams: teams.NewService(store), Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func request(key string) events.APIGatewayV2CustomAuthorizerV2Request {
	return events.APIGatewayV2CustomAuthorizerV2Request{Headers: map[string]string{"x-api-key": key}}
}

func TestAuthorizer(t *testing.T) {
	now := time.Now()
	store := keyStore{keys: map[string]teams.APIKey{
		teams.Hash("ck_live"):    {ID: "key_1", TeamID: "team_a", Status: teams.KeyActive},
		teams.Hash("ck_revoked"): {ID: "key_2", TeamID: "team_a", Status: teams.KeyRevoked, RevokedAt: &now},
	}}
	resp, err := handler(store).Handle(context.Background(), request("ck_live"))
	require.NoError(t, err)
	assert.True(t, resp.IsAuthorized)
	assert.Equal(t, map[string]any{"team_id": "team_a", "key_id": "key_1"}, resp.Context)

	for _, key := range []string{"ck_revoked", "ck_unknown", "", "not-a-key"} {
		resp, err := handler(store).Handle(context.Background(), request(key))
		require.NoError(t, err, key)
		assert.False(t, resp.IsAuthorized, key)
		assert.Empty(t, resp.Context, "a denied request carries no team")
	}
}

// A store outage neither looks like a bad key nor fails the invocation
// (API Gateway's bare 500): the request goes through with no team and
// authctx.Unavailable, and the route answers 503 before anything runs.
func TestAuthorizerStoreFailureLetsTheRouteAnswer503(t *testing.T) {
	resp, err := handler(keyStore{err: apperr.Wrap(apperr.EINTERNAL, errors.New("timeout"), "dynamodb")}).Handle(context.Background(), request("ck_live"))
	require.NoError(t, err)
	assert.True(t, resp.IsAuthorized)
	assert.Equal(t, map[string]any{authctx.Unavailable: true}, resp.Context, "no team: nothing of any team can be read")
}

// The key check ends before the authorizer's own deadline (its time less
// a fifth, at most 500 ms), so a table that never answers still gets an
// answer from the authorizer.
func TestTheKeyCheckLeavesTheAuthorizerTimeToAnswer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var checkDeadline time.Time
	h := handler(keyStore{wait: func(c context.Context) error {
		checkDeadline, _ = c.Deadline()
		<-c.Done()
		return c.Err()
	}})
	resp, err := h.Handle(ctx, request("ck_live"))
	require.NoError(t, err)
	assert.Equal(t, true, resp.Context[authctx.Unavailable])
	dl, _ := ctx.Deadline()
	assert.Equal(t, 200*time.Millisecond, dl.Sub(checkDeadline).Round(100*time.Millisecond), "a fifth of 1 s")
	assert.NoError(t, ctx.Err(), "answered before the invocation's deadline")
}

// stalledCounter is a rate counter whose table never answers.
type stalledCounter struct{}

func (stalledCounter) CountRequest(ctx context.Context, _ string, _ int64) (int, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

func (c stalledCounter) CountUserRequest(ctx context.Context, teamID, _ string, second int64) (int, error) {
	return c.CountRequest(ctx, teamID, second)
}

// The table stalls after the key was read, on the rate count: the
// request is let through (the count is the only thing lost) before the
// authorizer's deadline, not left to time out.
func TestAStalledRateCountStillAnswersBeforeTheDeadline(t *testing.T) {
	store := keyStore{keys: map[string]teams.APIKey{teams.Hash("ck_live"): {ID: "key_1", TeamID: "team_a", Status: teams.KeyActive}}}
	h := handler(store)
	h.Rate = &authorizer.RateLimit{PerSecond: 5, Counter: stalledCounter{}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, err := h.Handle(ctx, request("ck_live"))
	require.NoError(t, err)
	assert.True(t, resp.IsAuthorized)
	assert.Equal(t, "team_a", resp.Context[authorizer.ContextTeamID])
	assert.NoError(t, ctx.Err(), "answered before the invocation's deadline")
}

// The streaming API's REST authorizer event gets the same decision as an
// IAM policy on the method, with the same context; the HTTP API's event,
// through the same entry point, still gets its simple response.
func TestTheRESTEventGetsThePolicyOfTheSameDecision(t *testing.T) {
	store := keyStore{keys: map[string]teams.APIKey{teams.Hash("ck_live"): {ID: "key_1", TeamID: "team_a", Status: teams.KeyActive}}}
	const arn = "arn:aws:execute-api:us-east-1:000000000000:api/dev/GET/v1/sessions/s1/events"
	rest := func(key string) json.RawMessage {
		raw, _ := json.Marshal(events.APIGatewayCustomAuthorizerRequestTypeRequest{Type: "REQUEST", MethodArn: arn,
			Headers: map[string]string{"X-Api-Key": key}, HTTPMethod: "GET", Resource: "/v1/sessions/{id}/events"})
		return raw
	}
	out, err := handler(store).Event(context.Background(), rest("ck_live"))
	require.NoError(t, err)
	allow, ok := out.(events.APIGatewayCustomAuthorizerResponse)
	require.True(t, ok, "%T", out)
	assert.Equal(t, "Allow", allow.PolicyDocument.Statement[0].Effect)
	assert.Equal(t, []string{arn}, allow.PolicyDocument.Statement[0].Resource)
	assert.Equal(t, map[string]any{"team_id": "team_a", "key_id": "key_1"}, allow.Context)
	assert.Equal(t, "team_a", allow.PrincipalID)

	out, err = handler(store).Event(context.Background(), rest("ck_unknown"))
	require.NoError(t, err)
	deny := out.(events.APIGatewayCustomAuthorizerResponse)
	assert.Equal(t, "Deny", deny.PolicyDocument.Statement[0].Effect)
	assert.Empty(t, deny.Context, "a denied request carries no team")

	v2, _ := json.Marshal(events.APIGatewayV2CustomAuthorizerV2Request{Version: "2.0", Type: "REQUEST", Headers: map[string]string{"x-api-key": "ck_live"}})
	out, err = handler(store).Event(context.Background(), v2)
	require.NoError(t, err)
	simple, ok := out.(events.APIGatewayV2CustomAuthorizerSimpleResponse)
	require.True(t, ok, "%T", out)
	assert.True(t, simple.IsAuthorized)
}
