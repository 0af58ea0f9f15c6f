//go:build integration

package cloud_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/authctx"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/teams"
	"github.com/conclave-ai/conclave/shared/wire"
	"github.com/conclave-ai/conclave/shared/wire/a2afn"
	"github.com/conclave-ai/conclave/shared/wire/conversationsfn"
)

// The flags' progression (seed 000), written out here rather than read
// from settings.Flags.Effective, so the table below does not take its
// expectations from the code it tests: turning a flag off closes every
// door of the flags built on it.
var closedWith = map[string][]string{
	settings.FlagCollaboration:  {settings.FlagCollaboration, settings.FlagTaskDelegation, settings.FlagSessions},
	settings.FlagTaskDelegation: {settings.FlagTaskDelegation, settings.FlagSessions},
	settings.FlagSessions:       {settings.FlagSessions},
}

// door is one place where new work enters: open reports whether it let
// the work through on the wiring deps builds.
type door struct {
	name string
	// flag is the flag that closes it (with those it is built on).
	flag string
	open func(t *testing.T, w doorWiring) (bool, string)
}

// doorWiring is one stage: the functions' own builders with its flags,
// on the local cloud.
type doorWiring struct {
	deps   lambdafn.Deps
	team   demoTeam
	a2aID  string
	kyra   agents.Agent
	chat   conversations.Config
	routes map[string]func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)
}

// route is a door on the HTTP API: the function's own router, which
// answers 409 FeatureDisabled before anything runs when the door is
// closed; anything else (here a 400 for the empty body, a 404) means the
// request reached the service.
func route(fn, key, flag string) door {
	return door{name: key, flag: flag, open: func(t *testing.T, w doorWiring) (bool, string) {
		method, path, _ := strings.Cut(key, " ")
		res, err := w.routes[fn](context.Background(), events.APIGatewayV2HTTPRequest{
			RouteKey: key, RawPath: path, Body: "{}",
			PathParameters: map[string]string{"id": "conv_00000000000000000000000000000000", "slug": "kyra"},
			Headers:        map[string]string{"content-type": "application/json"},
			RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "door", HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path},
				Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{authctx.TeamID: w.team.id, authctx.KeyID: "key_door"}}},
		})
		require.NoError(t, err)
		closed := res.StatusCode == 409 && strings.Contains(res.Body, `"FeatureDisabled"`)
		if closed {
			assert.Contains(t, res.Body, `"`+flag+`"`, "%s names its flag", key)
			// The router refuses it before the handler runs (a service
			// that checks the flag itself, as sessions do, is a second
			// check, not the door).
			assert.Contains(t, res.Body, key+` is turned off in this stage`, "%s is closed by its route", key)
		}
		return !closed, fmt.Sprintf("%d %s", res.StatusCode, res.Body)
	}}
}

// tool is a collaboration tool in a chat reply: offered to the agent, and
// run when called. A tool the stage closes is neither: a model that names
// it anyway is told it is not available.
func tool(name, flag string) door {
	return door{name: "chat tool " + name, flag: flag, open: func(t *testing.T, w doorWiring) (bool, string) {
		specs := w.chat.Tools.Specs(w.kyra)
		offered := slices.ContainsFunc(specs, func(s models.Tool) bool { return s.Name == name })
		if offered {
			return true, "offered"
		}
		res, err := w.chat.Tools.Call(context.Background(), conversations.ToolCaller{TeamID: w.team.id, ConversationID: "conv_00000000000000000000000000000000",
			Agent: "kyra", Skills: w.kyra.Skills, Offered: specs}, models.ToolCall{ID: "door", Name: name, Input: `{}`})
		require.NoError(t, err)
		return !strings.Contains(res.Text, "not available"), res.Text
	}}
}

// Every door where new work enters, walked with every flag off in turn on
// the functions' own builders (wire.Routers, conversationsfn, a2afn) on the
// local cloud: a door whose flag is off lets nothing through, and every
// door is open while its flags are on (so a probe that could not see an
// open door fails too). Flags stop new work at the door; reading,
// finishing and canceling what exists stay open (manifest.RouteFlags).
func TestEveryDoorFollowsEveryFlag(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	ctx := context.Background()
	a2aID, err := teams.NewService(e.db.teams).A2AID(ctx, d.id)
	require.NoError(t, err)
	kyra, err := agents.NewService(e.db.agents).Get(ctx, d.id, "kyra")
	require.NoError(t, err)
	// The team's MCP pack, and an agent whose skill names it.
	srv := startMCPServer(t)
	st, res := d.call("PUT", "/v1/tool-packs/crm", map[string]any{"url": srv.url, "credential": srv.token})
	require.Equal(t, 201, st, res)
	st, res = d.call("POST", "/v1/agents", map[string]any{"slug": "orders", "name": "Orders", "skills": []any{
		map[string]any{"name": "orders", "description": "answers questions on orders", "packs": []string{"crm"}}}})
	require.Equal(t, 201, st, res)

	doors := []door{
		// The routes that start new work (docs/api.md, "Feature flags").
		route("conversations", "POST /v1/conversations/{id}/handoff", settings.FlagCollaboration),
		route("conversations", "POST /v1/conversations/{id}/return", settings.FlagCollaboration),
		route("conversations", "POST /v1/conversations/{id}/agents", settings.FlagCollaboration),
		route("messages", "POST /v1/agents/{slug}/messages", settings.FlagCollaboration),
		route("memories", "POST /v1/agents/{slug}/memories", settings.FlagCollaboration),
		route("consultations", "POST /v1/consultations", settings.FlagCollaboration),
		route("tasks", "POST /v1/tasks", settings.FlagTaskDelegation),
		route("tasks", "POST /v1/tasks/{id}/delegate", settings.FlagTaskDelegation),
		route("reports", "POST /v1/reports", settings.FlagTaskDelegation),
		route("sessions", "POST /v1/sessions", settings.FlagSessions),
		route("sessions", "POST /v1/sessions/{id}/resume", settings.FlagSessions),
		// Not a door of new work, so open with every flag: it starts an
		// accepted work item as POST /v1/tasks/{id}/start does (a board
		// transition, no model call), and turning task_delegation off
		// must not strand the queues. Its tool next_task is gated with
		// the other task tools (catalog).
		route("tasks", "POST /v1/agents/{slug}/next-task", ""),
		// The tools of a chat reply (the same wiring as a task's:
		// agenttoolswiring): consultations, reports, tasks and sessions
		// started by an agent.
		tool("delegate_task", settings.FlagTaskDelegation),
		tool("next_task", settings.FlagTaskDelegation),
		tool("request_report", settings.FlagTaskDelegation),
		tool("start_collaboration", settings.FlagSessions),
		tool("send_agent_message", settings.FlagCollaboration),
		tool("handoff_to", settings.FlagCollaboration),
		tool("consult_specialist", settings.FlagCollaboration),
		// A consultation is answered by a task of the specialist's where
		// tasks are delegated, within the call otherwise.
		consultTask(e),
		// The tool packs of a chat reply: those its skill names, and
		// those request_tool_pack adds.
		skillPack(srv),
		requestPack(),
		// The compound planner: part of collaboration (collaboration off
		// is direct dispatch) and its steps are executed tasks.
		{name: "the planner of a chat turn", flag: settings.FlagTaskDelegation, open: func(t *testing.T, w doorWiring) (bool, string) {
			svc := conversations.MustNew(w.chat)
			conv, err := svc.Create(ctx, w.team.id, conversations.CreateInput{Title: "doors", Agent: "kyra"})
			require.NoError(t, err)
			res, err := svc.Post(ctx, w.team.id, conv.ID, conversations.PostInput{Content: "Review the payment handler for bugs, then write release notes " +
				planMarker(`{"step_id":1,"target":"luke/code-review","sub_query":"Review the payment handler","depends_on":[]},{"step_id":2,"target":"wren/writing","sub_query":"Write release notes","depends_on":[1]}`)})
			require.NoError(t, err)
			reply := res.Replies[len(res.Replies)-1]
			planned := slices.ContainsFunc(reply.Pending, func(r conversations.WorkRef) bool { return r.Type == "plan" })
			if planned {
				cancelPlan(t, w, reply.Pending)
			}
			return planned, string(res.Routing.Strategy)
		}},
		// A2A: a message is answered as an executed task.
		{name: "an A2A message", flag: settings.FlagTaskDelegation, open: func(t *testing.T, w doorWiring) (bool, string) {
			res, err := a2afn.New(w.deps).Serve(ctx, events.APIGatewayV2HTTPRequest{
				RouteKey: a2afn.RouteRPC, PathParameters: map[string]string{"a2a_id": w.a2aID},
				Headers:        map[string]string{"x-forwarded-proto": "https", "content-type": "application/json", "x-api-key": w.team.key, "a2a-version": "1.0"},
				Body:           `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"door","role":"ROLE_USER","parts":[{"text":"@kyra hello"}]},"configuration":{"returnImmediately":true}}}`,
				RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "door", DomainName: "api.example"},
			})
			require.NoError(t, err)
			var out map[string]any
			require.NoError(t, json.Unmarshal([]byte(res.Body), &out), res.Body)
			if rpcErr, refused := out["error"].(map[string]any); refused {
				assert.EqualValues(t, -32004, rpcErr["code"], "UnsupportedOperationError: %v", rpcErr)
				assert.Contains(t, res.Body, "task_delegation")
				return false, res.Body
			}
			task, _ := out["result"].(map[string]any)["task"].(map[string]any)
			return task["id"] != nil, res.Body
		}},
	}
	// Every route the manifest gates is a door of the table (a route
	// gated in the manifest and missing here would go untested).
	for key := range manifest.RouteFlags {
		assert.True(t, slices.ContainsFunc(doors, func(d door) bool { return d.name == key }), "%s is a door of the table", key)
	}

	machines := settings.EncodePairs(stateMachineARNs(t, e))
	all := settings.Flags{Collaboration: true, ExpertGate: true, Ensemble: true, TaskDelegation: true, Sessions: true, RouterModel: true}
	for _, off := range append([]string{""}, settings.FlagNames...) {
		flags := all
		if off != "" {
			flags = settings.ParseFlags(strings.ReplaceAll(all.String(), off+"=true", off+"=false"))
		}
		w := newDoorWiring(t, e, d, flags, machines)
		w.a2aID, w.kyra = a2aID, kyra
		for _, dr := range doors {
			wantOpen := !slices.Contains(closedWith[off], dr.flag)
			open, detail := dr.open(t, w)
			assert.Equal(t, wantOpen, open, "%s with %q off: %s", dr.name, off, detail)
		}
	}
}

func newDoorWiring(t *testing.T, e env, d demoTeam, flags settings.Flags, machines string) doorWiring {
	t.Helper()
	vars := map[string]string{settings.EnvStage: e.names.Stage, settings.EnvTable: e.names.Table(), settings.EnvBus: e.names.Bus(),
		settings.EnvFlags: flags.String(), settings.EnvStateMachines: machines, settings.EnvModelProvider: "local",
		settings.EnvFunctions: "expert-gate=" + e.names.Function("expert-gate"),
		// The package's MCP server listens on loopback, as the local
		// cloud's functions allow.
		settings.EnvMCPLoopbackOnly: "true"}
	deps := lambdafn.Deps{Config: settings.FromLookup(func(k string) string { return vars[k] }), AWS: e.cfg, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	w := doorWiring{deps: deps, team: d, routes: map[string]func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error){}}
	for _, fn := range []string{"conversations", "messages", "memories", "consultations", "tasks", "reports", "sessions"} {
		rt, err := wire.Routers[fn](deps)
		require.NoError(t, err, fn)
		w.routes[fn] = rt.Serve
	}
	var err error
	w.chat, err = conversationsfn.Config(deps, e.db.core)
	require.NoError(t, err)
	return w
}

// cancelPlan cancels the plan a door let through: the test asks only
// whether it started.
func cancelPlan(t *testing.T, w doorWiring, refs []conversations.WorkRef) {
	t.Helper()
	for _, r := range refs {
		if r.Type == "plan" {
			st, body := w.team.call("POST", "/v1/plans/"+r.ID+"/cancel", nil)
			assert.Contains(t, []int{200, 202, 409}, st, body)
		}
	}
}
