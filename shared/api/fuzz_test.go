package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/agenttools"
	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/api/agentsapi"
	"github.com/conclave-ai/conclave/shared/api/approvalsapi"
	"github.com/conclave-ai/conclave/shared/api/consultationsapi"
	"github.com/conclave-ai/conclave/shared/api/conversationsapi"
	"github.com/conclave-ai/conclave/shared/api/discoveryapi"
	"github.com/conclave-ai/conclave/shared/api/memoriesapi"
	"github.com/conclave-ai/conclave/shared/api/messagesapi"
	"github.com/conclave-ai/conclave/shared/api/reportsapi"
	"github.com/conclave-ai/conclave/shared/api/routingapi"
	"github.com/conclave-ai/conclave/shared/api/sessionsapi"
	"github.com/conclave-ai/conclave/shared/api/tasksapi"
	"github.com/conclave-ai/conclave/shared/api/teamapi"
	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/routing/discovery"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/team/activity"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/team/messaging"
	"github.com/conclave-ai/conclave/shared/team/teams"
	"github.com/conclave-ai/conclave/shared/testkit/demo"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
	"github.com/conclave-ai/conclave/shared/wire/localmodelwiring"
	"github.com/conclave-ai/conclave/shared/work/approvals"
	"github.com/conclave-ai/conclave/shared/work/consultations"
	"github.com/conclave-ai/conclave/shared/work/reports"
	"github.com/conclave-ai/conclave/shared/work/sessions"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// inMemoryAPI is the agents, tasks, conversations, messages, memories,
// team, routing, discovery, sessions, reports, agent tools and approval routes over one in-memory store holding the demo team, with the
// document's body rules (api.BodyRoutes), as the functions wire them.
type inMemoryAPI struct {
	rt    *httpapi.Router
	store *memstore.Store
}

func newInMemoryAPI(tb testing.TB) inMemoryAPI {
	tb.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	store := memstore.New()
	require.NoError(tb, demo.Seed(context.Background(), store))
	bus := &memstore.Publisher{}
	rt := httpapi.NewRouter(log)
	rt.Bodies = api.BodyRoutes()
	agentsapi.AgentRoutes(rt, agents.NewService(store))
	ts := tasks.NewService(store, nil, bus, log)
	tasksapi.TaskRoutes(rt, ts)
	mem := &memory.Service{Store: store, Dir: store, Bus: bus, Now: time.Now}
	conversationsapi.ConversationRoutes(rt, conversations.MustNew(conversations.Config{Store: store, Agents: store, Model: localmodelwiring.New(store),
		Memories: mem, Context: conversations.Sources{Memories: mem}, Bus: bus, Tail: store, Work: store, Now: time.Now, Log: log,
		Router: &cascade.Router{Tiers: routing.DefaultTierModels, Log: log}}))
	messagesapi.MessageRoutes(rt, &messaging.Service{Store: store, Dir: store, Bus: bus, Now: time.Now})
	memoriesapi.MemoryRoutes(rt, mem)
	teamapi.TeamRoutes(rt, teams.NewService(store), noActivity{})
	routingapi.RoutingRoutes(rt, &cascade.Service{Store: store, Now: time.Now}, &expertgate.Calibrations{Source: store, Store: store, Embedder: "wordllama"})
	discoveryapi.DiscoveryRoutes(rt, &discovery.Service{Dir: store, Gate: &expertgate.Service{Source: store}})
	// No Workflows: a created session stays planning, as no machine runs
	// here; a report's task is queued the same way.
	sessionsapi.SessionRoutes(rt, &sessions.Service{Store: store, Tasks: sessions.TaskModel{Svc: ts}, Model: localmodelwiring.New(store),
		Bus: bus, Conversations: memConversations{store}, Enabled: true, Log: log, Now: time.Now})
	cons := consultations.New(store, nil, localmodelwiring.New(store), bus, nil, log)
	cons.Conversations = memConversations{store} // as consultationsfn checks a request's conversation_id
	consultationsapi.ConsultationRoutes(rt, cons)
	reportsapi.ReportRoutes(rt, &reports.Service{Store: store, Tasks: ts, Conversations: store, Bus: bus, Log: log})
	tools := &agenttools.Tools{Flags: settings.Flags{Collaboration: true, TaskDelegation: true, Sessions: true}, Tasks: ts,
		Messages: &messaging.Service{Store: store, Dir: store, Bus: bus, Now: time.Now}, Memories: mem,
		Colleagues: &discovery.Service{Dir: store, Gate: &expertgate.Service{Source: store}}}
	api.AgentToolRoutes(rt, agenttools.Lister{Agents: store, Chat: agenttools.Chat{Tools: tools}, Task: tools})
	approvalsapi.ApprovalRoutes(rt, &approvals.Service{Store: store, Bus: bus, Validate: agenttools.ValidateArguments, Log: log})
	return inMemoryAPI{rt: rt, store: store}
}

// memConversations checks a session's or a consultation's conversation
// on the store (as sessionwiring and consultationsfn do on DynamoDB).
type memConversations struct{ store *memstore.Store }

func (c memConversations) CheckConversation(ctx context.Context, teamID, id string) error {
	_, err := c.store.GetConversation(ctx, teamID, id)
	return err
}

// noActivity is an empty activity log (the recorder fills it from the bus).
type noActivity struct{}

func (noActivity) Record(context.Context, activity.Entry) error { return nil }
func (noActivity) List(context.Context, string, paging.Page) ([]activity.Entry, string, error) {
	return nil, "", nil
}

// call serves one request as the gateway would send it.
func (a inMemoryAPI) call(method, path, routeKey, body string, params map[string]string) events.APIGatewayV2HTTPResponse {
	return a.callQuery(method, path, routeKey, body, params, nil)
}

func (a inMemoryAPI) callQuery(method, path, routeKey, body string, params, query map[string]string) events.APIGatewayV2HTTPResponse {
	resp, _ := a.rt.Serve(context.Background(), events.APIGatewayV2HTTPRequest{
		RouteKey: routeKey, RawPath: path, Body: body, PathParameters: params, QueryStringParameters: query,
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "fuzz",
			HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{"team_id": demo.TeamID, "key_id": "key_fuzz"}}},
	})
	return resp
}

// snapshot is what a refused request must leave as it was: every listing
// the routes serve for the demo team.
func (a inMemoryAPI) snapshot(tb testing.TB) string {
	tb.Helper()
	var b strings.Builder
	for _, p := range []string{"GET /v1/agents", "GET /v1/tasks", "GET /v1/conversations", "GET /v1/keys", "GET /v1/team", "GET /v1/sessions", "GET /v1/reports", "GET /v1/approval-policy", "GET /v1/approvals", "GET /v1/board-policy"} {
		resp := a.call("GET", strings.TrimPrefix(p, "GET "), p, "", nil)
		require.Equal(tb, 200, resp.StatusCode, resp.Body)
		b.WriteString(resp.Body)
	}
	for _, slug := range []string{"kyra", "luke"} {
		resp := a.call("GET", "/v1/agents/"+slug+"/memories", "GET /v1/agents/{slug}/memories", "", map[string]string{"slug": slug})
		b.WriteString(resp.Body)
	}
	return b.String()
}

// bodyRoutes are the served routes that write: every POST, PUT, PATCH and
// DELETE the in-memory API registers, in a stable order.
func bodyRoutes(a inMemoryAPI) []string {
	var out []string
	for _, k := range a.rt.RouteKeys() {
		if !strings.HasPrefix(k, "GET ") {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// pathFor fills a route's parameters with ids of the demo team (or the
// fuzzer's own when it picks them).
func pathFor(routeKey, id string) (string, map[string]string) {
	_, path, _ := strings.Cut(routeKey, " ")
	params := map[string]string{}
	for _, name := range []string{"slug", "id", "message_id"} {
		if strings.Contains(path, "{"+name+"}") {
			v := id
			if v == "" {
				v = map[string]string{"slug": "kyra", "id": "x", "message_id": "x"}[name]
			}
			params[name] = v
			path = strings.ReplaceAll(path, "{"+name+"}", v)
		}
	}
	return path, params
}

// FuzzRequestBodies sends arbitrary bodies (and path ids) to every writing
// route of the in-memory API (every HTTP function's): no panic, no 5xx, every error in the one error shape, and a
// refused request (4xx) changes nothing.
func FuzzRequestBodies(f *testing.F) {
	for _, seed := range []string{`null`, `{}`, `[]`, `""`, `{"name":null}`, `{"slug":"fz-a","name":"A"}`,
		`{"assignee":"luke","title":"t"}`, `{"content":"hi","k":0}`, `{"NAME":"x"}`, `{"rating":1.5}`,
		`{"skills":[{"name":"a-b","description":"d","priority":1e3}]}`, `{"version":9223372036854775808}`, "\x00", `{"to":"luke","content":"x"}`,
		`{"pattern":"brainstorm","lead":"kyra","goal":"g","participants":[{"agent":"luke","role":"contributor"},{"agent":"dana","role":"contributor"}]}`,
		`{"pattern":"pipeline","lead":"kyra","goal":"g","participants":[{"agent":"luke","role":"worker","stage":1}],"max_cost_usd":0}`,
		`{"decision":"approve"}`, `{"decision":null}`, `{"type":"code_review","to":"luke","title":"t","parameters":{"code":"x"}}`,
		`{"type":"comparison","to":"luke","title":"t","parameters":[],"max_sections":3}`,
		`{"assignee":"luke","title":"t","input":{"a":[1e400,"\u00e9"]}}`, `{"assignee":"luke","title":"t","input":7}`,
		`{"output":{"k":null},"result":"r"}`, `{"output":"text"}`, `{"reason":"r","output":[]}`, `{"reason":"r","output":false}`} {
		for i := range 3 {
			f.Add(uint8(i*7), seed, "")
		}
	}
	f.Add(uint8(3), `{"title":"x"}`, "conv_%00")
	a := newInMemoryAPI(f)
	routes := bodyRoutes(a)
	f.Fuzz(func(t *testing.T, pick uint8, body, id string) {
		key := routes[int(pick)%len(routes)]
		method, _, _ := strings.Cut(key, " ")
		path, params := pathFor(key, id)
		before := a.snapshot(t)
		resp := a.call(method, path, key, body, params)
		if resp.StatusCode >= 500 {
			t.Fatalf("%s %q: %d %s", key, body, resp.StatusCode, resp.Body)
		}
		if resp.StatusCode >= 400 {
			var e httpapi.ErrorBody
			if err := json.Unmarshal([]byte(resp.Body), &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
				t.Fatalf("%s %q: %d without the error shape: %s", key, body, resp.StatusCode, resp.Body)
			}
			if strings.Contains(e.Error.Message, "struct {") || strings.Contains(e.Error.Message, "json:") {
				t.Fatalf("%s %q: a Go type in the message: %s", key, body, e.Error.Message)
			}
			if after := a.snapshot(t); after != before {
				t.Fatalf("%s %q was refused (%d) but changed the team's data", key, body, resp.StatusCode)
			}
		}
	})
}

// FuzzQueryParameters sends arbitrary values of every query parameter the
// document names to every GET route: no panic, no 5xx, errors in the
// error shape (limit, next_token, since, wait, status, fallback, peek …).
func FuzzQueryParameters(f *testing.F) {
	for _, v := range []string{"", "0", "-1", "101", "1", "true", "maybe", "2026-11-01T00:00:00Z", "2026-13-01", "NaN", "1e309", "0.5", "kyra",
		"\x00", "%", strings.Repeat("z", 3000), "queued", "top_k"} {
		f.Add(uint8(len(v)), v, "limit")
		f.Add(uint8(3*len(v)), v, "since")
	}
	a := newInMemoryAPI(f)
	var gets []string
	for _, k := range a.rt.RouteKeys() {
		if strings.HasPrefix(k, "GET ") {
			gets = append(gets, k)
		}
	}
	sort.Strings(gets)
	names := []string{"limit", "next_token", "since", "wait", "status", "agent", "assignee", "parent_task_id", "strategy", "fallback",
		"conversation_id", "min_similarity", "query", "skills", "exclude", "all", "peek", "pattern", "type", "to", "from", "after", "context"}
	f.Fuzz(func(t *testing.T, pick uint8, value, name string) {
		key := gets[int(pick)%len(gets)]
		if name == "" {
			name = names[int(pick)%len(names)]
		}
		path, params := pathFor(key, "")
		query := map[string]string{name: value, "query": "review", "skills": "code-review", "agent": "kyra"}
		query[name] = value
		resp := a.callQuery("GET", path, key, "", params, query)
		if resp.StatusCode >= 500 {
			t.Fatalf("%s ?%s=%q: %d %s", key, name, value, resp.StatusCode, resp.Body)
		}
		if resp.StatusCode >= 400 {
			var e httpapi.ErrorBody
			if err := json.Unmarshal([]byte(resp.Body), &e); err != nil || e.Error.Code == "" {
				t.Fatalf("%s ?%s=%q: %d without the error shape: %s", key, name, value, resp.StatusCode, resp.Body)
			}
		}
	})
}
