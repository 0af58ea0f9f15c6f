//go:build e2e

package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The API answers exactly as shared/api/openapi.yaml documents: the
// defects an outside contract test found (issue 15), each refused in the
// error shape with nothing changed.

// invalid asserts a 400 invalid_request naming field, and returns the message.
func invalid(t *testing.T, r response, field string) string {
	t.Helper()
	require.Equal(t, 400, r.Status, string(r.Body))
	code, f, _ := r.ErrorFields(t)
	assert.Equal(t, "invalid_request", code)
	assert.Equal(t, field, f, string(r.Body))
	return r.JSON(t)["error"].(map[string]any)["message"].(string)
}

func TestTopLevelNullIsRefusedAndChangesNothing(t *testing.T) {
	me, _ := clients(t)
	slug := mkAgent(t, me, "null")
	invalid(t, me.do("PATCH", "/v1/agents/"+slug, "null"), "body")
	assert.EqualValues(t, 1, me.do("GET", "/v1/agents/"+slug, nil).JSON(t)["version"], "no new version")

	r := me.do("POST", "/v1/tasks", map[string]any{"assignee": slug, "title": "null bodies"})
	require.Equal(t, 201, r.Status, string(r.Body))
	id := r.JSON(t)["id"].(string)
	require.Equal(t, 200, me.do("POST", "/v1/tasks/"+id+"/start", nil).Status)
	for _, verb := range []string{"complete", "block", "cancel", "fail"} {
		invalid(t, me.do("POST", "/v1/tasks/"+id+"/"+verb, "null"), "body")
		invalid(t, me.do("POST", "/v1/tasks/"+id+"/"+verb, `{"reason":null}`), "reason")
	}
	assert.Equal(t, "running", me.do("GET", "/v1/tasks/"+id, nil).JSON(t)["status"], "no transition")

	before := len(me.do("GET", "/v1/conversations?limit=100", nil).JSON(t)["items"].([]any))
	for _, body := range []string{"null", "[]", `"x"`, "0"} {
		invalid(t, me.do("POST", "/v1/conversations", body), "body")
	}
	assert.Len(t, me.do("GET", "/v1/conversations?limit=100", nil).JSON(t)["items"], before, "no conversation created")
}

func TestPatchThatChangesNothingKeepsTheVersion(t *testing.T) {
	me, _ := clients(t)
	slug := mkAgent(t, me, "noop")
	a := me.do("GET", "/v1/agents/"+slug, nil).JSON(t)
	for _, body := range []any{map[string]any{}, map[string]any{"name": a["name"], "tagline": a["tagline"]}, map[string]any{"version": 1}} {
		r := me.do("PATCH", "/v1/agents/"+slug, body)
		require.Equal(t, 200, r.Status, string(r.Body))
		assert.EqualValues(t, 1, r.JSON(t)["version"], "%v", body)
		assert.Equal(t, a["updated_at"], r.JSON(t)["updated_at"])
	}
	r := me.do("PATCH", "/v1/agents/"+slug, map[string]any{"tagline": "changed"})
	assert.EqualValues(t, 2, r.JSON(t)["version"], "a real change still bumps it")
}

func TestRoutesWithoutABodyRefuseOne(t *testing.T) {
	me, _ := clients(t)
	slug := mkAgent(t, me, "nobody")
	for _, action := range []string{"pause", "activate", "archive"} {
		for _, body := range []string{"garbage", "{}", "null"} {
			invalid(t, me.do("POST", "/v1/agents/"+slug+"/"+action, body), "body")
		}
	}
	assert.Equal(t, "active", me.do("GET", "/v1/agents/"+slug, nil).JSON(t)["status"], "no transition")

	c := me.do("POST", "/v1/conversations", map[string]any{"title": "keep open"})
	require.Equal(t, 201, c.Status, string(c.Body))
	conv := c.JSON(t)["id"].(string)
	invalid(t, me.do("POST", "/v1/conversations/"+conv+"/close", `{"x":1}`), "body")
	assert.Equal(t, "open", me.do("GET", "/v1/conversations/"+conv, nil).JSON(t)["status"])

	k := me.do("POST", "/v1/keys", map[string]any{"name": "not rotated"})
	require.Equal(t, 201, k.Status, string(k.Body))
	key := k.JSON(t)
	invalid(t, me.do("POST", "/v1/keys/"+key["id"].(string)+"/rotate", "garbage"), "body")
	invalid(t, me.do("DELETE", "/v1/keys/"+key["id"].(string), "{}"), "body")
	assert.Equal(t, 200, newClient(t, me.Base, key["secret"].(string)).do("GET", "/v1/team", nil).Status, "not rotated or revoked")
	assert.Equal(t, 200, me.do("POST", "/v1/agents/"+slug+"/pause", nil).Status, "an empty body is no body")
}

func TestDocumentedMinimumsAndEmptyParametersAreRefused(t *testing.T) {
	me, _ := clients(t)
	c := me.do("POST", "/v1/conversations", nil)
	require.Equal(t, 201, c.Status, string(c.Body))
	conv := c.JSON(t)["id"].(string)
	invalid(t, me.do("POST", "/v1/conversations/"+conv+"/messages", map[string]any{"content": "hi", "k": 0}), "k")
	assert.Empty(t, me.do("GET", "/v1/conversations/"+conv+"/messages", nil).JSON(t)["items"], "no turn recorded")
	for _, path := range []string{"/v1/agents", "/v1/tasks", "/v1/conversations", "/v1/activity", "/v1/routing/decisions", "/v1/agents/kyra/inbox?peek=true&"} {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = ""
		}
		invalid(t, me.do("GET", path+sep+"limit=0", nil), "limit")
		invalid(t, me.do("GET", path+sep+"limit=", nil), "limit")
	}
	invalid(t, me.do("GET", "/v1/routing/decisions?since=", nil), "since")
	invalid(t, me.do("GET", "/v1/routing/analytics/strategies?since=", nil), "since")
	invalid(t, me.do("GET", "/v1/routing/analytics/agents?query=review&min_similarity=", nil), "min_similarity")
}

func TestErrorMessagesNameJSONTypesNotGoTypes(t *testing.T) {
	me, _ := clients(t)
	for _, c := range []struct {
		method, path, body, field, message string
	}{
		{"POST", "/v1/keys", `{"name":42}`, "name", "name must be a string"},
		{"POST", "/v1/keys", `["name"]`, "body", "body must be a JSON object"},
		{"PUT", "/v1/team/default-agent", `{"slug":{"a":1}}`, "slug", "slug must be a string"},
		{"POST", "/v1/agents", `{"slug":"x","name":"y","skills":[{"name":"a","description":"b","priority":"high"}]}`, "skills[0].priority", "skills[0].priority must be an integer"},
		{"POST", "/v1/tasks", `{"assignee":"kyra","title":"t","due_at":"soon"}`, "due_at", "due_at must be an RFC 3339 date-time"},
	} {
		msg := invalid(t, me.do(c.method, c.path, c.body), c.field)
		assert.True(t, strings.HasPrefix(msg, c.message), msg)
		assert.NotContains(t, msg, "struct")
	}
}

// A path id with '%', NUL or non-ASCII is the API's 404 in the error
// shape. The gateway decodes the path once and routes on it (so does API
// Gateway: an encoded slash is a slash), and no id has a '/', so
// /v1/agents/kyra%2Fload is /v1/agents/kyra/load, never an agent named
// "kyra/load".
func TestOddPathIDsGetTheErrorShape(t *testing.T) {
	me, _ := clients(t)
	for _, path := range []string{"/v1/agents/a%25", "/v1/agents/a%2525", "/v1/agents/%00", "/v1/agents/caf%C3%A9", "/v1/agents/%FF",
		"/v1/tasks/task_%25", "/v1/tasks/%E2%82%AC", "/v1/conversations/conv%00x/messages", "/v1/keys/%25/rotate", "/v1/agents/" + strings.Repeat("a", 200)} {
		method := http.MethodGet
		if strings.HasSuffix(path, "/rotate") {
			method = http.MethodPost
		}
		r := me.do(method, path, nil)
		require.Equal(t, 404, r.Status, "%s: %s", path, r.Body)
		code, _, _ := r.ErrorFields(t)
		assert.Equal(t, "not_found", code, path)
		assert.NotEmpty(t, r.JSON(t)["request_id"], path)
	}
	slashed := me.do("GET", "/v1/agents/kyra%2Fload", nil)
	require.Equal(t, 200, slashed.Status, string(slashed.Body))
	assert.Equal(t, me.do("GET", "/v1/agents/kyra/load", nil).JSON(t), slashed.JSON(t), "the decoded path, as API Gateway routes it")
	assert.NotContains(t, slashed.JSON(t), "slug", "never the agent \"kyra/load\"")
}

// The sessions and reports routes keep the same contract (the answers come
// before the feature flag is read, so they hold on any stage).
func TestSessionAndReportRoutesKeepTheContract(t *testing.T) {
	me, _ := clients(t)
	for _, body := range []string{"null", "[]", `"x"`} {
		invalid(t, me.do("POST", "/v1/sessions", body), "body")
		invalid(t, me.do("POST", "/v1/reports", body), "body")
	}
	invalid(t, me.do("POST", "/v1/reports", `{"type":"code_review","to":"luke","title":"t","max_sections":"4"}`), "max_sections")
	for _, action := range []string{"cancel", "resume"} {
		for _, body := range []string{"garbage", "{}", "null"} {
			invalid(t, me.do("POST", "/v1/sessions/ses_none/"+action, body), "body")
		}
	}
	invalid(t, me.do("POST", "/v1/sessions/ses_none/approve", "null"), "body")
	for _, path := range []string{"/v1/sessions", "/v1/reports"} {
		invalid(t, me.do("GET", path+"?limit=0", nil), "limit")
		invalid(t, me.do("GET", path+"?limit=", nil), "limit")
	}
	invalid(t, me.do("GET", "/v1/report-templates", "{}"), "body")
	for _, path := range []string{"/v1/sessions/ses_%25", "/v1/sessions/%00/trace", "/v1/reports/rep_%E2%82%AC", "/v1/sessions/ses_%25/cancel"} {
		method := http.MethodGet
		if strings.HasSuffix(path, "/cancel") {
			method = http.MethodPost
		}
		r := me.do(method, path, nil)
		require.Equal(t, 404, r.Status, "%s: %s", path, r.Body)
		code, _, _ := r.ErrorFields(t)
		assert.Equal(t, "not_found", code, path)
	}
}
