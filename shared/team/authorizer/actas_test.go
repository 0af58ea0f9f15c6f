package authorizer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/logctx"
	"github.com/conclave-ai/conclave/shared/team/authorizer"
	"github.com/conclave-ai/conclave/shared/team/teams"
)

// actAsStore holds ck_server, issued with act_as_users, and ck_plain, not.
func actAsStore() keyStore {
	return keyStore{keys: map[string]teams.APIKey{
		teams.Hash("ck_server"): {ID: "key_s", TeamID: "team_a", Status: teams.KeyActive, ActAsUsers: true},
		teams.Hash("ck_plain"):  {ID: "key_p", TeamID: "team_a", Status: teams.KeyActive},
	}}
}

func actAsRequest(key, user string) events.APIGatewayV2CustomAuthorizerV2Request {
	return events.APIGatewayV2CustomAuthorizerV2Request{RouteKey: "POST /v1/conversations",
		Headers: map[string]string{"x-api-key": key, authorizer.ActAsHeader: user}}
}

func TestAKeyWithActAsUsersActsForTheNamedUser(t *testing.T) {
	h := handler(actAsStore())
	ctx := context.Background()

	resp, err := h.Handle(ctx, actAsRequest("ck_server", "auth0|alice@example.com"))
	require.NoError(t, err)
	assert.True(t, resp.IsAuthorized)
	assert.Equal(t, map[string]any{"team_id": "team_a", "key_id": "key_s", "user_id": "auth0|alice@example.com", "role": "admin"},
		resp.Context, "the user and role as a token sets them, the key's writes allowed")

	// Without the header the key is itself.
	resp, _ = h.Handle(ctx, request("ck_server"))
	assert.Equal(t, map[string]any{"team_id": "team_a", "key_id": "key_s"}, resp.Context)

	// The streaming API's event: the header in the REST API's case.
	out, err := h.HandleREST(ctx, events.APIGatewayCustomAuthorizerRequestTypeRequest{MethodArn: "arn", HTTPMethod: "POST", Resource: "/v1/x",
		Headers: map[string]string{"X-Api-Key": "ck_server", "X-Conclave-User": "bob"}})
	require.NoError(t, err)
	assert.Equal(t, "Allow", out.PolicyDocument.Statement[0].Effect)
	assert.Equal(t, "bob", out.Context["user_id"])
}

func TestTheActAsHeaderIsRefusedOnAnotherKeyOrWithAnUnsafeValue(t *testing.T) {
	h := handler(actAsStore())
	h.Tokens = tokens{}
	ctx := context.Background()
	longest := strings.Repeat("u", 128)

	resp, _ := h.Handle(ctx, actAsRequest("ck_server", longest))
	assert.True(t, resp.IsAuthorized, "128 characters")
	assert.Equal(t, longest, resp.Context["user_id"])

	for name, c := range map[string]struct{ key, user string }{
		"a key without act_as_users":  {"ck_plain", "alice"},
		"129 characters":              {"ck_server", longest + "u"},
		"empty (refused, not absent)": {"ck_server", ""},
		"a space":                     {"ck_server", "alice smith"},
		"a slash":                     {"ck_server", "team/alice"},
		"a comma (two headers)":       {"ck_server", "alice,bob"},
		"non-ASCII":                   {"ck_server", "alicé"},
		"a control character":         {"ck_server", "alice\n"},
	} {
		resp, err := h.Handle(ctx, actAsRequest(c.key, c.user))
		require.NoError(t, err, name)
		assert.False(t, resp.IsAuthorized, name)
		assert.Empty(t, resp.Context, name)
	}

	// A token names its user itself: the header beside it is refused.
	resp, _ = h.Handle(ctx, bearerRequest("GET /v1/agents", map[string]string{"authorization": "Bearer good", authorizer.ActAsHeader: "bob"}))
	assert.False(t, resp.IsAuthorized)
}

func TestARefusedActAsHeaderLogsWhy(t *testing.T) {
	h := handler(actAsStore())
	var buf bytes.Buffer
	h.Log = logctx.Wrap(slog.New(slog.NewJSONHandler(&buf, nil)))
	for key, reason := range map[string]string{
		"ck_plain":  "X-Conclave-User on a key not issued with act_as_users",
		"ck_server": "X-Conclave-User is not a user id of 1 to 128 safe characters",
	} {
		buf.Reset()
		user := "alice"
		if key == "ck_server" {
			user = "alice smith"
		}
		_, err := h.Handle(context.Background(), actAsRequest(key, user))
		require.NoError(t, err)
		var line map[string]any
		require.NoError(t, json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &line), buf.String())
		assert.Equal(t, "denied", line["msg"])
		assert.Equal(t, reason, line["reason"])
		assert.NotContains(t, buf.String(), "ck_", "no secret in the log")
	}
}
