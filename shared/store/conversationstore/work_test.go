package conversationstore

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/clip"
)

// A work entry takes its agent and label from the attributes of its
// item's type (a consultation's question and a plan's lead, message and
// time from their documents), a label clipped; an item of another type
// on a conversation's index is an error, not a silent entry.
func TestWorkEntriesByItemType(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC)
	long := strings.Repeat("word ", 100)
	cases := []struct {
		it    workItem
		agent string
		label string
	}{
		{workItem{Type: "task", Assignee: "luke", Title: "review", Lead: "x", To: "x"}, "luke", "review"},
		{workItem{Type: "session", Lead: "kyra", Goal: "decide", Assignee: "x", Title: "x"}, "kyra", "decide"},
		{workItem{Type: "report", To: "dana", Title: "summary", Assignee: "x"}, "dana", "summary"},
		{workItem{Type: "consultation", ConsultedAgent: "sage", Body: `{"question":"` + long + `","requesting_agent":"kyra"}`}, "sage", clip.Clip(long, conversations.MaxWorkLabel)},
		{workItem{Type: "plan", Doc: `{"lead":"kyra","message":"do both","created_at":"2026-03-04T05:06:07.000000008Z"}`}, "kyra", "do both"},
	}
	for _, c := range cases {
		c.it.ID, c.it.Status = "id_"+c.it.Type, "running"
		if c.it.Type != "plan" {
			c.it.CreatedAt = at
		}
		e, err := c.it.entry()
		require.NoError(t, err, c.it.Type)
		assert.Equal(t, conversations.WorkEntry{Type: c.it.Type, ID: "id_" + c.it.Type, Status: "running", Agent: c.agent, Label: c.label, CreatedAt: at}, e)
	}
	for _, bad := range []workItem{{Type: "message", ID: "m"}, {Type: "plan", ID: "p", Doc: "{"}, {Type: "consultation", ID: "c", Body: ""}} {
		_, err := bad.entry()
		assert.Error(t, err, bad.Type)
	}
}
