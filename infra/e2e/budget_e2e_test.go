//go:build e2e

package e2e

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The budget and usage routes keep their contract on any stage: a GET of
// each answers the documented shape, bad input names the field and
// changes nothing, and one team never sees another's spend. (The refusal
// itself, which needs a budget small enough to refuse, runs on a team of
// its own in localstack/cloud: a stage's demo team keeps its budget.)
func TestBudgetAndUsageRoutesKeepTheContract(t *testing.T) {
	me, other := clients(t)
	before := me.do("GET", "/v1/budget", nil)
	require.Equal(t, 200, before.Status, string(before.Body))
	b := before.JSON(t)
	for _, k := range []string{"monthly_limit_usd", "warn_at", "month", "spent_usd", "reserved_usd", "calls", "warned"} {
		assert.Contains(t, b, k)
	}
	for _, bad := range []struct {
		body  any
		field string
	}{
		{map[string]any{}, "monthly_limit_usd"},
		{map[string]any{"monthly_limit_usd": 0}, "monthly_limit_usd"},
		{map[string]any{"monthly_limit_usd": 1e7}, "monthly_limit_usd"},
		{map[string]any{"monthly_limit_usd": 10, "warn_at": 2}, "warn_at"},
		{"null", "body"},
	} {
		invalid(t, me.do("PUT", "/v1/budget", bad.body), bad.field)
	}
	after := me.do("GET", "/v1/budget", nil).JSON(t)
	assert.Equal(t, b["monthly_limit_usd"], after["monthly_limit_usd"], "a refused PUT changes nothing")
	assert.Equal(t, b["warn_at"], after["warn_at"])

	for _, q := range []struct{ query, field string }{
		{"group_by=team", "group_by"}, {"from=yesterday", "from"}, {"from=2026-03-02&to=2026-03-01", "to"}, {"from=2026-01-01&to=2026-12-31", "to"},
	} {
		invalid(t, me.do("GET", "/v1/usage?"+q.query, nil), q.field)
	}
	for _, group := range []string{"agent", "model", "conversation", "session", "day"} {
		r := me.do("GET", "/v1/usage?group_by="+group, nil)
		require.Equal(t, 200, r.Status, string(r.Body))
		u := r.JSON(t)
		require.Contains(t, u, "items")
		total := u["total"].(map[string]any)
		var sum float64
		for _, it := range u["items"].([]any) {
			sum += it.(map[string]any)["usd"].(float64)
		}
		assert.InDelta(t, total["usd"].(float64), sum, 1e-6, "%s: the items sum to the total", group)
	}

	mine := me.do("GET", "/v1/usage?group_by=conversation", nil).JSON(t)["items"].([]any)
	theirs := string(other.do("GET", "/v1/usage?group_by=conversation", nil).Body)
	for _, it := range mine {
		if key := it.(map[string]any)["key"].(string); key != "(none)" {
			assert.NotContains(t, theirs, key, "another team's usage never shows a conversation of mine")
		}
	}
}
