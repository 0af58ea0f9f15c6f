package api_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/tools/catalog"
)

// GET /v1/agents/{slug}/tools: chat by default, task on request, every
// tool with its input schema; a context that is neither (empty included)
// is 400 naming context; an unknown slug, a malformed one and another
// team's agent are 404.
func TestAgentToolsRoute(t *testing.T) {
	a := newInMemoryAPI(t)
	const key = "GET /v1/agents/{slug}/tools"
	get := func(slug string, query map[string]string) (int, string) {
		resp := a.callQuery("GET", "/v1/agents/"+slug+"/tools", key, "", map[string]string{"slug": slug}, query)
		return resp.StatusCode, resp.Body
	}
	for _, c := range []struct {
		query     map[string]string
		context   string
		handoffTo bool
	}{{nil, "chat", true}, {map[string]string{"context": "chat"}, "chat", true}, {map[string]string{"context": "task"}, "task", false}} {
		st, body := get("kyra", c.query)
		require.Equal(t, 200, st, body)
		var got catalog.Offered
		require.NoError(t, json.Unmarshal([]byte(body), &got))
		assert.Equal(t, "kyra", got.Agent)
		assert.Equal(t, c.context, got.Context)
		require.NotEmpty(t, got.Tools)
		var names []string
		for _, tool := range got.Tools {
			names = append(names, tool.Name)
			assert.Equal(t, "object", tool.InputSchema["type"], tool.Name)
			assert.Equal(t, false, tool.InputSchema["additionalProperties"], tool.Name)
		}
		assert.Equal(t, c.handoffTo, contains(names, "handoff_to"), c.context)
		assert.Contains(t, names, "find_colleagues")
	}
	for _, bad := range []string{"batch", "", "CHAT"} {
		st, body := get("kyra", map[string]string{"context": bad})
		assert.Equal(t, 400, st, bad)
		var e httpapi.ErrorBody
		require.NoError(t, json.Unmarshal([]byte(body), &e))
		assert.Equal(t, "context", e.Error.Field, body)
	}
	for _, slug := range []string{"nobody", "NOPE!", "a"} {
		st, body := get(slug, nil)
		assert.Equal(t, 404, st, "%s: %s", slug, body)
	}
	resp := a.callQueryAs("team_other", "GET", "/v1/agents/kyra/tools", key, map[string]string{"slug": "kyra"}, nil)
	assert.Equal(t, 404, resp.StatusCode, "another team's agent: %s", resp.Body)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// callQueryAs serves one request with teamID as the authorizer's team.
func (a inMemoryAPI) callQueryAs(teamID, method, path, routeKey string, params, query map[string]string) events.APIGatewayV2HTTPResponse {
	resp, _ := a.rt.Serve(context.Background(), events.APIGatewayV2HTTPRequest{
		RouteKey: routeKey, RawPath: path, PathParameters: params, QueryStringParameters: query,
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "other",
			HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{"team_id": teamID, "key_id": "key_other"}}},
	})
	return resp
}
