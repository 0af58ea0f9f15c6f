package api_test

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/ids"
)

// messagesOf is GET /v1/conversations/{id}/messages with query.
func (a inMemoryAPI) messagesOf(conv string, query map[string]string) (int, httpapi.ErrorBody, []conversations.Message) {
	resp := a.callQuery("GET", "/v1/conversations/"+conv+"/messages", "GET /v1/conversations/{id}/messages", "", map[string]string{"id": conv}, query)
	var e httpapi.ErrorBody
	var page struct {
		Items []conversations.Message `json:"items"`
	}
	if resp.StatusCode >= 400 {
		_ = json.Unmarshal([]byte(resp.Body), &e)
	} else {
		_ = json.Unmarshal([]byte(resp.Body), &page)
	}
	return resp.StatusCode, e, page.Items
}

// The long-poll's parameters: after must be a message id, wait a whole
// number of seconds from 0 to 20 and only with after; anything else is a
// 400 naming the parameter. Without after the route lists as before.
func TestMessagesLongPollParameters(t *testing.T) {
	a := newInMemoryAPI(t)
	resp := a.call("POST", "/v1/conversations", "POST /v1/conversations", `{"title":"poll"}`, nil)
	require.Equal(t, 201, resp.StatusCode, resp.Body)
	var conv struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(resp.Body), &conv))
	after := ids.New("msg")

	for _, c := range []struct {
		q     map[string]string
		field string
	}{
		{map[string]string{"after": ""}, "after"}, {map[string]string{"after": "msg_x"}, "after"},
		{map[string]string{"after": "conv_" + after[4:]}, "after"}, {map[string]string{"after": after + "0"}, "after"},
		{map[string]string{"after": "msg_x", "wait": "1"}, "after"},
		{map[string]string{"after": after, "wait": "21"}, "wait"}, {map[string]string{"after": after, "wait": "-1"}, "wait"},
		{map[string]string{"after": after, "wait": "1.5"}, "wait"}, {map[string]string{"after": after, "wait": "01"}, "wait"},
		{map[string]string{"after": after, "wait": ""}, "wait"}, {map[string]string{"after": after, "wait": "x"}, "wait"},
		{map[string]string{"wait": "1"}, "wait"}, {map[string]string{"wait": "0"}, "wait"},
	} {
		st, e, _ := a.messagesOf(conv.ID, c.q)
		require.Equal(t, 400, st, "%v", c.q)
		assert.Equal(t, c.field, e.Error.Field, "%v", c.q)
	}
	st, _, items := a.messagesOf(conv.ID, map[string]string{"after": after, "wait": "0"})
	assert.Equal(t, 200, st)
	assert.NotNil(t, items)
	assert.Empty(t, items)
	st, _, _ = a.messagesOf(conv.ID, nil)
	assert.Equal(t, 200, st)
	st, e, _ := a.messagesOf(ids.New("conv"), map[string]string{"after": after, "wait": "20"})
	assert.Equal(t, 404, st, "an unknown conversation is not waited on")
	assert.Equal(t, "not_found", e.Error.Code)
}

// FuzzMessagesLongPoll sends arbitrary after and wait values: no 5xx, a
// refusal names after or wait, and well-formed values reach the service
// (an unknown conversation: 404 at once, so the fuzzer never waits).
func FuzzMessagesLongPoll(f *testing.F) {
	valid := ids.New("msg")
	for _, s := range [][2]string{{valid, "0"}, {valid, "20"}, {valid, "21"}, {"", "1"}, {valid, ""}, {"msg_", "5"}, {valid + "\x00", "1"},
		{valid, "+5"}, {valid, " 5"}, {valid, "5s"}, {valid, "1e1"}, {valid, "9223372036854775808"}, {"MSG_" + valid[4:], "1"}} {
		f.Add(s[0], s[1], true)
		f.Add(s[0], s[1], false)
	}
	a := newInMemoryAPI(f)
	conv := ids.New("conv")
	f.Fuzz(func(t *testing.T, after, wait string, withWait bool) {
		q := map[string]string{"after": after}
		if withWait {
			q["wait"] = wait
		}
		st, e, _ := a.messagesOf(conv, q)
		n, err := strconv.Atoi(wait)
		okWait := !withWait || err == nil && n >= 0 && n <= conversations.MaxWait && strconv.Itoa(n) == wait
		switch {
		case st >= 500:
			t.Fatalf("after=%q wait=%q: %d", after, wait, st)
		case ids.Valid("msg", after) && okWait:
			if st != 404 {
				t.Fatalf("after=%q wait=%q: well-formed, want 404 for an unknown conversation, got %d %+v", after, wait, st, e)
			}
		default:
			if st != 400 || (e.Error.Field != "after" && e.Error.Field != "wait") {
				t.Fatalf("after=%q wait=%q: want 400 naming after or wait, got %d %+v", after, wait, st, e)
			}
		}
	})
}
