//go:build integration

package cloud_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/testkit/demo"
)

// queueTask is a board task's answer, as far as the queue tests read it.
type queueTask struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Status   string `json:"status"`
	Priority string `json:"priority"`
	Version  int    `json:"version"`
}

// boardTask creates a board task for luke with the given priority ("" for
// the default) and returns its id.
func boardTask(t *testing.T, d demoTeam, title, priority string) string {
	t.Helper()
	body := map[string]any{"assignee": "luke", "title": title}
	if priority != "" {
		body["priority"] = priority
	}
	r := d.do("POST", "/v1/tasks", body)
	require.Equal(t, 201, r.Status, string(r.Body))
	var q queueTask
	require.NoError(t, json.Unmarshal(r.Body, &q))
	return q.ID
}

// queueTitles lists luke's queue with ?sort=priority, page by page.
func queueTitles(t *testing.T, d demoTeam, limit int) []string {
	t.Helper()
	var out []string
	token := ""
	for {
		path := "/v1/tasks?assignee=luke&status=queued&sort=priority&limit=" + strconv.Itoa(limit)
		if token != "" {
			path += "&next_token=" + token
		}
		r := d.do("GET", path, nil)
		require.Equal(t, 200, r.Status, string(r.Body))
		var page struct {
			Items     []queueTask `json:"items"`
			NextToken string      `json:"next_token"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &page))
		for _, it := range page.Items {
			out = append(out, it.Title)
		}
		if page.NextToken == "" {
			return out
		}
		token = page.NextToken
	}
}

// next-task starts the highest-priority queued item (then the oldest),
// the board lists the queue in that order across pages, and an empty
// queue answers 204 with no body.
func TestNextTaskStartsTheHighestPriorityQueuedItem(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	for _, c := range []struct{ title, priority string }{
		{"low", "low"}, {"normal, older", ""}, {"urgent", "urgent"}, {"normal, newer", "normal"}, {"high", "high"},
	} {
		boardTask(t, d, c.title, c.priority)
		time.Sleep(5 * time.Millisecond) // distinct creation times
	}
	want := []string{"urgent", "high", "normal, older", "normal, newer", "low"}
	assert.Equal(t, want, queueTitles(t, d, 2), "sorted across pages")

	for _, title := range want {
		r := d.do("POST", "/v1/agents/luke/next-task", nil)
		require.Equal(t, 200, r.Status, string(r.Body))
		var q queueTask
		require.NoError(t, json.Unmarshal(r.Body, &q))
		assert.Equal(t, title, q.Title)
		assert.Equal(t, "running", q.Status)
	}
	r := d.do("POST", "/v1/agents/luke/next-task", nil)
	assert.Equal(t, 204, r.Status, string(r.Body))
	assert.Empty(t, r.Body)
	assert.Empty(t, queueTitles(t, d, 10))

	bad := d.do("GET", "/v1/tasks?assignee=luke&sort=priority", nil)
	require.Equal(t, 400, bad.Status, string(bad.Body))
	_, field, _ := bad.ErrorFields(t)
	assert.Equal(t, "sort", field, "sort=priority needs status=queued")
}

// Another team's agent is not found and nothing of either team starts; an
// unknown or malformed slug is not found either.
func TestNextTaskIsolationAndBadInput(t *testing.T) {
	e := mustEnv(t)
	mine, theirs := mustDemoTeam(t, e), mustDemoTeam(t, e)
	id := boardTask(t, mine, "mine", "urgent")
	for name, c := range map[string]struct {
		d    demoTeam
		slug string
	}{
		"unknown agent": {mine, "nobody"}, "malformed slug": {mine, "Not_A_Slug"}, "too long": {mine, "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopq"},
	} {
		r := c.d.do("POST", "/v1/agents/"+c.slug+"/next-task", nil)
		assert.Equal(t, 404, r.Status, name+": "+string(r.Body))
	}
	// theirs has a luke of its own, with nothing queued: 204, and mine's
	// task is untouched. A team without the agent is 404.
	r := theirs.do("POST", "/v1/agents/luke/next-task", nil)
	assert.Equal(t, 204, r.Status, string(r.Body))
	var q queueTask
	require.NoError(t, json.Unmarshal(mine.do("GET", "/v1/tasks/"+id, nil).Body, &q))
	assert.Equal(t, "queued", q.Status, "another team's call starts nothing of mine")
	// An agent only mine has, with work queued: theirs cannot reach it.
	solo := demo.Agents[0]
	solo.Slug = "solo"
	_, err := agents.NewService(e.db.agents).Create(context.Background(), mine.id, solo)
	require.NoError(t, err)
	r = mine.do("POST", "/v1/tasks", map[string]any{"assignee": "solo", "title": "solo's"})
	require.Equal(t, 201, r.Status, string(r.Body))
	require.NoError(t, json.Unmarshal(r.Body, &q))
	r = theirs.do("POST", "/v1/agents/solo/next-task", nil)
	assert.Equal(t, 404, r.Status, "another team's agent: %s", r.Body)
	require.NoError(t, json.Unmarshal(mine.do("GET", "/v1/tasks/"+q.ID, nil).Body, &q))
	assert.Equal(t, "queued", q.Status, "nothing started")
}

// A replayed next-task answers the first answer (the same task, started
// once), and a replayed empty answer stays 204 even after work arrives.
func TestNextTaskIdempotentReplay(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	empty := d.do("POST", "/v1/agents/luke/next-task", nil, "Idempotency-Key", "next-empty")
	require.Equal(t, 204, empty.Status, string(empty.Body))
	first := boardTask(t, d, "first", "high")
	second := boardTask(t, d, "second", "low")

	again := d.do("POST", "/v1/agents/luke/next-task", nil, "Idempotency-Key", "next-empty")
	assert.Equal(t, 204, again.Status, "the replay answers the first answer")
	assert.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))

	a := d.do("POST", "/v1/agents/luke/next-task", nil, "Idempotency-Key", "next-1")
	require.Equal(t, 200, a.Status, string(a.Body))
	b := d.do("POST", "/v1/agents/luke/next-task", nil, "Idempotency-Key", "next-1")
	require.Equal(t, 200, b.Status, string(b.Body))
	assert.JSONEq(t, string(a.Body), string(b.Body))
	var q queueTask
	require.NoError(t, json.Unmarshal(a.Body, &q))
	assert.Equal(t, first, q.ID)
	require.NoError(t, json.Unmarshal(d.do("GET", "/v1/tasks/"+second, nil).Body, &q))
	assert.Equal(t, "queued", q.Status, "the replay started nothing more")
}
