package a2afn_test

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
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/a2a/server"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/authorizer"
	"github.com/conclave-ai/conclave/shared/team/teams"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
	"github.com/conclave-ai/conclave/shared/wire/a2afn"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// noTasks is a task model with one task of team A (task_1).
type noTasks struct{ server.Tasks }

func (noTasks) Get(_ context.Context, teamID, id string) (tasks.Task, error) {
	if id == "task_1" && teamID == teamA {
		return tasks.Task{TeamID: teamID, ID: id, Status: tasks.Running}, nil
	}
	return tasks.Task{}, apperr.NotFound("task", id)
}

func (noTasks) List(context.Context, string, tasks.Filter, paging.Page) ([]tasks.Task, string, error) {
	return nil, "", nil
}

type registry struct{ store *memstore.Store }

func (r registry) GetTeam(ctx context.Context, id string) (teams.Team, error) {
	return r.store.GetTeam(ctx, id)
}
func (registry) Agents(context.Context, string) ([]agents.Agent, error) {
	return []agents.Agent{{Slug: "kyra", Skills: []agents.Skill{{Name: "review", Description: "Reviews", Public: true}, {Name: "triage"}}}}, nil
}

var teamA string

type fixture struct {
	h          *a2afn.Handler
	idA, idB   string
	keyA, keyB string
	counter    *memstore.Store
	clock      time.Time
	rate       *authorizer.RateLimit
}

func newFixture(t *testing.T) *fixture {
	store := memstore.New()
	svc := teams.NewService(store)
	ctx := context.Background()
	a, ka, err := svc.CreateTeam(ctx, "Acme")
	require.NoError(t, err)
	b, kb, err := svc.CreateTeam(ctx, "Other")
	require.NoError(t, err)
	teamA = a.ID
	idA, err := svc.A2AID(ctx, a.ID)
	require.NoError(t, err)
	idB, err := svc.A2AID(ctx, b.ID)
	require.NoError(t, err)
	f := &fixture{idA: idA, idB: idB, keyA: ka.Secret, keyB: kb.Secret, counter: store, clock: time.Unix(1000, 0)}
	f.rate = &authorizer.RateLimit{PerSecond: 3, Counter: store, Now: func() time.Time { return f.clock }}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.h = &a2afn.Handler{Teams: store, Log: log, Auth: &authorizer.Handler{Teams: svc, Log: log, Rate: f.rate},
		Service: &server.Service{Tasks: noTasks{}, Registry: registry{store}}}
	return f
}

func (f *fixture) call(t *testing.T, route, id, key, body string, headers map[string]string) (events.APIGatewayV2HTTPResponse, map[string]any) {
	t.Helper()
	h := map[string]string{"x-forwarded-proto": "https", "content-type": "application/json"}
	if key != "" {
		h["x-api-key"] = key
	}
	for k, v := range headers {
		h[k] = v
	}
	res, err := f.h.Serve(context.Background(), events.APIGatewayV2HTTPRequest{
		RouteKey: route, PathParameters: map[string]string{"a2a_id": id}, Headers: h, Body: body,
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "req-1", DomainName: "api.example"},
	})
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Body), &out), res.Body)
	return res, out
}

// rpcError is a JSON-RPC error object's code and data.
func rpcError(t *testing.T, out map[string]any) (float64, map[string]any) {
	t.Helper()
	assert.Equal(t, "2.0", out["jsonrpc"])
	e, ok := out["error"].(map[string]any)
	require.True(t, ok, "a JSON-RPC error object: %v", out)
	data, _ := e["data"].(map[string]any)
	return e["code"].(float64), data
}

const v1 = `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"task_1"}}`

func TestTheCardIsPublicAndNamesNoTeamID(t *testing.T) {
	f := newFixture(t)
	res, card := f.call(t, a2afn.RouteCard, f.idA, "", "", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "Acme", card["name"])
	iface := card["supportedInterfaces"].([]any)[0].(map[string]any)
	assert.Equal(t, "https://api.example/a2a/"+f.idA, iface["url"])
	assert.Len(t, card["skills"], 1, "public skills only")
	// The 0.3 fields too: one card both a 0.3 and a 1.0 client read.
	assert.Equal(t, "https://api.example/a2a/"+f.idA, card["url"])
	assert.Equal(t, "JSONRPC", card["preferredTransport"])
	raw, _ := json.Marshal(card)
	assert.NotContains(t, string(raw), teamA, "the card never names the team id")
}

func TestEveryFailureIsAJSONRPCErrorWithItsStatus(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name, route, id, key, body string
		status                     int
		code                       string
	}{
		{"unknown agent", a2afn.RouteRPC, "a2a_00000000000000000000000000000000", f.keyA, v1, 404, apperr.ENOTFOUND},
		{"malformed agent id", a2afn.RouteCard, "team_x", "", "", 404, apperr.ENOTFOUND},
		{"no key", a2afn.RouteRPC, f.idA, "", v1, 401, apperr.EUNAUTHORIZED},
		{"no key, unknown agent: the key first", a2afn.RouteRPC, "a2a_00000000000000000000000000000000", "", v1, 401, apperr.EUNAUTHORIZED},
		{"bad key", a2afn.RouteRPC, f.idA, "ck_nope", v1, 401, apperr.EUNAUTHORIZED},
		{"another team's agent", a2afn.RouteRPC, f.idB, f.keyA, v1, 404, apperr.ENOTFOUND},
		{"body over 256 KiB", a2afn.RouteRPC, f.idA, f.keyA, `{"x":"` + strings.Repeat("a", a2afn.MaxBody) + `"}`, 413, apperr.ETOOLARGE},
	}
	for _, c := range cases {
		res, out := f.call(t, c.route, c.id, c.key, c.body, nil)
		assert.Equal(t, c.status, res.StatusCode, c.name)
		_, data := rpcError(t, out)
		assert.Equal(t, c.code, data["code"], c.name)
		assert.Equal(t, "req-1", data["request_id"], c.name)
	}
}

func TestTheRateLimitAnswers429AtOnePastIt(t *testing.T) {
	f := newFixture(t)
	for i := 1; i <= 3; i++ {
		res, _ := f.call(t, a2afn.RouteRPC, f.idA, f.keyA, v1, map[string]string{"a2a-version": "1.0"})
		require.Equal(t, http.StatusOK, res.StatusCode, "request %d of 3", i)
	}
	res, out := f.call(t, a2afn.RouteRPC, f.idA, f.keyA, v1, map[string]string{"a2a-version": "1.0"})
	assert.Equal(t, http.StatusTooManyRequests, res.StatusCode)
	assert.Equal(t, "1", res.Headers["Retry-After"])
	_, data := rpcError(t, out)
	assert.Equal(t, "TeamRateLimited", data["reason"])
	f.clock = f.clock.Add(time.Second)
	res, _ = f.call(t, a2afn.RouteRPC, f.idA, f.keyA, v1, map[string]string{"a2a-version": "1.0"})
	assert.Equal(t, http.StatusOK, res.StatusCode, "the next second")
}

// A key acting for a person is held to the person's own rate (a fifth of
// the team's 10: 2 a second), and the refusal names it; the key's own
// requests go on.
func TestAPersonsRateLimitIsNamedAsTheirs(t *testing.T) {
	f := newFixture(t)
	f.rate.PerSecond = 10
	k, err := teams.NewService(f.counter).IssueKey(context.Background(), teamA, teams.KeySpec{Name: "app", ActAsUsers: true})
	require.NoError(t, err)
	alice := map[string]string{"a2a-version": "1.0", "x-conclave-user": "alice"}
	for i := 1; i <= 2; i++ {
		res, _ := f.call(t, a2afn.RouteRPC, f.idA, k.Secret, v1, alice)
		require.Equal(t, http.StatusOK, res.StatusCode, "alice's request %d of 2", i)
	}
	res, out := f.call(t, a2afn.RouteRPC, f.idA, k.Secret, v1, alice)
	assert.Equal(t, http.StatusTooManyRequests, res.StatusCode)
	_, data := rpcError(t, out)
	assert.Equal(t, "UserRateLimit", data["reason"])
	res, _ = f.call(t, a2afn.RouteRPC, f.idA, k.Secret, v1, map[string]string{"a2a-version": "1.0"})
	assert.Equal(t, http.StatusOK, res.StatusCode, "the key's own request: the team's rate")
}

func TestVersionsAndMethods(t *testing.T) {
	f := newFixture(t)
	f.rate.PerSecond = 100
	// A2A 1.0 (A2A-Version): the 1.0 method names.
	res, out := f.call(t, a2afn.RouteRPC, f.idA, f.keyA, v1, map[string]string{"a2a-version": "1.0"})
	require.Equal(t, http.StatusOK, res.StatusCode)
	task := out["result"].(map[string]any)
	assert.Equal(t, "task_1", task["id"])
	assert.Equal(t, "TASK_STATE_WORKING", task["status"].(map[string]any)["state"])
	// No A2A-Version, or 0.3: a2a-go's 0.3 layer, its method names and
	// shapes.
	for _, h := range []map[string]string{nil, {"a2a-version": "0.3"}} {
		res, out = f.call(t, a2afn.RouteRPC, f.idA, f.keyA, `{"jsonrpc":"2.0","id":"a","method":"tasks/get","params":{"id":"task_1"}}`, h)
		require.Equal(t, http.StatusOK, res.StatusCode)
		task = out["result"].(map[string]any)
		assert.Equal(t, "task_1", task["id"])
		assert.Equal(t, "working", task["status"].(map[string]any)["state"], "0.3's lower-case states")
	}
	// A version neither layer speaks.
	res, out = f.call(t, a2afn.RouteRPC, f.idA, f.keyA, v1, map[string]string{"a2a-version": "2.0"})
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)
	code, _ := rpcError(t, out)
	assert.Equal(t, float64(-32009), code, "VersionNotSupported")
	// Protocol errors: bad JSON, an unknown method, a task of no one.
	for body, want := range map[string]float64{
		`{"jsonrpc":"2.0","id":1,"method":`:                                    -32700,
		`{"jsonrpc":"2.0","id":1,"method":"Nope","params":{}}`:                 -32601,
		`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"task_9"}}`: -32001,
	} {
		res, out := f.call(t, a2afn.RouteRPC, f.idA, f.keyA, body, map[string]string{"a2a-version": "1.0"})
		assert.Less(t, res.StatusCode, 500, body)
		code, _ := rpcError(t, out)
		assert.Equal(t, want, code, body)
	}
}

// The A2A door of new work on the function's own wiring: a stage with
// task_delegation off runs no task, so the agent refuses new messages
// (shared/a2a/server's NoTasks); with it on, it takes them.
func TestA2AMessagesNeedTaskDelegation(t *testing.T) {
	for flags, want := range map[string]string{
		"collaboration=true,task_delegation=true":  "",
		"collaboration=true,task_delegation=false": "task_delegation",
		"": "task_delegation",
	} {
		env := map[string]string{settings.EnvStage: "test", settings.EnvTable: "t", settings.EnvBus: "b", settings.EnvFlags: flags,
			settings.EnvStateMachines: "delegation=arn:aws:states:us-east-1:1:stateMachine:d", settings.EnvFunctions: "expert-gate=conclave-test-expert-gate"}
		cfg := settings.FromLookup(func(k string) string { return env[k] })
		h := a2afn.New(lambdafn.Deps{Config: cfg, AWS: aws.Config{Region: "us-east-1"}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		assert.Equal(t, want, h.Service.NoTasks, "FEATURE_FLAGS=%q", flags)
	}
}
