package api_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/ids"
)

// listed serves a GET listing and decodes its page, or its error.
func listed[T any](t *testing.T, a inMemoryAPI, path, routeKey string, params, query map[string]string) (int, httpapi.ErrorBody, []T, string) {
	t.Helper()
	resp := a.callQuery("GET", path, routeKey, "", params, query)
	var e httpapi.ErrorBody
	var page struct {
		Items     []T    `json:"items"`
		NextToken string `json:"next_token"`
	}
	if resp.StatusCode >= 400 {
		require.NoError(t, json.Unmarshal([]byte(resp.Body), &e), resp.Body)
	} else {
		require.NoError(t, json.Unmarshal([]byte(resp.Body), &page), resp.Body)
	}
	return resp.StatusCode, e, page.Items, page.NextToken
}

// created posts body to path and returns the created resource's id.
func (a inMemoryAPI) created(t *testing.T, path, routeKey, body string, params map[string]string) string {
	t.Helper()
	resp := a.call("POST", path, routeKey, body, params)
	require.Equal(t, 201, resp.StatusCode, "%s: %s", routeKey, resp.Body)
	var got struct {
		ID              string `json:"id"`
		CollaborationID string `json:"collaboration_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(resp.Body), &got))
	if got.ID == "" {
		return got.CollaborationID
	}
	return got.ID
}

// What a chat client lists: a conversation's work newest first, a page at
// a time, with each entry's type, status, agent and label; a conversation
// the team does not have is 404; bad paging is 400.
func TestConversationWorkRoute(t *testing.T) {
	a := newInMemoryAPI(t)
	conv := a.created(t, "/v1/conversations", "POST /v1/conversations", `{"title":"work","agent":"kyra"}`, nil)
	other := a.created(t, "/v1/conversations", "POST /v1/conversations", `{"title":"other"}`, nil)
	task := a.created(t, "/v1/tasks", "POST /v1/tasks", `{"assignee":"luke","title":"review the parser","conversation_id":"`+conv+`"}`, nil)
	cons := a.created(t, "/v1/consultations", "POST /v1/consultations", `{"requesting_agent":"kyra","question":"how do I tune the parser?","conversation_id":"`+conv+`"}`, nil)
	a.created(t, "/v1/tasks", "POST /v1/tasks", `{"assignee":"luke","title":"elsewhere","conversation_id":"`+other+`"}`, nil)

	work := func(id string, query map[string]string) (int, httpapi.ErrorBody, []conversations.WorkEntry, string) {
		return listed[conversations.WorkEntry](t, a, "/v1/conversations/"+id+"/work", "GET /v1/conversations/{id}/work", map[string]string{"id": id}, query)
	}
	st, _, items, _ := work(conv, nil)
	require.Equal(t, 200, st)
	require.Len(t, items, 2)
	assert.Equal(t, []string{cons, task}, []string{items[0].ID, items[1].ID}, "newest first")
	assert.Equal(t, conversations.WorkEntry{Type: "consultation", ID: cons, Status: items[0].Status, Agent: items[0].Agent,
		Label: "how do I tune the parser?", CreatedAt: items[0].CreatedAt}, items[0])
	assert.NotEqual(t, "kyra", items[0].Agent, "a consultation's agent is its specialist")
	assert.Equal(t, conversations.WorkEntry{Type: "task", ID: task, Status: "queued", Agent: "luke", Label: "review the parser",
		CreatedAt: items[1].CreatedAt}, items[1])

	st, _, first, next := work(conv, map[string]string{"limit": "1"})
	require.Equal(t, 200, st)
	require.Len(t, first, 1)
	require.NotEmpty(t, next)
	st, _, second, _ := work(conv, map[string]string{"limit": "1", "next_token": next})
	require.Equal(t, 200, st)
	require.Len(t, second, 1)
	assert.Equal(t, []string{cons, task}, []string{first[0].ID, second[0].ID}, "a page at a time")

	for _, c := range []struct{ q map[string]string }{
		{map[string]string{"limit": "0"}}, {map[string]string{"limit": "101"}}, {map[string]string{"limit": "x"}},
		{map[string]string{"next_token": "garbage"}},
	} {
		st, e, _, _ := work(conv, c.q)
		assert.Equal(t, 400, st, "%v", c.q)
		assert.Equal(t, "invalid_request", e.Error.Code, "%v", c.q)
	}
	st, e, _, _ := work(other, map[string]string{"limit": "1", "next_token": next})
	assert.Equal(t, 400, st, "another conversation's token")
	assert.Equal(t, "next_token", e.Error.Field)

	foreign := conversations.Conversation{ID: ids.New("conv"), TeamID: "team_other", Title: "theirs", Status: conversations.StatusOpen, Version: 1}
	require.NoError(t, a.store.CreateConversation(t.Context(), foreign, nil))
	for _, id := range []string{foreign.ID, ids.New("conv"), "conv_nope"} {
		st, e, _, _ := work(id, nil)
		assert.Equal(t, 404, st, id)
		assert.Equal(t, "not_found", e.Error.Code, id)
	}
	st, _, items, _ = work(other, nil)
	require.Equal(t, 200, st)
	require.Len(t, items, 1, "the other conversation's own")
}

// GET /v1/tasks?conversation_id= lists the conversation's tasks, with the
// filters its index takes; a malformed id, or one with parent_task_id or
// sort=priority, is 400 naming the parameter; another team's
// conversation lists none.
func TestTasksOfAConversation(t *testing.T) {
	a := newInMemoryAPI(t)
	conv := a.created(t, "/v1/conversations", "POST /v1/conversations", `{"title":"work"}`, nil)
	t1 := a.created(t, "/v1/tasks", "POST /v1/tasks", `{"assignee":"luke","title":"one","conversation_id":"`+conv+`"}`, nil)
	t2 := a.created(t, "/v1/tasks", "POST /v1/tasks", `{"assignee":"dana","title":"two","conversation_id":"`+conv+`"}`, nil)
	a.created(t, "/v1/tasks", "POST /v1/tasks", `{"assignee":"luke","title":"of no conversation"}`, nil)
	list := func(q map[string]string) (int, httpapi.ErrorBody, []struct{ ID string }, string) {
		return listed[struct{ ID string }](t, a, "/v1/tasks", "GET /v1/tasks", nil, q)
	}
	idsOf := func(items []struct{ ID string }) []string {
		out := []string{}
		for _, it := range items {
			out = append(out, it.ID)
		}
		return out
	}
	st, _, items, _ := list(map[string]string{"conversation_id": conv})
	require.Equal(t, 200, st)
	assert.Equal(t, []string{t2, t1}, idsOf(items), "newest first, its own alone")
	st, _, items, _ = list(map[string]string{"conversation_id": conv, "assignee": "luke", "status": "queued"})
	require.Equal(t, 200, st)
	assert.Equal(t, []string{t1}, idsOf(items))
	st, _, items, _ = list(map[string]string{"conversation_id": conv, "agent": "dana"})
	require.Equal(t, 200, st)
	assert.Equal(t, []string{t2}, idsOf(items))
	st, _, items, next := list(map[string]string{"conversation_id": conv, "limit": "1"})
	require.Equal(t, 200, st)
	require.NotEmpty(t, next)
	st, _, more, _ := list(map[string]string{"conversation_id": conv, "limit": "1", "next_token": next})
	require.Equal(t, 200, st)
	assert.Equal(t, []string{t2, t1}, append(idsOf(items), idsOf(more)...), "a page at a time")
	st, e, _, _ := list(map[string]string{"limit": "1", "next_token": next})
	assert.Equal(t, 400, st, "the conversation's token is not the board's")
	assert.Equal(t, "next_token", e.Error.Field)

	for _, c := range []struct {
		q     map[string]string
		field string
	}{
		{map[string]string{"conversation_id": "conv_nope"}, "conversation_id"},
		{map[string]string{"conversation_id": t1}, "conversation_id"},
		{map[string]string{"conversation_id": conv, "parent_task_id": t1}, "conversation_id"},
		{map[string]string{"conversation_id": conv, "sort": "priority", "assignee": "luke", "status": "queued"}, "sort"},
		{map[string]string{"conversation_id": conv, "status": "nope"}, "status"},
		{map[string]string{"conversation_id": conv, "assignee": "Not A Slug"}, "assignee"},
	} {
		st, e, _, _ := list(c.q)
		assert.Equal(t, 400, st, "%v", c.q)
		assert.Equal(t, c.field, e.Error.Field, "%v", c.q)
	}
	theirs := conversations.Conversation{ID: ids.New("conv"), TeamID: "team_other", Title: "theirs", Status: conversations.StatusOpen, Version: 1}
	require.NoError(t, a.store.CreateConversation(t.Context(), theirs, nil))
	st, _, items, _ = list(map[string]string{"conversation_id": theirs.ID})
	require.Equal(t, 200, st)
	assert.Empty(t, items, "another team's conversation lists none")
}

// GET /v1/conversations?agent= lists the conversations the agent took
// part in, newest first; a malformed slug is 400 naming agent; an empty
// one lists every conversation.
func TestConversationsOfAnAgent(t *testing.T) {
	a := newInMemoryAPI(t)
	first := a.created(t, "/v1/conversations", "POST /v1/conversations", `{"title":"one","agent":"luke"}`, nil)
	a.created(t, "/v1/conversations", "POST /v1/conversations", `{"title":"two","agent":"kyra"}`, nil)
	third := a.created(t, "/v1/conversations", "POST /v1/conversations", `{"title":"three","agent":"luke"}`, nil)
	list := func(q map[string]string) (int, httpapi.ErrorBody, []conversations.Conversation, string) {
		return listed[conversations.Conversation](t, a, "/v1/conversations", "GET /v1/conversations", nil, q)
	}
	st, _, items, _ := list(map[string]string{"agent": "luke"})
	require.Equal(t, 200, st)
	require.Len(t, items, 2)
	assert.Equal(t, []string{third, first}, []string{items[0].ID, items[1].ID}, "newest first, not kyra's")
	assert.Equal(t, "three", items[0].Title)
	st, _, items, next := list(map[string]string{"agent": "luke", "limit": "1"})
	require.Equal(t, 200, st)
	require.Len(t, items, 1)
	st, _, more, _ := list(map[string]string{"agent": "luke", "limit": "1", "next_token": next})
	require.Equal(t, 200, st)
	require.Len(t, more, 1)
	assert.Equal(t, first, more[0].ID)
	st, e, _, _ := list(map[string]string{"agent": "kyra", "limit": "1", "next_token": next})
	assert.Equal(t, 400, st, "luke's token is not kyra's")
	assert.Equal(t, "next_token", e.Error.Field)

	st, _, items, _ = list(map[string]string{"agent": "sage"})
	require.Equal(t, 200, st)
	assert.Empty(t, items, "an agent the team does not have took part in none")
	st, _, items, _ = list(map[string]string{"agent": ""})
	require.Equal(t, 200, st)
	assert.Len(t, items, 3, "an empty agent: every conversation")
	for _, bad := range []string{"Luke", "l", "luke!", "-luke", "luke_", "a-very-long-agent-slug-that-is-over-forty-chars"} {
		st, e, _, _ := list(map[string]string{"agent": bad})
		assert.Equal(t, 400, st, bad)
		assert.Equal(t, "agent", e.Error.Field, bad)
	}
}
