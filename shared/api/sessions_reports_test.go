package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/httpapi"
)

// The sessions and reports routes answer by the same plumbing as the
// others: a null body, a body where the document has none, limit=0 and a
// malformed path id are refused, in the error shape, before anything runs.
func TestSessionAndReportRoutesKeepTheContract(t *testing.T) {
	a := newInMemoryAPI(t)
	before := a.snapshot(t)
	for _, c := range []struct {
		key, path, body string
		params, query   map[string]string
		status          int
		field           string
	}{
		{key: "POST /v1/sessions", path: "/v1/sessions", body: "null", status: 400, field: "body"},
		{key: "POST /v1/sessions", path: "/v1/sessions", body: `{"pattern":"brainstorm","lead":"kyra","goal":"g","participants":null}`, status: 400, field: "participants"},
		{key: "POST /v1/sessions", path: "/v1/sessions", body: `{"pattern":"brainstorm","lead":"kyra","goal":"g","participants":[],"x":1}`, status: 400, field: "x"},
		{key: "POST /v1/sessions/{id}/cancel", path: "/v1/sessions/ses_x/cancel", body: `{}`, params: map[string]string{"id": "ses_x"}, status: 400, field: "body"},
		{key: "POST /v1/sessions/{id}/resume", path: "/v1/sessions/ses_x/resume", body: `{"reason":"x"}`, params: map[string]string{"id": "ses_x"}, status: 400, field: "body"},
		{key: "POST /v1/sessions/{id}/cancel", path: "/v1/sessions/ses_x/cancel", params: map[string]string{"id": "ses_x"}, status: 404},
		{key: "POST /v1/sessions/{id}/approve", path: "/v1/sessions/ses_x/approve", body: "null", params: map[string]string{"id": "ses_x"}, status: 400, field: "body"},
		{key: "GET /v1/sessions/{id}", path: "/v1/sessions/a%2Fb", params: map[string]string{"id": "a/b"}, status: 404},
		{key: "GET /v1/sessions/{id}/trace", path: "/v1/sessions/ses_x/trace", body: "{}", params: map[string]string{"id": "ses_x"}, status: 400, field: "body"},
		{key: "GET /v1/sessions", path: "/v1/sessions", query: map[string]string{"limit": "0"}, status: 400, field: "limit"},
		{key: "GET /v1/sessions", path: "/v1/sessions", query: map[string]string{"agent": "A"}, status: 400, field: "agent"},
		{key: "POST /v1/reports", path: "/v1/reports", body: "null", status: 400, field: "body"},
		{key: "POST /v1/reports", path: "/v1/reports", body: `{"type":"code_review","to":"luke","title":"t","max_sections":"4"}`, status: 400, field: "max_sections"},
		{key: "GET /v1/reports", path: "/v1/reports", query: map[string]string{"limit": "0"}, status: 400, field: "limit"},
		{key: "GET /v1/reports", path: "/v1/reports", query: map[string]string{"type": "nope"}, status: 400, field: "type"},
		{key: "GET /v1/reports/{id}", path: "/v1/reports/rep_x", params: map[string]string{"id": "rep_x"}, query: map[string]string{"wait": "26"}, status: 400, field: "wait"},
		{key: "GET /v1/reports/{id}", path: "/v1/reports/rep_%00", params: map[string]string{"id": "rep_\x00"}, status: 404},
		{key: "GET /v1/report-templates", path: "/v1/report-templates", body: "{}", status: 400, field: "body"},
	} {
		method, _, _ := strings.Cut(c.key, " ")
		resp := a.callQuery(method, c.path, c.key, c.body, c.params, c.query)
		require.Equal(t, c.status, resp.StatusCode, "%s %q: %s", c.key, c.body, resp.Body)
		var e httpapi.ErrorBody
		require.NoError(t, json.Unmarshal([]byte(resp.Body), &e), resp.Body)
		assert.Equal(t, c.field, e.Error.Field, "%s %q: %s", c.key, c.body, resp.Body)
	}
	assert.Equal(t, before, a.snapshot(t), "refused requests changed nothing")
}
