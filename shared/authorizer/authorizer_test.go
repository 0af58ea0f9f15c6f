package authorizer_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/apperr"
	"github.com/conclave-ai/conclave/shared/authorizer"
	"github.com/conclave-ai/conclave/shared/teams"
)

// keyStore is an in-memory teams.Store holding keys by hash.
type keyStore struct {
	teams.Store
	keys map[string]teams.APIKey
	err  error
}

func (s keyStore) APIKeyByHash(_ context.Context, hash string) (teams.APIKey, error) {
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

// A store outage fails the invocation (API Gateway answers 500) instead of
// looking like a bad key.
func TestAuthorizerStoreFailureIsAnError(t *testing.T) {
	_, err := handler(keyStore{err: apperr.Wrap(apperr.EINTERNAL, errors.New("timeout"), "dynamodb")}).Handle(context.Background(), request("ck_live"))
	assert.Error(t, err)
}
