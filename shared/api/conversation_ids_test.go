package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/testkit/demo"
)

// Every route that accepts a conversation_id answers 404 not_found for a
// conversation that is another team's, unknown or malformed, and writes
// nothing; the team's own conversation is accepted.
func TestEveryConversationIDIsAConversationOfTheTeam(t *testing.T) {
	a := newInMemoryAPI(t)
	ctx := context.Background()
	newConv := func(team string) string {
		c := conversations.Conversation{ID: ids.New("conv"), TeamID: team, Title: "c", Status: conversations.StatusOpen, Version: 1}
		require.NoError(t, a.store.CreateConversation(ctx, c, nil))
		return c.ID
	}
	own, foreign := newConv(demo.TeamID), newConv("team_other")

	parent := a.call("POST", "/v1/tasks", "POST /v1/tasks", `{"assignee":"kyra","title":"parent"}`, nil)
	require.Equal(t, 201, parent.StatusCode, parent.Body)
	var p struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(parent.Body), &p))
	started := a.call("POST", "/v1/tasks/"+p.ID+"/start", "POST /v1/tasks/{id}/start", "", map[string]string{"id": p.ID})
	require.Equal(t, 200, started.StatusCode, started.Body)

	routes := []struct{ key, path, body string }{
		{"POST /v1/tasks", "/v1/tasks", `{"assignee":"luke","title":"t","conversation_id":%q}`},
		{"POST /v1/tasks/{id}/delegate", "/v1/tasks/" + p.ID + "/delegate", `{"assignee":"luke","title":"t","execute":false,"conversation_id":%q}`},
		{"POST /v1/reports", "/v1/reports", `{"type":"code_review","to":"luke","title":"t","parameters":{"files":["src/"]},"conversation_id":%q}`},
		{"POST /v1/sessions", "/v1/sessions", `{"pattern":"brainstorm","lead":"kyra","goal":"g","participants":[{"agent":"luke","role":"contributor"},{"agent":"dana","role":"contributor"}],"conversation_id":%q}`},
		{"POST /v1/consultations", "/v1/consultations", `{"requesting_agent":"kyra","question":"how do I tune the parser?","conversation_id":%q}`},
	}
	for _, r := range routes {
		for _, conv := range []string{foreign, ids.New("conv"), "conv_nope", "conv_%00"} {
			before := a.snapshot(t)
			resp := a.call("POST", r.path, r.key, strings.Replace(r.body, "%q", jsonString(conv), 1), map[string]string{"id": p.ID})
			require.Equal(t, 404, resp.StatusCode, "%s %s: %s", r.key, conv, resp.Body)
			var e httpapi.ErrorBody
			require.NoError(t, json.Unmarshal([]byte(resp.Body), &e))
			assert.Equal(t, "not_found", e.Error.Code)
			assert.Contains(t, e.Error.Message, "conversation")
			assert.Equal(t, before, a.snapshot(t), "%s with %s wrote nothing", r.key, conv)
		}
		resp := a.call("POST", r.path, r.key, strings.Replace(r.body, "%q", jsonString(own), 1), map[string]string{"id": p.ID})
		require.Equal(t, 201, resp.StatusCode, "%s: %s", r.key, resp.Body)
		var got struct {
			ConversationID string `json:"conversation_id"`
		}
		require.NoError(t, json.Unmarshal([]byte(resp.Body), &got))
		assert.Equal(t, own, got.ConversationID, r.key)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
