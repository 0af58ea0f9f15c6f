package api_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/ids"
)

// Every route with a wait parameter follows the document's one rule (the
// route's maximum read from its schema): the maximum passes the parser
// (an unknown id then answers 404 at once), and one more, a leading zero,
// a sign, an exponent and an empty wait= are the 400 naming wait. A route
// that parsed wait its own way would fail here.
func TestEveryWaitParameterFollowsTheDocumentedRule(t *testing.T) {
	a := newInMemoryAPI(t)
	_, ops := operations(t)
	routes := 0
	for key, op := range ops {
		max := -1
		for _, p := range op.Parameters {
			if p["name"] != "wait" || p["in"] != "query" {
				continue
			}
			schema, _ := p["schema"].(map[string]any)
			require.Equal(t, "integer", schema["type"], key)
			require.Equal(t, 0, schema["minimum"], key)
			max, _ = schema["maximum"].(int)
			require.Positive(t, max, "%s: wait documents its maximum", key)
			assert.Contains(t, p["description"], "no sign, no leading zero", key)
			assert.Contains(t, p["description"], "an empty wait= is 400", key)
		}
		if max < 0 {
			continue
		}
		routes++
		method, _, _ := strings.Cut(key, " ")
		path, params := pathFor(key, "")
		call := func(wait string) (int, string) {
			// after is what the messages route needs beside wait; the
			// others ignore it.
			resp := a.callQuery(method, path, key, "", params, map[string]string{"wait": wait, "after": ids.New("msg")})
			var e httpapi.ErrorBody
			if resp.StatusCode >= 400 {
				require.NoError(t, json.Unmarshal([]byte(resp.Body), &e), resp.Body)
			}
			return resp.StatusCode, e.Error.Field
		}
		for _, ok := range []string{"0", strconv.Itoa(max)} {
			st, field := call(ok)
			assert.Equal(t, 404, st, "%s wait=%s: an unknown id, not a refused wait (%s)", key, ok, field)
		}
		for _, bad := range []string{strconv.Itoa(max + 1), "05", "+1", "-1", "", "1e1"} {
			st, field := call(bad)
			assert.Equal(t, 400, st, "%s wait=%q", key, bad)
			assert.Equal(t, "wait", field, "%s wait=%q", key, bad)
		}
	}
	assert.Equal(t, 4, routes, "the routes that long-poll: a task, a report, a consultation, a conversation's messages")
}
