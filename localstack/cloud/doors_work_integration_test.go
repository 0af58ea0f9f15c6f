//go:build integration

package cloud_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/settings"
)

// The doors of the door × flag table (TestEveryDoorFollowsEveryFlag)
// where a chat reply's tools start work or gain tools: a consultation's
// task, a skill's MCP pack, request_tool_pack.

var consultationID = regexp.MustCompile(`cons_[0-9A-Za-z]+`)

// consultTask is consult_specialist asked from a chat reply: it starts
// an executed task of the specialist's only with task_delegation
// (otherwise the specialist answers within the call, as POST
// /v1/consultations does), and with collaboration off it is not
// available at all. Each probe asks from a team of its own, so no
// earlier probe's consultation holds the asker's slots or makes the
// question a repeat.
func consultTask(e env) door {
	return door{name: "consult_specialist in a chat reply starts the specialist's task", flag: settings.FlagTaskDelegation, open: func(t *testing.T, w doorWiring) (bool, string) {
		fresh := mustDemoTeam(t, e)
		conv := fresh.conversation("kyra")
		res, err := w.chat.Tools.Call(context.Background(), conversations.ToolCaller{TeamID: fresh.id, ConversationID: conv, Agent: "kyra",
			Skills: w.kyra.Skills, Offered: w.chat.Tools.Specs(w.kyra)},
			models.ToolCall{ID: "door", Name: "consult_specialist", Input: `{"question":"Is our JWT authentication vulnerable to token replay attacks?"}`})
		require.NoError(t, err)
		id := consultationID.FindString(res.Text)
		if id == "" {
			return false, res.Text
		}
		st, c := fresh.call("GET", "/v1/consultations/"+id, nil)
		require.Equal(t, 200, st, c)
		task, _ := c["task_id"].(string)
		if task != "" {
			// Only whether it started matters here.
			fresh.call("POST", "/v1/tasks/"+task+"/cancel", map[string]any{})
		}
		return task != "", fmt.Sprintf("%s: status %v, task %q", res.Text, c["status"], task)
	}}
}

// skillPack is a chat reply of the agent whose skill names the team's MCP
// pack (orders, crm): the reply is given the pack's tools, and its call
// reaches the MCP server. With collaboration off the reply has no tool,
// a pack's included (agenttools.Chat.PackSpecs).
func skillPack(srv mcpServer) door {
	var n atomic.Int32
	return door{name: "a skill's MCP pack in a chat reply", flag: settings.FlagCollaboration, open: func(t *testing.T, w doorWiring) (bool, string) {
		ctx := context.Background()
		order := fmt.Sprintf("%sDOOR-%d", chatOrders, n.Add(1))
		svc := conversations.MustNew(w.chat)
		conv, err := svc.Create(ctx, w.team.id, conversations.CreateInput{Title: "doors", Agent: "orders"})
		require.NoError(t, err)
		res, err := svc.Post(ctx, w.team.id, conv.ID, conversations.PostInput{
			Content: `@orders [call:crm__lookup_order {"order_id":"` + order + `"}] Where is order ` + order + `?`})
		require.NoError(t, err)
		reply := res.Replies[len(res.Replies)-1]
		called := slices.ContainsFunc(srv.calls(t), func(c map[string]any) bool {
			args, _ := c["arguments"].(map[string]any)
			return args["order_id"] == order
		})
		var used []string
		for _, u := range reply.ToolCalls {
			used = append(used, u.Tool)
		}
		return called, fmt.Sprintf("%s answered with tools %v: %s", reply.Agent, used, reply.Content)
	}}
}

// requestPack is request_tool_pack in a chat reply: it adds the team's
// MCP pack's tools to the reply.
func requestPack() door {
	return door{name: "chat tool request_tool_pack", flag: settings.FlagCollaboration, open: func(t *testing.T, w doorWiring) (bool, string) {
		res, err := w.chat.Tools.Call(context.Background(), conversations.ToolCaller{TeamID: w.team.id, ConversationID: "conv_00000000000000000000000000000000",
			Agent: "kyra", Skills: w.kyra.Skills, Offered: w.chat.Tools.Specs(w.kyra)},
			models.ToolCall{ID: "door", Name: "request_tool_pack", Input: `{"pack":"crm"}`})
		require.NoError(t, err)
		added := res.Pack == "crm" && slices.ContainsFunc(res.Offered, func(s models.Tool) bool { return strings.HasPrefix(s.Name, "crm__") })
		return added, res.Text
	}}
}
