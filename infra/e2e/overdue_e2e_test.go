//go:build e2e

package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A due date in the past is accepted and the task is overdue at once; one
// in the future is not.
func TestPastDueDateIsAcceptedAndOverdue(t *testing.T) {
	me, _ := clients(t)
	slug := mkAgent(t, me, "due")
	past := time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)
	r := me.do("POST", "/v1/tasks", map[string]any{"assignee": slug, "title": "Late already", "due_at": past})
	require.Equal(t, 201, r.Status, string(r.Body))
	task := r.JSON(t)
	assert.Equal(t, true, task["overdue"])
	future := time.Now().UTC().Add(time.Hour).Format(time.RFC3339)
	r = me.do("POST", "/v1/tasks", map[string]any{"assignee": slug, "title": "Not yet", "due_at": future})
	require.Equal(t, 201, r.Status, string(r.Body))
	assert.Equal(t, false, r.JSON(t)["overdue"])
	r = me.do("POST", "/v1/tasks", map[string]any{"assignee": slug, "title": "x", "due_at": "tomorrow"})
	assert.Equal(t, 400, r.Status, string(r.Body))
	_, field, _ := r.ErrorFields(t)
	assert.Equal(t, "due_at", field)
	me.do("POST", "/v1/tasks/"+task["id"].(string)+"/cancel", nil)
}

// The board policy: a team's own, replaced whole, bad input refused with
// the field named and nothing changed.
func TestBoardPolicyOverHTTP(t *testing.T) {
	me, other := clients(t)
	t.Cleanup(func() { me.do("PUT", "/v1/board-policy", map[string]any{"escalate_overdue": false}) })
	r := me.do("PUT", "/v1/board-policy", map[string]any{"escalate_overdue": true})
	require.Equal(t, 200, r.Status, string(r.Body))
	assert.Equal(t, true, r.JSON(t)["escalate_overdue"])
	assert.Equal(t, true, me.do("GET", "/v1/board-policy", nil).JSON(t)["escalate_overdue"])
	assert.Equal(t, false, other.do("GET", "/v1/board-policy", nil).JSON(t)["escalate_overdue"], "another team's policy is its own")
	for _, c := range []struct {
		body  any
		field string
	}{
		{map[string]any{"escalate_overdue": 1}, "escalate_overdue"},
		{map[string]any{"escalate": true}, "escalate"},
	} {
		r := me.do("PUT", "/v1/board-policy", c.body)
		assert.Equal(t, 400, r.Status, string(r.Body))
		_, field, _ := r.ErrorFields(t)
		assert.Equal(t, c.field, field)
	}
	assert.Equal(t, true, me.do("GET", "/v1/board-policy", nil).JSON(t)["escalate_overdue"], "bad input changed nothing")
}
