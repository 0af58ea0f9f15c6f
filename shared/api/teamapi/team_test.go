package teamapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/api/teamapi"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/activity"
	"github.com/conclave-ai/conclave/shared/team/teams"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/teamfake"
)

type noActivity struct{}

func (noActivity) Record(context.Context, activity.Entry) error { return nil }
func (noActivity) List(context.Context, string, paging.Page) ([]activity.Entry, string, error) {
	return nil, "", nil
}

func TestKeysAreIssuedAndShownWithActAsUsers(t *testing.T) {
	svc := teams.NewService(teamfake.New(nil))
	team, _, err := svc.CreateTeam(context.Background(), "Platform")
	require.NoError(t, err)
	rt := httpapi.NewRouter(slog.New(slog.NewTextHandler(io.Discard, nil)))
	teamapi.TeamRoutes(rt, svc, noActivity{})
	call := func(routeKey, body string) events.APIGatewayV2HTTPResponse {
		t.Helper()
		method, path, _ := strings.Cut(routeKey, " ")
		resp, err := rt.Serve(context.Background(), events.APIGatewayV2HTTPRequest{RouteKey: routeKey, RawPath: path, Body: body,
			RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "r",
				HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path},
				Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{"team_id": team.ID, "key_id": "key_x"}}}})
		require.NoError(t, err)
		return resp
	}

	resp := call("POST /v1/keys", `{"name":"backend","act_as_users":true}`)
	require.Equal(t, 201, resp.StatusCode, resp.Body)
	var issued map[string]any
	require.NoError(t, json.Unmarshal([]byte(resp.Body), &issued))
	assert.Equal(t, true, issued["act_as_users"])
	resp = call("POST /v1/keys", `{"name":"ci"}`)
	require.Equal(t, 201, resp.StatusCode, resp.Body)

	resp = call("GET /v1/keys", "")
	require.Equal(t, 200, resp.StatusCode, resp.Body)
	var list struct {
		Items []map[string]any `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(resp.Body), &list))
	shown := map[string]any{}
	for _, k := range list.Items {
		shown[k["name"].(string)] = k["act_as_users"]
	}
	assert.Equal(t, map[string]any{"backend": true, "ci": false, "initial": false}, shown, "shown on every key, false by default")

	for _, body := range []string{`{"name":"x","act_as_users":"yes"}`, `{"name":"x","act_as_users":1}`, `{"name":"x","act_as_users":null}`} {
		resp = call("POST /v1/keys", body)
		assert.Equal(t, 400, resp.StatusCode, body)
		assert.Contains(t, resp.Body, "act_as_users", body)
	}
	resp = call("GET /v1/keys", "")
	require.NoError(t, json.Unmarshal([]byte(resp.Body), &list))
	assert.Len(t, list.Items, 3, "a refused body issues no key")
}
