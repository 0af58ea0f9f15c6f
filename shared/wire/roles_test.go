package wire_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/api/conversationsapi"
	"github.com/conclave-ai/conclave/shared/api/streamsapi"
	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/models/localmodel"
	"github.com/conclave-ai/conclave/shared/platform/authctx"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/testkit/demo"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
	"github.com/conclave-ai/conclave/shared/wire"
	"github.com/conclave-ai/conclave/shared/wire/streamsfn"
)

// roleTable is what each caller gets on every route behind the
// authorizer, written out here (not read from manifest.MemberRoutes, which
// it checks): a key, an admin, a member, and another member of the same
// team. "ok" passes the role check, "403" is forbidden (RoleForbidden)
// before anything runs, "404" is another member's conversation, task,
// session or report (TestWhatAMemberStartsIsNotFoundToAnotherMember in
// shared/api checks the last three on the real routes).
var roleTable = []roleRow{
	{"DELETE /v1/keys/{id}", "ok", "ok", "403", "403"},
	{"DELETE /v1/tool-packs/{name}", "ok", "ok", "403", "403"},
	{"GET /v1/activity", "ok", "ok", "403", "403"},
	{"GET /v1/agents", "ok", "ok", "ok", "ok"},
	{"GET /v1/agents/experts", "ok", "ok", "ok", "ok"},
	{"GET /v1/agents/recommend", "ok", "ok", "ok", "ok"},
	{"GET /v1/agents/{slug}", "ok", "ok", "ok", "ok"},
	{"GET /v1/agents/{slug}/availability", "ok", "ok", "ok", "ok"},
	{"GET /v1/agents/{slug}/example-suggestions", "ok", "ok", "403", "403"},
	{"GET /v1/agents/{slug}/inbox", "ok", "ok", "403", "403"},
	{"GET /v1/agents/{slug}/load", "ok", "ok", "403", "403"},
	{"GET /v1/agents/{slug}/memories", "ok", "ok", "403", "403"},
	{"GET /v1/agents/{slug}/tools", "ok", "ok", "ok", "ok"},
	{"GET /v1/approval-policy", "ok", "ok", "403", "403"},
	{"GET /v1/approvals", "ok", "ok", "ok", "ok"},
	{"GET /v1/approvals/{id}", "ok", "ok", "ok", "ok"},
	{"GET /v1/board-policy", "ok", "ok", "403", "403"},
	{"GET /v1/budget", "ok", "ok", "403", "403"},
	{"GET /v1/consultations", "ok", "ok", "403", "403"},
	{"GET /v1/consultations/metrics", "ok", "ok", "403", "403"},
	{"GET /v1/consultations/{id}", "ok", "ok", "403", "403"},
	{"GET /v1/conversations", "ok", "ok", "ok", "ok"},
	{"GET /v1/conversations/{id}", "ok", "ok", "ok", "404"},
	{"GET /v1/conversations/{id}/context", "ok", "ok", "ok", "404"},
	{"GET /v1/conversations/{id}/handoffs", "ok", "ok", "ok", "404"},
	{"GET /v1/conversations/{id}/messages", "ok", "ok", "ok", "404"},
	{"GET /v1/conversations/{id}/work", "ok", "ok", "ok", "404"},
	{"GET /v1/escalations", "ok", "ok", "403", "403"},
	{"GET /v1/health", "ok", "ok", "ok", "ok"},
	{"GET /v1/keys", "ok", "ok", "403", "403"},
	{"GET /v1/models", "ok", "ok", "403", "403"},
	{"GET /v1/plans", "ok", "ok", "ok", "ok"},       // a member lists their own
	{"GET /v1/plans/{id}", "ok", "ok", "ok", "404"}, // another member's: not found
	{"GET /v1/report-templates", "ok", "ok", "403", "403"},
	{"GET /v1/reports", "ok", "ok", "ok", "ok"},       // a member lists their own
	{"GET /v1/reports/{id}", "ok", "ok", "ok", "404"}, // another member's: not found
	{"GET /v1/routing/analytics/agents", "ok", "ok", "403", "403"},
	{"GET /v1/routing/analytics/strategies", "ok", "ok", "403", "403"},
	{"GET /v1/routing/calibration", "ok", "ok", "403", "403"},
	{"GET /v1/routing/decisions", "ok", "ok", "403", "403"},
	{"GET /v1/routing/decisions/{id}", "ok", "ok", "403", "403"},
	{"GET /v1/routing/evaluations", "ok", "ok", "403", "403"},
	{"GET /v1/routing/evaluations/{id}", "ok", "ok", "403", "403"},
	{"GET /v1/sessions", "ok", "ok", "ok", "ok"},       // a member lists their own
	{"GET /v1/sessions/{id}", "ok", "ok", "ok", "404"}, // another member's: not found
	{"GET /v1/sessions/{id}/trace", "ok", "ok", "403", "403"},
	{"GET /v1/skills", "ok", "ok", "ok", "ok"},
	{"GET /v1/skills/{agent}/{name}", "ok", "ok", "ok", "ok"},
	{"GET /v1/tasks", "ok", "ok", "ok", "ok"},       // a member lists their own
	{"GET /v1/tasks/{id}", "ok", "ok", "ok", "404"}, // another member's: not found
	{"GET /v1/team", "ok", "ok", "403", "403"},
	{"GET /v1/team/identity", "ok", "ok", "403", "403"},
	{"GET /v1/tool-packs", "ok", "ok", "ok", "ok"},
	{"GET /v1/tool-packs/{name}", "ok", "ok", "ok", "ok"},
	{"GET /v1/usage", "ok", "ok", "ok", "ok"}, // a member reads their own
	{"PATCH /v1/agents/{slug}", "ok", "ok", "403", "403"},
	{"POST /v1/agents", "ok", "ok", "403", "403"},
	{"POST /v1/agents/{slug}/activate", "ok", "ok", "403", "403"},
	{"POST /v1/agents/{slug}/archive", "ok", "ok", "403", "403"},
	{"POST /v1/agents/{slug}/example-suggestions/{id}/accept", "ok", "ok", "403", "403"},
	{"POST /v1/agents/{slug}/example-suggestions/{id}/dismiss", "ok", "ok", "403", "403"},
	{"POST /v1/agents/{slug}/inbox/read", "ok", "ok", "403", "403"},
	{"POST /v1/agents/{slug}/memories", "ok", "ok", "403", "403"},
	{"POST /v1/agents/{slug}/messages", "ok", "ok", "403", "403"},
	{"POST /v1/agents/{slug}/next-task", "ok", "ok", "403", "403"},
	{"POST /v1/agents/{slug}/pause", "ok", "ok", "403", "403"},
	{"POST /v1/agents/{slug}/refresh", "ok", "ok", "403", "403"},
	{"POST /v1/approvals/{id}", "ok", "ok", "ok", "ok"},
	{"POST /v1/consultations", "ok", "ok", "403", "403"},
	{"POST /v1/consultations/{id}/exchanges", "ok", "ok", "403", "403"},
	{"POST /v1/consultations/{id}/outcome", "ok", "ok", "403", "403"},
	{"POST /v1/conversations", "ok", "ok", "ok", "ok"},
	{"POST /v1/conversations/{id}/agents", "ok", "ok", "ok", "404"},
	{"POST /v1/conversations/{id}/close", "ok", "ok", "ok", "404"},
	{"POST /v1/conversations/{id}/handoff", "ok", "ok", "ok", "404"},
	{"POST /v1/conversations/{id}/messages", "ok", "ok", "ok", "404"},
	{"POST /v1/conversations/{id}/messages/{message_id}/feedback", "ok", "ok", "ok", "404"},
	{"POST /v1/conversations/{id}/return", "ok", "ok", "ok", "404"},
	{"POST /v1/escalations/{id}/resolve", "ok", "ok", "403", "403"},
	{"POST /v1/keys", "ok", "ok", "403", "403"},
	{"POST /v1/keys/{id}/rotate", "ok", "ok", "403", "403"},
	{"POST /v1/plans/{id}/cancel", "ok", "ok", "403", "403"},
	{"POST /v1/reports", "ok", "ok", "ok", "ok"},
	{"POST /v1/routing/evaluations", "ok", "ok", "403", "403"},
	{"POST /v1/sessions", "ok", "ok", "ok", "ok"},
	{"POST /v1/sessions/{id}/approve", "ok", "ok", "403", "403"},
	{"POST /v1/sessions/{id}/cancel", "ok", "ok", "403", "403"},
	{"POST /v1/sessions/{id}/resume", "ok", "ok", "403", "403"},
	{"POST /v1/tasks", "ok", "ok", "ok", "ok"},
	{"POST /v1/tasks/{id}/assign", "ok", "ok", "403", "403"},
	{"POST /v1/tasks/{id}/block", "ok", "ok", "403", "403"},
	{"POST /v1/tasks/{id}/cancel", "ok", "ok", "403", "403"},
	{"POST /v1/tasks/{id}/complete", "ok", "ok", "403", "403"},
	{"POST /v1/tasks/{id}/delegate", "ok", "ok", "403", "403"},
	{"POST /v1/tasks/{id}/fail", "ok", "ok", "403", "403"},
	{"POST /v1/tasks/{id}/start", "ok", "ok", "403", "403"},
	{"PUT /v1/approval-policy", "ok", "ok", "403", "403"},
	{"PUT /v1/board-policy", "ok", "ok", "403", "403"},
	{"PUT /v1/budget", "ok", "ok", "403", "403"},
	{"PUT /v1/team/default-agent", "ok", "ok", "403", "403"},
	{"PUT /v1/team/identity", "ok", "ok", "403", "403"},
	{"PUT /v1/tool-packs/{name}", "ok", "ok", "403", "403"},
	{"GET /v1/conversations/{id}/events", "ok", "ok", "ok", "404"},
	{"GET /v1/plans/{id}/events", "ok", "ok", "ok", "404"},
	{"GET /v1/sessions/{id}/events", "ok", "ok", "ok", "404"},
}

// callers are the authorizer contexts of the table's four columns.
var callers = []struct {
	name string
	ctx  map[string]any
}{
	{"key", map[string]any{authctx.TeamID: demo.TeamID, authctx.KeyID: "key_1"}},
	{"admin", map[string]any{authctx.TeamID: demo.TeamID, authctx.UserID: "root", authctx.Role: authctx.RoleAdmin}},
	{"member", map[string]any{authctx.TeamID: demo.TeamID, authctx.UserID: "alice", authctx.Role: authctx.RoleMember}},
	{"other", map[string]any{authctx.TeamID: demo.TeamID, authctx.UserID: "bob", authctx.Role: authctx.RoleMember}},
}

type roleRow struct {
	route                     string
	key, admin, member, other string
}

func (r roleRow) want(caller string) string {
	return map[string]string{"key": r.key, "admin": r.admin, "member": r.member, "other": r.other}[caller]
}

// The table covers every route behind the authorizer, on both APIs, once.
func TestRoleTableCoversEveryRoute(t *testing.T) {
	served := map[string]bool{}
	for _, rt := range append(manifest.Routes(), manifest.StreamRoutes()...) {
		if !rt.Public {
			served[rt.Route.Key()] = true
		}
	}
	listed := map[string]bool{}
	for _, r := range roleTable {
		assert.False(t, listed[r.route], "%s listed twice", r.route)
		listed[r.route] = true
		assert.True(t, served[r.route], "%s is no route", r.route)
	}
	for k := range served {
		assert.True(t, listed[k], "the role table misses %s", k)
	}
}

// Every route of every function router, HTTP and streaming, answers each
// caller as the table says: a member's forbidden route is 403
// RoleForbidden; every other caller passes the role check. Each request
// carries a body over the limit, so a request that passes ends in 413 (or
// 409 for a flag that is off) and no handler runs.
func TestEveryRouteAnswersEachRoleAsTheTableSays(t *testing.T) {
	routers := map[string]*httpapi.Router{}
	for name, build := range wire.Routers {
		rt, err := build(deps())
		require.NoError(t, err, name)
		routers[name] = rt
	}
	stream, err := streamsfn.Router(deps())
	require.NoError(t, err)
	big := strings.Repeat("x", httpapi.MaxBodyBytes+1)
	tried := map[string]bool{}
	for name, rt := range routers {
		for _, key := range rt.RouteKeys() {
			for _, c := range callers {
				resp, err := rt.Serve(context.Background(), httpEvent(key, big, c.ctx))
				require.NoError(t, err)
				checkRole(t, name+" "+key, c.name, resp.StatusCode, resp.Body)
				tried[key] = true
			}
		}
	}
	for _, key := range stream.RouteKeys() {
		for _, c := range callers {
			resp, err := stream.ServeStream(context.Background(), restEvent(key, big, c.ctx, nil))
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			checkRole(t, "streams "+key, c.name, resp.StatusCode, string(body))
			tried[key] = true
		}
	}
	for _, r := range roleTable {
		assert.True(t, tried[r.route], "no router serves %s", r.route)
	}
}

func checkRole(t *testing.T, where, caller string, status int, body string) {
	t.Helper()
	var row string
	for _, r := range roleTable {
		if strings.HasSuffix(where, " "+r.route) {
			row = r.want(caller)
		}
	}
	require.NotEmpty(t, row, "%s is not in the role table", where)
	if row == "403" {
		assert.Equal(t, http.StatusForbidden, status, "%s as %s", where, caller)
		assert.Contains(t, body, `"reason":"RoleForbidden"`, "%s as %s", where, caller)
		return
	}
	assert.Contains(t, []int{http.StatusRequestEntityTooLarge, http.StatusConflict}, status, "%s as %s passes the role check: %s", where, caller, body)
}

// pathOf fills a route's parameters with ids no resource has.
func pathOf(key string) (method, path string, params map[string]string) {
	method, path, _ = strings.Cut(key, " ")
	params = map[string]string{}
	for _, part := range strings.Split(path, "/") {
		if strings.HasPrefix(part, "{") {
			params[strings.Trim(part, "{}")] = "x"
		}
	}
	return method, path, params
}

func httpEvent(key, body string, lc map[string]any) events.APIGatewayV2HTTPRequest {
	method, path, params := pathOf(key)
	ev := events.APIGatewayV2HTTPRequest{RouteKey: key, RawPath: path, PathParameters: params, Body: body, Headers: map[string]string{}}
	ev.RequestContext.RequestID = "req-roles"
	ev.RequestContext.HTTP.Method = method
	ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: lc}
	return ev
}

func restEvent(key, body string, lc map[string]any, headers map[string]string) events.APIGatewayProxyRequest {
	method, path, params := pathOf(key)
	return events.APIGatewayProxyRequest{HTTPMethod: method, Resource: path, Path: path, PathParameters: params, Body: body, Headers: headers,
		RequestContext: events.APIGatewayProxyRequestContext{RequestID: "req-roles", HTTPMethod: method, ResourcePath: path, Authorizer: lc}}
}

// A member's conversation is theirs on every conversation route of both
// APIs (the real routes on the in-memory store): another member of the
// team gets 404 naming the conversation, and nothing changes; its owner,
// an admin and a key reach it. The event stream
// (GET /v1/conversations/{id}/events) is streamsfn's, on DynamoDB: its
// 404 is checked on the local cloud (roles_integration_test.go).
func TestAnotherMembersConversationIsNotFoundOnEveryRoute(t *testing.T) {
	store := memstore.New()
	require.NoError(t, demo.Seed(context.Background(), store))
	mem := &memory.Service{Store: store, Dir: store, Bus: &memstore.Publisher{}}
	svc := conversations.MustNew(conversations.Config{Store: store, Agents: store, Model: localmodel.Model{}, Memories: mem,
		Bus: &memstore.Publisher{}, Now: time.Now, Router: &cascade.Router{Flags: cascade.Flags{Collaboration: true}, Tiers: routing.DefaultTierModels},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	rt := httpapi.NewRouter(slog.New(slog.NewTextHandler(io.Discard, nil)))
	conversationsapi.ConversationRoutes(rt, svc)
	stream := httpapi.NewStreamRouter(slog.New(slog.NewTextHandler(io.Discard, nil)))
	streamsapi.TurnRoute(stream, svc, 10*time.Second)

	member, other := callers[2].ctx, callers[3].ctx
	resp, err := rt.Serve(context.Background(), httpEvent("POST /v1/conversations", `{"title":"Alice's","agent":"luke"}`, member))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, resp.StatusCode, resp.Body)
	var conv conversations.Conversation
	require.NoError(t, json.Unmarshal([]byte(resp.Body), &conv))
	assert.Equal(t, "alice", conv.Owner)
	bodies := map[string]string{
		"POST /v1/conversations/{id}/messages":                       `{"content":"hello"}`,
		"POST /v1/conversations/{id}/messages/{message_id}/feedback": `{"rating":5}`,
		"POST /v1/conversations/{id}/handoff":                        `{"to":"kyra","reason":"ops"}`,
		"POST /v1/conversations/{id}/agents":                         `{"add":["kyra"]}`,
	}
	call := func(key string, lc map[string]any, sse bool) (int, string) {
		ev := httpEvent(key, bodies[key], lc)
		ev.PathParameters["id"] = conv.ID
		if key == "GET /v1/conversations/{id}/context" {
			ev.QueryStringParameters = map[string]string{"agent": "luke"}
		}
		if sse && key == "POST /v1/conversations/{id}/messages" {
			rev := restEvent(key, bodies[key], lc, map[string]string{"Accept": "text/event-stream"})
			rev.PathParameters["id"] = conv.ID
			out, err := stream.ServeStream(context.Background(), rev)
			require.NoError(t, err)
			b, _ := io.ReadAll(out.Body)
			return out.StatusCode, string(b)
		}
		out, err := rt.Serve(context.Background(), ev)
		require.NoError(t, err)
		return out.StatusCode, out.Body
	}
	notTheirs := `conversation \"` + conv.ID + `\" not found`
	checked := 0
	for _, r := range roleTable {
		if r.other != "404" || r.route == "GET /v1/conversations/{id}/events" || !strings.Contains(r.route, "/v1/conversations/") {
			continue
		}
		for _, sse := range []bool{false, true} {
			status, body := call(r.route, other, sse)
			assert.Equal(t, http.StatusNotFound, status, "%s to another member: %s", r.route, body)
			assert.Contains(t, body, notTheirs, r.route)
		}
		checked++
	}
	assert.Equal(t, 11, checked, "every conversation route but the event stream")
	for _, c := range callers[:3] {
		ev := httpEvent("GET /v1/conversations/{id}/messages", "", c.ctx)
		ev.PathParameters["id"] = conv.ID
		out, err := rt.Serve(context.Background(), ev)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, out.StatusCode, "%s reads it", c.name)
		assert.NotContains(t, out.Body, "hello", "another member's turn changed nothing")
	}
	ev := httpEvent("GET /v1/conversations", "", other)
	out, err := rt.Serve(context.Background(), ev)
	require.NoError(t, err)
	assert.JSONEq(t, `{"items":[]}`, out.Body, "another member lists none")
}
