package authorizer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/logctx"
)

// The authorizer's lines carry the API request id and route, and once the
// key is known its team and key; a denied request's line names no team.
func TestAuthorizerLinesCarryTheRequestAndTeam(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	h, secret := limitedHandler(t, nil, &now)
	h.Rate.PerSecond = 1 // the second request of the second is over the rate, and logged
	var buf bytes.Buffer
	h.Log = logctx.Wrap(slog.New(slog.NewJSONHandler(&buf, nil)))
	handle := func(secret, requestID string) []byte {
		t.Helper()
		buf.Reset()
		_, err := h.Handle(context.Background(), events.APIGatewayV2CustomAuthorizerV2Request{RouteKey: "GET /v1/agents",
			Headers: map[string]string{"x-api-key": secret}, RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: requestID}})
		require.NoError(t, err)
		return bytes.TrimSpace(buf.Bytes())
	}
	decode := func(b []byte) map[string]any {
		t.Helper()
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m), string(b))
		return m
	}

	denied := decode(handle("ck_unknown", "req-denied"))
	assert.Equal(t, "denied", denied["msg"])
	assert.Equal(t, "req-denied", denied["request_id"])
	assert.Equal(t, "GET /v1/agents", denied["route"])
	assert.NotContains(t, denied, "team_id")

	assert.Empty(t, handle(secret, "req-1"), "a request within the rate logs nothing")
	limited := decode(handle(secret, "req-2"))
	assert.Equal(t, "team over its rate limit", limited["msg"])
	assert.Equal(t, "req-2", limited["request_id"])
	assert.Equal(t, "GET /v1/agents", limited["route"])
	assert.NotEmpty(t, limited["team_id"])
	assert.NotEmpty(t, limited["key_id"])
}
