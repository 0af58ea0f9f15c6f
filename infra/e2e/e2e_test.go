//go:build e2e

// Package e2e is the end-to-end suite: it talks only HTTP to a base URL with
// API keys, so it runs unchanged against `make run`, LocalStack or a deployed
// stage (make e2e BASE_URL=… API_KEY=… OTHER_API_KEY=…). The two keys must
// belong to two different teams. Each test uses its own agent slugs.
package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/e2e/apitest"
)

// client is the shared API client with the suite's shorthand.
type client struct{ apitest.Client }

func clients(t *testing.T) (mine, other client) {
	t.Helper()
	base, key, otherKey := os.Getenv("CONCLAVE_BASE_URL"), os.Getenv("CONCLAVE_API_KEY"), os.Getenv("CONCLAVE_OTHER_API_KEY")
	if base == "" || key == "" || otherKey == "" {
		t.Fatal("set CONCLAVE_BASE_URL, CONCLAVE_API_KEY and CONCLAVE_OTHER_API_KEY (make test and make e2e do)")
	}
	return newClient(t, base, key), newClient(t, base, otherKey)
}

func newClient(t *testing.T, base, key string) client {
	return client{apitest.Client{Base: base, Key: key, T: t}}
}

type response = apitest.Response

func (c client) do(method, path string, body any, headers ...string) response {
	c.T.Helper()
	return c.Do(method, path, body, headers...)
}

func uniqueSlug(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1_000_000_000)
}

func agentBody(slug string) map[string]any {
	return map[string]any{
		"slug": slug, "name": "Test " + slug, "tagline": "e2e agent",
		"personality": map[string]any{"formality": 0.4, "humor": 0.6, "technical_depth": 0.7, "description": "terse"},
		"skills":      []any{map[string]any{"name": "code-review", "description": "reviews code", "keywords": []string{"review"}, "priority": 60}},
	}
}

func TestHealthReportsEveryDependency(t *testing.T) {
	me, _ := clients(t)
	r := me.do("GET", "/v1/health", nil)
	require.Equal(t, 200, r.Status, string(r.Body))
	body := r.JSON(t)
	assert.Equal(t, "ok", body["status"])
	names := map[string]bool{}
	for _, d := range body["dependencies"].([]any) {
		d := d.(map[string]any)
		names[d["name"].(string)] = true
		assert.Equal(t, "ok", d["status"], d["name"])
	}
	assert.True(t, names["dynamodb"] && names["eventbridge"] && names["stepfunctions:delegation"], "%v", names)
}

func TestRequestsWithoutAValidKeyAreRefused(t *testing.T) {
	me, _ := clients(t)
	anon := newClient(t, me.Base, "")
	assert.Equal(t, 401, anon.do("GET", "/v1/agents", nil).Status)
	bad := newClient(t, me.Base, "ck_not_a_real_key")
	assert.Equal(t, 403, bad.do("GET", "/v1/agents", nil).Status)
	slug := uniqueSlug("anon")
	assert.Equal(t, 401, anon.do("POST", "/v1/agents", agentBody(slug)).Status)
	assert.Equal(t, 404, me.do("GET", "/v1/agents/"+slug, nil).Status, "a refused request wrote nothing")
}

func TestAgentLifecycle(t *testing.T) {
	me, _ := clients(t)
	slug := uniqueSlug("life")
	r := me.do("POST", "/v1/agents", agentBody(slug))
	require.Equal(t, 201, r.Status, string(r.Body))
	assert.NotEmpty(t, r.Header.Get("X-Request-Id"))
	a := r.JSON(t)
	assert.Equal(t, slug, a["slug"])
	assert.Equal(t, "active", a["status"])
	assert.Equal(t, float64(1), a["version"])

	got := me.do("GET", "/v1/agents/"+slug, nil)
	require.Equal(t, 200, got.Status)
	assert.Equal(t, "Test "+slug, got.JSON(t)["name"])

	up := me.do("PATCH", "/v1/agents/"+slug, map[string]any{"tagline": "updated", "version": 1})
	require.Equal(t, 200, up.Status, string(up.Body))
	assert.Equal(t, "updated", up.JSON(t)["tagline"])
	stale := me.do("PATCH", "/v1/agents/"+slug, map[string]any{"tagline": "stale", "version": 1})
	assert.Equal(t, 409, stale.Status, "a stale version is a conflict")

	assert.Equal(t, "paused", me.do("POST", "/v1/agents/"+slug+"/pause", nil).JSON(t)["status"])
	assert.Equal(t, "active", me.do("POST", "/v1/agents/"+slug+"/activate", nil).JSON(t)["status"])
	assert.Equal(t, "archived", me.do("POST", "/v1/agents/"+slug+"/archive", nil).JSON(t)["status"])
	list := me.do("GET", "/v1/agents?status=archived&limit=100", nil)
	require.Equal(t, 200, list.Status)
	assert.Contains(t, string(list.Body), `"slug":"`+slug+`"`)
}

// Racing creates of one slug: exactly one wins, in every one of many rounds
// (a race that slips through now and then shows only over rounds).
func TestDuplicateSlugIsConflictEvenUnderConcurrency(t *testing.T) {
	me, _ := clients(t)
	const rounds, n = 10, 8
	for r := range rounds {
		slug := uniqueSlug("dup")
		statuses := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() { defer wg.Done(); statuses[i] = me.do("POST", "/v1/agents", agentBody(slug)).Status }()
		}
		wg.Wait()
		created, conflicts := 0, 0
		for _, s := range statuses {
			switch s {
			case 201:
				created++
			case 409:
				conflicts++
			}
		}
		require.Equal(t, 1, created, "round %d", r)
		require.Equal(t, n-1, conflicts, "round %d", r)
		_, _, reason := me.do("POST", "/v1/agents", agentBody(slug)).ErrorFields(t)
		assert.Equal(t, "DuplicateSlug", reason)
	}
}

func TestBadBodiesNameTheFieldAndWriteNothing(t *testing.T) {
	me, _ := clients(t)
	cases := []struct {
		name  string
		body  any
		field string
	}{
		{"bad slug", map[string]any{"slug": "Bad Slug", "name": "x"}, "slug"},
		{"unknown field", map[string]any{"slug": uniqueSlug("unk"), "name": "x", "colour": "red"}, "colour"},
		{"wrong type", map[string]any{"slug": uniqueSlug("typ"), "name": 42}, "name"},
		{"personality out of range", map[string]any{"slug": uniqueSlug("per"), "name": "x", "personality": map[string]any{"humor": 2}}, "personality.humor"},
		{"not JSON", `{"slug":`, "body"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := me.do("POST", "/v1/agents", c.body)
			require.Equal(t, 400, r.Status, string(r.Body))
			code, field, _ := r.ErrorFields(t)
			assert.Equal(t, "invalid_request", code)
			assert.Equal(t, c.field, field)
			if m, ok := c.body.(map[string]any); ok {
				if slug, ok := m["slug"].(string); ok && !strings.Contains(slug, " ") {
					assert.Equal(t, 404, me.do("GET", "/v1/agents/"+slug, nil).Status, "nothing was written")
				}
			}
		})
	}
	big := agentBody(uniqueSlug("big"))
	big["tagline"] = strings.Repeat("x", 70<<10)
	r := me.do("POST", "/v1/agents", big)
	assert.Equal(t, 413, r.Status)
	code, _, _ := r.ErrorFields(t)
	assert.Equal(t, "payload_too_large", code)
	assert.Equal(t, 404, me.do("GET", "/v1/agents/"+big["slug"].(string), nil).Status)
}

func TestAnotherTeamsAgentIsNotFound(t *testing.T) {
	me, other := clients(t)
	slug := uniqueSlug("mine")
	require.Equal(t, 201, me.do("POST", "/v1/agents", agentBody(slug)).Status)

	for _, r := range []response{
		other.do("GET", "/v1/agents/"+slug, nil),
		other.do("PATCH", "/v1/agents/"+slug, map[string]any{"name": "hijacked"}),
		other.do("POST", "/v1/agents/"+slug+"/archive", nil),
		other.do("PUT", "/v1/team/default-agent", map[string]any{"slug": slug}),
	} {
		assert.Equal(t, 404, r.Status, string(r.Body))
		code, _, _ := r.ErrorFields(t)
		assert.Equal(t, "not_found", code)
	}
	got := me.do("GET", "/v1/agents/"+slug, nil).JSON(t)
	assert.Equal(t, "Test "+slug, got["name"], "the other team changed nothing")
	assert.Equal(t, "active", got["status"])
	assert.NotContains(t, string(other.do("GET", "/v1/agents?limit=100", nil).Body), slug)

	// The same slug is free in the other team: slugs are per team.
	assert.Equal(t, 201, other.do("POST", "/v1/agents", agentBody(slug)).Status)
}

func TestDefaultAgentMustStayActive(t *testing.T) {
	me, _ := clients(t)
	team := me.do("GET", "/v1/team", nil).JSON(t)
	prev, _ := team["default_agent"].(string)
	slug := uniqueSlug("def")
	require.Equal(t, 201, me.do("POST", "/v1/agents", agentBody(slug)).Status)
	r := me.do("PUT", "/v1/team/default-agent", map[string]any{"slug": slug})
	require.Equal(t, 200, r.Status, string(r.Body))
	assert.Equal(t, true, r.JSON(t)["is_default"])

	r = me.do("POST", "/v1/agents/"+slug+"/pause", nil)
	assert.Equal(t, 409, r.Status)
	_, _, reason := r.ErrorFields(t)
	assert.Equal(t, "DefaultAgent", reason)
	assert.Equal(t, "active", me.do("GET", "/v1/agents/"+slug, nil).JSON(t)["status"])

	paused := uniqueSlug("psd")
	body := agentBody(paused)
	body["status"] = "paused"
	require.Equal(t, 201, me.do("POST", "/v1/agents", body).Status)
	assert.Equal(t, 409, me.do("PUT", "/v1/team/default-agent", map[string]any{"slug": paused}).Status)
	if prev != "" {
		require.Equal(t, 200, me.do("PUT", "/v1/team/default-agent", map[string]any{"slug": prev}).Status)
	}
}

func TestPaginationWalksEveryAgentOnce(t *testing.T) {
	me, _ := clients(t)
	for range 3 {
		require.Equal(t, 201, me.do("POST", "/v1/agents", agentBody(uniqueSlug("page"))).Status)
	}
	seen := map[string]bool{}
	token := ""
	for pages := 0; pages < 100; pages++ {
		path := "/v1/agents?limit=2"
		if token != "" {
			path += "&next_token=" + token
		}
		r := me.do("GET", path, nil)
		require.Equal(t, 200, r.Status, string(r.Body))
		var page struct {
			Items     []struct{ Slug string }
			NextToken string `json:"next_token"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &page))
		assert.LessOrEqual(t, len(page.Items), 2)
		for _, a := range page.Items {
			assert.False(t, seen[a.Slug], "agent %s listed twice", a.Slug)
			seen[a.Slug] = true
		}
		if page.NextToken == "" {
			break
		}
		token = page.NextToken
	}
	assert.GreaterOrEqual(t, len(seen), 3)
	assert.Equal(t, 400, me.do("GET", "/v1/agents?next_token=garbage", nil).Status)
	assert.Equal(t, 400, me.do("GET", "/v1/agents?limit=1000", nil).Status)
}

func TestIdempotencyKeyCreatesOnce(t *testing.T) {
	me, _ := clients(t)
	slug := uniqueSlug("idem")
	key := "idem-" + slug
	first := me.do("POST", "/v1/agents", agentBody(slug), "Idempotency-Key", key)
	require.Equal(t, 201, first.Status, string(first.Body))
	again := me.do("POST", "/v1/agents", agentBody(slug), "Idempotency-Key", key)
	assert.Equal(t, 201, again.Status, "the first response is returned again, not a 409")
	assert.Equal(t, first.Body, again.Body)
	assert.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	other := agentBody(uniqueSlug("idem2"))
	r := me.do("POST", "/v1/agents", other, "Idempotency-Key", key)
	assert.Equal(t, 409, r.Status)
	assert.Equal(t, 404, me.do("GET", "/v1/agents/"+other["slug"].(string), nil).Status)
}

func TestKeysRotateAndRevoke(t *testing.T) {
	me, _ := clients(t)
	r := me.do("POST", "/v1/keys", map[string]any{"name": "ci"})
	require.Equal(t, 201, r.Status, string(r.Body))
	k := r.JSON(t)
	secret, id := k["secret"].(string), k["id"].(string)
	ci := newClient(t, me.Base, secret)
	assert.Equal(t, 200, ci.do("GET", "/v1/team", nil).Status, "a new key works")
	assert.NotContains(t, string(me.do("GET", "/v1/keys", nil).Body), secret, "secrets are never listed")

	rot := ci.do("POST", "/v1/keys/"+id+"/rotate", nil)
	require.Equal(t, 201, rot.Status, string(rot.Body))
	newSecret := rot.JSON(t)["secret"].(string)
	newID := rot.JSON(t)["id"].(string)
	assert.Equal(t, 403, ci.do("GET", "/v1/team", nil).Status, "the rotated key stops working at once")
	rotated := newClient(t, me.Base, newSecret)
	assert.Equal(t, 200, rotated.do("GET", "/v1/team", nil).Status)

	assert.Equal(t, 200, me.do("DELETE", "/v1/keys/"+newID, nil).Status)
	assert.Equal(t, 403, rotated.do("GET", "/v1/team", nil).Status, "a revoked key stops working")
	assert.Equal(t, 409, me.do("DELETE", "/v1/keys/"+newID, nil).Status, "revoking twice is a conflict")
}

func TestAnotherTeamsKeyIsNotFound(t *testing.T) {
	me, other := clients(t)
	r := me.do("POST", "/v1/keys", map[string]any{"name": "private"})
	require.Equal(t, 201, r.Status)
	id := r.JSON(t)["id"].(string)
	assert.Equal(t, 404, other.do("DELETE", "/v1/keys/"+id, nil).Status)
	assert.Equal(t, 404, other.do("POST", "/v1/keys/"+id+"/rotate", nil).Status)
	assert.Equal(t, 200, newClient(t, me.Base, r.JSON(t)["secret"].(string)).do("GET", "/v1/team", nil).Status, "still valid")
}

func TestUnknownRouteIsNotFound(t *testing.T) {
	me, _ := clients(t)
	assert.Equal(t, 404, me.do("GET", "/v1/nothing-here", nil).Status)
}

// BenchmarkGetAgent measures one authorized read through the whole stack
// (gateway, authorizer, function, DynamoDB).
func BenchmarkGetAgent(b *testing.B) {
	t := &testing.T{}
	me, _ := clients(t)
	me.T = t
	for b.Loop() {
		req, _ := http.NewRequest("GET", me.Base+"/v1/agents/kyra", nil)
		req.Header.Set("X-Api-Key", me.Key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}
