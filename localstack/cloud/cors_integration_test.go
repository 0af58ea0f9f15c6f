//go:build integration

package cloud_test

// Browsers allowed in (issue 44, item 6): the local edge answers the
// preflights of both APIs for its origins (CONCLAVE_CORS_ORIGINS, the
// test's environment as the cloud's), before any authorizer.

import (
	"context"
	"net/http"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/localstack/cloud"
	"github.com/conclave-ai/conclave/shared/team/teams"
)

func TestBrowsersFromListedOriginsAreAllowedIn(t *testing.T) {
	e := mustEnv(t)
	origins := cloud.LocalCORS().Origins
	if len(origins) == 0 {
		t.Skip(cloud.EnvCORSOrigins + " lists no origin")
	}
	origin := origins[0]
	_, key, err := teams.NewService(e.db.teams).CreateTeam(context.Background(), "cors")
	require.NoError(t, err)
	api, stream := os.Getenv("CONCLAVE_BASE_URL"), os.Getenv("CONCLAVE_STREAM_URL")
	require.NotEmpty(t, api, "CONCLAVE_BASE_URL is not set: run make test")
	require.NotEmpty(t, stream, "CONCLAVE_STREAM_URL is not set: run make test")
	do := func(method, url string, header map[string]string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, url, nil)
		require.NoError(t, err)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		return resp
	}
	for name, url := range map[string]string{"HTTP API": api + "/v1/agents", "streaming API": stream + "/v1/plans/plan-none/events"} {
		// A preflight from a listed origin, with no credential: allowed.
		resp := do(http.MethodOptions, url, map[string]string{"Origin": origin, "Access-Control-Request-Method": "GET",
			"Access-Control-Request-Headers": "x-api-key,last-event-id"})
		assert.Equal(t, http.StatusNoContent, resp.StatusCode, name)
		assert.Equal(t, origin, resp.Header.Get("Access-Control-Allow-Origin"), name)
		assert.Contains(t, resp.Header.Get("Access-Control-Allow-Headers"), "X-Api-Key", name)
		assert.Contains(t, resp.Header.Get("Access-Control-Allow-Methods"), "GET", name)
		assert.NotEmpty(t, resp.Header.Get("Access-Control-Max-Age"), name)

		// One from another origin: told nothing, so the browser refuses.
		resp = do(http.MethodOptions, url, map[string]string{"Origin": "https://elsewhere.example.com", "Access-Control-Request-Method": "GET"})
		for k := range resp.Header {
			assert.NotContains(t, k, "Access-Control-Allow", name)
		}

		// The call itself, from the listed origin: its answer names it.
		resp = do(http.MethodGet, url, map[string]string{"Origin": origin, "X-Api-Key": key.Secret, "Accept": "text/event-stream"})
		assert.Contains(t, []int{http.StatusOK, http.StatusNotFound}, resp.StatusCode, name)
		assert.Equal(t, origin, resp.Header.Get("Access-Control-Allow-Origin"), name)
		assert.Contains(t, resp.Header.Get("Access-Control-Expose-Headers"), "Retry-After", name)
	}
	// A streamed answer to another origin names none: the streaming
	// function's own rule (lambdafn.Streamer.AllowOrigins, as in AWS, where
	// no gateway adds it), and it says the answer depends on Origin.
	resp := do(http.MethodGet, stream+"/v1/plans/plan-none/events", map[string]string{"Origin": "https://elsewhere.example.com",
		"X-Api-Key": key.Secret, "Accept": "text/event-stream"})
	assert.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
	assert.Contains(t, resp.Header.Get("Vary"), "Origin")
}
