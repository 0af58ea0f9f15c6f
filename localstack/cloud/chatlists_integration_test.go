//go:build integration

// What a chat client lists (docs/api.md, "What a chat client lists"),
// end to end on the local cloud: the work a conversation started, the
// conversation's tasks and the conversations an agent took part in, each
// one index Query (gsi4) within its call budget, one team's alone, with
// bad input refused.
package cloud_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/e2e/apitest"
	"github.com/conclave-ai/conclave/localstack/cloud"
)

// listing is a GET of a listing: its status, the ids of its items in
// order, the items, its next token, its error field, and the route
// function's AWS calls.
type listing struct {
	status int
	ids    []string
	items  []map[string]any
	next   string
	field  string
	calls  map[string]int
}

func (d demoTeam) list(path string) listing {
	d.t.Helper()
	resp := apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), Key: d.key, T: d.t}.Do("GET", path, nil)
	out := listing{status: resp.Status}
	require.NoError(d.t, json.Unmarshal([]byte(resp.Header.Get(cloud.AWSCallsHeader)), &out.calls), path)
	body := resp.JSON(d.t)
	if resp.Status >= 400 {
		out.field, _ = body["error"].(map[string]any)["field"].(string)
		return out
	}
	for _, it := range body["items"].([]any) {
		m := it.(map[string]any)
		out.items = append(out.items, m)
		out.ids = append(out.ids, m["id"].(string))
	}
	out.next, _ = body["next_token"].(string)
	return out
}

// A conversation whose turns delegated a task (delegate:luke) and
// requested a report (report-async:dana), with a consultation asked from
// it and luke answering in it: its work lists the three newest first (the
// report's own task left out), a page at a time; GET /v1/tasks lists its
// two tasks; luke's conversations are this one and not one he never
// joined; another team reads none of it; bad input is 400.
func TestChatClientListings(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	d.script(e, "kyra", "delegate:luke")
	conv := d.conversation("kyra")
	r := lastReply(t, d.post(conv, map[string]any{"content": "@kyra please get the parser reviewed for bugs"}))
	require.Equal(t, []string{"delegate_task"}, toolNames(r))
	lukes := d.tasksOf("luke")
	require.Len(t, lukes, 1)
	task := d.task(lukes[0]["id"].(string))
	require.Equal(t, conv, task["conversation_id"])

	d.script(e, "kyra", "report-async:dana")
	r = lastReply(t, d.post(conv, map[string]any{"content": "@kyra research JWT rotation best practices"}))
	require.Equal(t, []string{"request_report"}, toolNames(r))
	repID := r["pending"].([]any)[0].(map[string]any)["id"].(string)
	st, rep := d.call("GET", "/v1/reports/"+repID, nil)
	require.Equal(t, 200, st, rep)

	cons := d.consult(map[string]any{"requesting_agent": "kyra", "question": "How should we rotate signing keys?", "conversation_id": conv})
	assert.Equal(t, conv, cons["conversation_id"])
	consID := cons["collaboration_id"].(string)

	d.script(e, "kyra", "")
	r = lastReply(t, d.post(conv, map[string]any{"content": "@luke what did you find in the parser?"}))
	require.Equal(t, "luke", r["agent"], "luke takes part in the conversation")
	other := d.conversation("kyra") // luke never joins it

	// The work, newest first: the consultation, the report (its own task
	// left out), the delegated task.
	work := d.list("/v1/conversations/" + conv + "/work")
	require.Equal(t, 200, work.status)
	require.Equal(t, []string{consID, repID, task["id"].(string)}, work.ids)
	within(t, "GET /v1/conversations/{id}/work", work.calls, calls{"DynamoDB": 1, "DynamoDB.Query": 1})
	byType := map[string]map[string]any{}
	for _, it := range work.items {
		byType[it["type"].(string)] = it
	}
	assert.Equal(t, "luke", byType["task"]["agent"])
	assert.Equal(t, task["title"], byType["task"]["label"])
	assert.Equal(t, "completed", byType["task"]["status"])
	assert.Equal(t, "dana", byType["report"]["agent"])
	assert.Equal(t, rep["title"], byType["report"]["label"])
	assert.Equal(t, cons["consulted_agent"], byType["consultation"]["agent"])
	assert.Equal(t, "How should we rotate signing keys?", byType["consultation"]["label"])
	for _, it := range work.items {
		assert.NotEmpty(t, it["status"], it)
		assert.NotEmpty(t, it["created_at"], it)
	}

	// A page at a time: every page full while entries follow, the one
	// past the report's own task read on (two queries).
	var paged []string
	next := ""
	for i := 0; ; i++ {
		require.Less(t, i, 10, "the listing never ended")
		page := d.list("/v1/conversations/" + conv + "/work?limit=1&next_token=" + url.QueryEscape(next))
		require.Equal(t, 200, page.status)
		within(t, "GET …/work?limit=1", page.calls, calls{"DynamoDB": 2, "DynamoDB.Query": 2})
		if page.next == "" {
			assert.Empty(t, page.ids, "only the page after the last entry is empty")
			break
		}
		require.Len(t, page.ids, 1)
		paged = append(paged, page.ids[0])
		next = page.next
	}
	assert.Equal(t, work.ids, paged)

	// Its tasks: the delegated one and the report's own, newest first.
	tasks := d.list("/v1/tasks?conversation_id=" + conv)
	require.Equal(t, 200, tasks.status)
	assert.Equal(t, []string{rep["task_id"].(string), task["id"].(string)}, tasks.ids)
	within(t, "GET /v1/tasks?conversation_id=", tasks.calls, calls{"DynamoDB": 1, "DynamoDB.Query": 1})
	lukeTasks := d.list("/v1/tasks?assignee=luke&conversation_id=" + conv)
	require.Equal(t, 200, lukeTasks.status)
	assert.Equal(t, []string{task["id"].(string)}, lukeTasks.ids)

	// The conversations luke and kyra took part in, newest first.
	luke := d.list("/v1/conversations?agent=luke")
	require.Equal(t, 200, luke.status)
	assert.Equal(t, []string{conv}, luke.ids, "not the one luke never joined")
	within(t, "GET /v1/conversations?agent=", luke.calls, calls{"DynamoDB": 2, "DynamoDB.Query": 1, "DynamoDB.BatchGetItem": 1})
	assert.Equal(t, "kyra", luke.items[0]["primary_agent"], "read whole")
	kyra := d.list("/v1/conversations?agent=kyra&limit=1")
	require.Equal(t, 200, kyra.status)
	assert.Equal(t, []string{other}, kyra.ids)
	kyra = d.list("/v1/conversations?agent=kyra&limit=1&next_token=" + url.QueryEscape(kyra.next))
	require.Equal(t, 200, kyra.status)
	assert.Equal(t, []string{conv}, kyra.ids)
	assert.Empty(t, d.list("/v1/conversations?agent=sage").ids, "an agent the team does not have")

	// Another team: the conversation is not found, its tasks are none,
	// and it cannot link a consultation to it.
	d2 := mustDemoTeam(t, e)
	missing := d2.list("/v1/conversations/" + conv + "/work")
	assert.Equal(t, 404, missing.status)
	within(t, "GET …/work (404)", missing.calls, calls{"DynamoDB": 2, "DynamoDB.Query": 1, "DynamoDB.GetItem": 1})
	theirs := d2.list("/v1/tasks?conversation_id=" + conv)
	require.Equal(t, 200, theirs.status)
	assert.Empty(t, theirs.ids)
	assert.Empty(t, d2.list("/v1/conversations?agent=luke").ids)
	st, res := d2.call("POST", "/v1/consultations", map[string]any{"requesting_agent": "kyra", "question": "Is this ours?", "conversation_id": conv})
	assert.Equal(t, 404, st, res)

	// Bad input.
	for _, c := range []struct {
		path   string
		status int
		field  string
	}{
		{"/v1/conversations?agent=Luke", 400, "agent"},
		{"/v1/conversations?agent=luke!", 400, "agent"},
		{"/v1/tasks?conversation_id=conv_nope", 400, "conversation_id"},
		{"/v1/tasks?conversation_id=" + conv + "&parent_task_id=" + task["id"].(string), 400, "conversation_id"},
		{"/v1/tasks?conversation_id=" + conv + "&assignee=luke&status=queued&sort=priority", 400, "sort"},
		{"/v1/conversations/" + conv + "/work?limit=0", 400, "limit"},
		{"/v1/conversations/" + conv + "/work?next_token=nope", 400, "next_token"},
		{"/v1/conversations/conv_nope/work", 404, ""},
	} {
		got := d.list(c.path)
		assert.Equal(t, c.status, got.status, c.path)
		assert.Equal(t, c.field, got.field, c.path)
	}
	first := d.list("/v1/conversations/" + conv + "/work?limit=1")
	require.NotEmpty(t, first.next)
	cross := d.list("/v1/conversations/" + other + "/work?limit=1&next_token=" + url.QueryEscape(first.next))
	assert.Equal(t, 400, cross.status, "a token is its conversation's")
	assert.Equal(t, "next_token", cross.field)
}

// A conversation's work lists the sessions and plans it started as well:
// a session started with its conversation_id and a plan a turn's
// sequenced message made, each with its lead and its goal or message,
// the newer first; another team does not find the conversation.
func TestAConversationsWorkListsItsSessionsAndPlans(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	conv := d.conversation("kyra")
	st, sess := d.call("POST", "/v1/sessions", map[string]any{"pattern": "brainstorm", "lead": "kyra", "goal": "Name the next release",
		"conversation_id": conv, "participants": twoContributors("luke", "archie")})
	require.Equal(t, 201, st, sess)
	sessID := sess["id"].(string)
	message := "Review the payment handler for bugs, then write release notes " +
		planMarker(`{"step_id":1,"target":"luke/code-review","sub_query":"Review the payment handler","depends_on":[]},{"step_id":2,"target":"wren/writing","sub_query":"Write release notes","depends_on":[1]}`)
	r := lastReply(t, d.post(conv, map[string]any{"content": message}))
	var planID string
	pending, _ := r["pending"].([]any)
	for _, p := range pending {
		if ref := p.(map[string]any); ref["type"] == "plan" {
			planID = ref["id"].(string)
		}
	}
	require.NotEmpty(t, planID, "the turn planned: %v", r)

	work := d.list("/v1/conversations/" + conv + "/work")
	require.Equal(t, 200, work.status)
	at := func(id string) int {
		for i, got := range work.ids {
			if got == id {
				return i
			}
		}
		return -1
	}
	require.GreaterOrEqual(t, at(sessID), 0, "the session is listed: %v", work.ids)
	require.GreaterOrEqual(t, at(planID), 0, "the plan is listed: %v", work.ids)
	assert.Less(t, at(planID), at(sessID), "newest first")
	session, plan := work.items[at(sessID)], work.items[at(planID)]
	assert.Equal(t, "session", session["type"])
	assert.Equal(t, "kyra", session["agent"])
	assert.Equal(t, "Name the next release", session["label"])
	assert.NotEmpty(t, session["status"])
	assert.Equal(t, "plan", plan["type"])
	assert.NotEmpty(t, plan["agent"])
	assert.Contains(t, plan["label"], "Review the payment handler for bugs")
	assert.NotEmpty(t, plan["status"])
	within(t, "GET /v1/conversations/{id}/work", work.calls, calls{"DynamoDB": 1, "DynamoDB.Query": 1})

	d2 := mustDemoTeam(t, e)
	assert.Equal(t, 404, d2.list("/v1/conversations/"+conv+"/work").status, "another team's conversation")
}

// GET /v1/tasks?conversation_id= a page at a time: limit=1 walks every
// task of the conversation once, newest first, as the whole listing
// orders them, and ends; a next_token is its listing's: one from another
// conversation's tasks, from the team's tasks or from the conversation's
// work is 400 naming next_token.
func TestAConversationsTasksPageOneAtATime(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	conv, other := d.conversation("kyra"), d.conversation("kyra")
	var made []string
	for i, c := range []string{conv, other, conv, conv, other} {
		st, tk := d.call("POST", "/v1/tasks", map[string]any{"assignee": "luke", "title": fmt.Sprintf("Check %d", i), "conversation_id": c})
		require.Equal(t, 201, st, tk)
		if c == conv {
			made = append([]string{tk["id"].(string)}, made...)
		}
	}
	all := d.list("/v1/tasks?conversation_id=" + conv)
	require.Equal(t, 200, all.status)
	require.Equal(t, made, all.ids, "newest first, the other conversation's left out")

	var paged []string
	seen := map[string]bool{}
	next := ""
	for i := 0; ; i++ {
		require.Less(t, i, 10, "the listing never ended")
		page := d.list("/v1/tasks?conversation_id=" + conv + "&limit=1&next_token=" + url.QueryEscape(next))
		require.Equal(t, 200, page.status)
		require.LessOrEqual(t, len(page.ids), 1)
		for _, id := range page.ids {
			assert.False(t, seen[id], "%s listed twice", id)
			seen[id] = true
			paged = append(paged, id)
		}
		if page.next == "" {
			break
		}
		next = page.next
	}
	assert.Equal(t, made, paged, "every task once, in order")

	first := d.list("/v1/tasks?conversation_id=" + conv + "&limit=1")
	require.NotEmpty(t, first.next)
	theirs := d.list("/v1/tasks?conversation_id=" + other + "&limit=1")
	require.NotEmpty(t, theirs.next)
	team := d.list("/v1/tasks?limit=1")
	require.NotEmpty(t, team.next)
	work := d.list("/v1/conversations/" + conv + "/work?limit=1")
	require.NotEmpty(t, work.next)
	for name, token := range map[string]string{"another conversation's": theirs.next, "the team's tasks'": team.next, "the conversation's work's": work.next} {
		got := d.list("/v1/tasks?conversation_id=" + conv + "&limit=1&next_token=" + url.QueryEscape(token))
		assert.Equal(t, 400, got.status, "a token of %s listing", name)
		assert.Equal(t, "next_token", got.field, name)
	}
	got := d.list("/v1/tasks?limit=1&next_token=" + url.QueryEscape(first.next))
	assert.Equal(t, 400, got.status, "the conversation's token on the team's tasks")
	assert.Equal(t, "next_token", got.field)
}
