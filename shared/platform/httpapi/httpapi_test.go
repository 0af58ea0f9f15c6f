package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/awscalls"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/platform/logctx"
	"github.com/conclave-ai/conclave/shared/team/authorizer"
	"github.com/conclave-ai/conclave/shared/team/teams"
	"github.com/conclave-ai/conclave/shared/testkit/logtest"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/teamfake"
)

// memIdem is an in-memory idempotency.Store (a domain port, not an AWS client).
type memIdem struct {
	mu   sync.Mutex
	recs map[string]idempotency.Record
}

func (m *memIdem) Begin(_ context.Context, team, key, hash string, _, until time.Time) (*idempotency.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.recs[team+key]; ok {
		return &r, nil
	}
	m.recs[team+key] = idempotency.Record{Key: key, RequestHash: hash, State: idempotency.StatePending}
	return nil, nil
}
func (m *memIdem) Complete(_ context.Context, team string, r idempotency.Record, _ time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r.State = idempotency.StateDone
	m.recs[team+r.Key] = r
	return nil
}
func (m *memIdem) Abandon(_ context.Context, team, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.recs, team+key)
	return nil
}

type thing struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

func newRouter(calls *int) *httpapi.Router {
	return newRouterOn(calls, &memIdem{recs: map[string]idempotency.Record{}})
}

// newRouterOn is newRouter with its idempotency records in store.
func newRouterOn(calls *int, store idempotency.Store) *httpapi.Router {
	rt := httpapi.NewRouter(slog.New(slog.NewTextHandler(io.Discard, nil))).WithIdempotency(store)
	rt.Handle("POST /v1/things", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		var in thing
		if err := r.Decode(&in); err != nil {
			return httpapi.Response{}, err
		}
		*calls++
		if in.Name == "boom" {
			return httpapi.Response{}, errors.New("dynamodb: secret table arn:aws:dynamodb:… exploded")
		}
		if in.Name == "late" {
			return httpapi.Response{}, apperr.New(apperr.EUNAVAILABLE, "not enough time left").WithReason("DeadlineTooClose")
		}
		return httpapi.Created(map[string]any{"name": in.Name, "n": *calls}), nil
	})
	return rt
}

func post(rt *httpapi.Router, body string, headers map[string]string) events.APIGatewayV2HTTPResponse {
	if headers == nil {
		headers = map[string]string{}
	}
	ev := events.APIGatewayV2HTTPRequest{
		RouteKey: "POST /v1/things", RawPath: "/v1/things", Body: body, Headers: headers,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RequestID: "req-1", HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST"},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{"team_id": "team_a"}},
		},
	}
	resp, _ := rt.Serve(context.Background(), ev)
	return resp
}

func errorOf(t *testing.T, resp events.APIGatewayV2HTTPResponse) httpapi.ErrorBody {
	t.Helper()
	var b httpapi.ErrorBody
	require.NoError(t, json.Unmarshal([]byte(resp.Body), &b), resp.Body)
	assert.Equal(t, "req-1", b.RequestID)
	return b
}

func TestBadBodiesAreRejectedWithTheFieldNamed(t *testing.T) {
	cases := []struct {
		name, body, field string
		status            int
	}{
		{"unknown field", `{"name":"a","colour":"red"}`, "colour", 400},
		{"wrong type", `{"name":"a","count":"three"}`, "count", 400},
		{"not json", `{"name":`, "body", 400},
		{"empty", ``, "body", 400},
		{"two objects", `{"name":"a"}{"name":"b"}`, "body", 400},
		{"oversized", `{"name":"` + strings.Repeat("x", httpapi.MaxBodyBytes) + `"}`, "", 413},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			resp := post(newRouter(&calls), c.body, nil)
			assert.Equal(t, c.status, resp.StatusCode)
			b := errorOf(t, resp)
			assert.Equal(t, c.field, b.Error.Field)
			assert.Equal(t, 0, calls, "a rejected request does nothing")
		})
	}
}

func TestInternalErrorsDoNotLeak(t *testing.T) {
	calls := 0
	resp := post(newRouter(&calls), `{"name":"boom"}`, nil)
	assert.Equal(t, 500, resp.StatusCode)
	b := errorOf(t, resp)
	assert.Equal(t, "Internal error", b.Error.Message)
	assert.NotContains(t, resp.Body, "arn:aws")
}

func TestMissingTeamContextIsUnauthorized(t *testing.T) {
	calls := 0
	rt := newRouter(&calls)
	resp, _ := rt.Serve(context.Background(), events.APIGatewayV2HTTPRequest{RouteKey: "POST /v1/things", Body: `{}`})
	assert.Equal(t, 401, resp.StatusCode)
	assert.Equal(t, 0, calls)
}

func TestIdempotencyKeyReplaysTheFirstResponse(t *testing.T) {
	calls := 0
	rt := newRouter(&calls)
	h := map[string]string{"idempotency-key": "abc"}
	first := post(rt, `{"name":"a"}`, h)
	second := post(rt, `{"name":"a"}`, h)
	assert.Equal(t, 201, first.StatusCode)
	assert.Equal(t, first.StatusCode, second.StatusCode)
	assert.Equal(t, first.Body, second.Body)
	assert.Equal(t, "true", second.Headers["Idempotent-Replayed"])
	assert.Equal(t, 1, calls, "the handler ran once")

	reused := post(rt, `{"name":"other"}`, h)
	assert.Equal(t, 409, reused.StatusCode)
	assert.Equal(t, "IdempotencyKeyReused", errorOf(t, reused).Error.Reason)
	assert.Equal(t, 1, calls)

	// A server fault releases the key so the client can retry.
	boom := map[string]string{"idempotency-key": "xyz"}
	assert.Equal(t, 500, post(rt, `{"name":"boom"}`, boom).StatusCode)
	assert.Equal(t, 500, post(rt, `{"name":"boom"}`, boom).StatusCode)
	assert.Equal(t, 3, calls)
}

// lostRelease is a store whose releases are lost, as when the table does
// not answer the function's Abandon before its time runs out.
type lostRelease struct{ *memtable.Table }

func (lostRelease) Abandon(context.Context, string, string) error {
	return errors.New("DeleteItem: context deadline exceeded")
}

// A claim whose release was lost is held while its invocation may still
// run, RequestInProgress with Retry-After, and is taken over
// idempotency.ClaimGrace after the invocation's deadline (to the second,
// as the table's TTL attribute), not idempotency.PendingTTL later.
func TestAClaimWhoseReleaseWasLostLapsesWithItsInvocation(t *testing.T) {
	calls := 0
	rt := newRouterOn(&calls, lostRelease{memtable.New()})
	start := time.Now().Truncate(time.Second).Add(time.Second)
	at := start
	rt.Now = func() time.Time { return at }
	h := map[string]string{"idempotency-key": "cut"}
	// The first invocation has 10 s; its handler fails and the release
	// is lost.
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(10*time.Second))
	defer cancel()
	ev := events.APIGatewayV2HTTPRequest{
		RouteKey: "POST /v1/things", RawPath: "/v1/things", Body: `{"name":"boom"}`, Headers: h,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RequestID: "req-1", HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST"},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{"team_id": "team_a"}},
		},
	}
	resp, err := rt.Serve(ctx, ev)
	require.NoError(t, err)
	require.Equal(t, 500, resp.StatusCode)
	dl, _ := ctx.Deadline()
	lapse := dl.Add(idempotency.ClaimGrace).Truncate(time.Second)

	for _, when := range []time.Time{start, lapse} {
		at = when
		again := post(rt, `{"name":"boom"}`, h)
		require.Equal(t, 409, again.StatusCode, "at %v", when.Sub(start))
		assert.Equal(t, "RequestInProgress", errorOf(t, again).Error.Reason)
		assert.Equal(t, "5", again.Headers["Retry-After"])
	}
	assert.Equal(t, 1, calls, "held: the first may still be running")
	at = lapse.Add(time.Second)
	assert.Equal(t, 500, post(rt, `{"name":"boom"}`, h).StatusCode, "taken over a second after the lapse")
	assert.Equal(t, 2, calls)
	require.Less(t, lapse.Sub(start), idempotency.PendingTTL)

	// Without a deadline (or one further off), the claim lapses
	// PendingTTL after it was made.
	at = start
	h = map[string]string{"idempotency-key": "no-deadline"}
	assert.Equal(t, 500, post(rt, `{"name":"boom"}`, h).StatusCode)
	at = start.Add(idempotency.PendingTTL)
	assert.Equal(t, 409, post(rt, `{"name":"boom"}`, h).StatusCode)
	at = start.Add(idempotency.PendingTTL + time.Second)
	assert.Equal(t, 500, post(rt, `{"name":"boom"}`, h).StatusCode)
	assert.Equal(t, 4, calls)
}

func TestStatusMapping(t *testing.T) {
	for code, status := range map[string]int{
		apperr.EINVALID: 400, apperr.EUNAUTHORIZED: 401, apperr.ENOTFOUND: 404, apperr.ECONFLICT: 409,
		apperr.ELIMIT: 429, apperr.EREJECTED: 422, apperr.ETOOLARGE: 413, apperr.EUPSTREAM: 502, apperr.EUNAVAILABLE: 503, apperr.EINTERNAL: 500, "": 500,
	} {
		assert.Equal(t, status, httpapi.Status(code), code)
	}
}

// 503 unavailable changed nothing: it says so, with Retry-After, and (a
// 5xx) releases an idempotency key so the retry runs.
func TestUnavailableIsRetryable(t *testing.T) {
	calls := 0
	rt := newRouter(&calls)
	key := map[string]string{"idempotency-key": "late-1"}
	resp := post(rt, `{"name":"late"}`, key)
	assert.Equal(t, 503, resp.StatusCode)
	assert.Equal(t, "1", resp.Headers["Retry-After"])
	b := errorOf(t, resp)
	assert.Equal(t, apperr.EUNAVAILABLE, b.Error.Code)
	assert.Equal(t, "DeadlineTooClose", b.Error.Reason)
	assert.Equal(t, 503, post(rt, `{"name":"late"}`, key).StatusCode)
	assert.Equal(t, 2, calls, "the key was released: the retry ran")
}

func BenchmarkServeDecodeAndRespond(b *testing.B) {
	calls := 0
	rt := newRouter(&calls)
	body := `{"name":"benchmark","count":3}`
	b.ReportAllocs()
	for b.Loop() {
		if resp := post(rt, body, nil); resp.StatusCode != 201 {
			b.Fatal(resp.Body)
		}
	}
}

// The request's log line carries the route's AWS calls when the
// invocation counts them (shared/platform/lambdafn), so they can be watched per route.
func TestRequestLogCarriesTheAWSCalls(t *testing.T) {
	var buf bytes.Buffer
	rt := httpapi.NewRouter(slog.New(slog.NewJSONHandler(&buf, nil)))
	rt.Handle("GET /v1/things", func(context.Context, *httpapi.Request) (httpapi.Response, error) {
		return httpapi.OK(map[string]int{}), nil
	})
	ctx, _ := awscalls.NewContext(context.Background())
	_, err := rt.Serve(ctx, events.APIGatewayV2HTTPRequest{RouteKey: "GET /v1/things",
		RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "r",
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{"team_id": "team_a"}}}})
	require.NoError(t, err)
	var line map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &line), buf.String())
	assert.Equal(t, "GET /v1/things", line["route"])
	assert.Equal(t, float64(0), line["aws_calls_total"])
	assert.Equal(t, map[string]any{}, line["aws_calls"])
}

// A request the authorizer marked over its team's rate answers 429 with
// Retry-After before the handler runs.
func TestRateLimitedRequestIsRefusedBeforeAnythingRuns(t *testing.T) {
	calls := 0
	rt := newRouter(&calls)
	ev := events.APIGatewayV2HTTPRequest{
		RouteKey: "POST /v1/things", RawPath: "/v1/things", Body: `{"name":"a"}`, Headers: map[string]string{"idempotency-key": "k1"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RequestID: "req-1", HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST"},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{
				authorizer.ContextTeamID: "team_a", authorizer.ContextRateLimited: true, authorizer.ContextRetryAfter: 1}},
		},
	}
	resp, err := rt.Serve(context.Background(), ev)
	require.NoError(t, err)
	assert.Equal(t, 429, resp.StatusCode)
	assert.Equal(t, "1", resp.Headers["Retry-After"])
	assert.Equal(t, "TeamRateLimit", errorOf(t, resp).Error.Reason)
	assert.Zero(t, calls, "the handler did not run")
	// The idempotency key was not claimed: the retry runs.
	assert.Equal(t, 201, post(rt, `{"name":"a"}`, map[string]string{"idempotency-key": "k1"}).StatusCode)
}

// A request over its person's own rate answers 429 naming the person's
// limit (reason UserRateLimit, the rate in the details), before the handler
// runs; the mark as API Gateway carries it (JSON numbers) and as the
// streaming API's REST authorizer context carries it (strings).
func TestAPersonsRateLimitIsRefusedNamingTheUserLimit(t *testing.T) {
	for name, lambda := range map[string]map[string]any{
		"http":       {"team_id": "team_a", "user_id": "alice", "role": "member", "rate_limited": true, "retry_after": float64(1), "user_rate_limit": float64(5)},
		"in-process": {"team_id": "team_a", "user_id": "alice", "role": "member", "rate_limited": true, "retry_after": 1, "user_rate_limit": 5},
	} {
		calls := 0
		rt := newRouter(&calls)
		rt.Members = map[string]bool{"POST /v1/things": true}
		resp, err := rt.Serve(context.Background(), events.APIGatewayV2HTTPRequest{
			RouteKey: "POST /v1/things", RawPath: "/v1/things", Body: `{"name":"a"}`,
			RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "req-1", HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST"},
				Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: lambda}},
		})
		require.NoError(t, err)
		assert.Equal(t, 429, resp.StatusCode, name)
		assert.Equal(t, "1", resp.Headers["Retry-After"], name)
		e := errorOf(t, resp).Error
		assert.Equal(t, "UserRateLimit", e.Reason, name)
		assert.Contains(t, e.Message, "this user (at most 5 a second)", name)
		assert.Zero(t, calls, "the handler did not run")
	}
}

// Every line of an HTTP request — a service's logged with the handler's
// context, the internal error's and the request's own — carries the Lambda
// request id, the API request id, the team and the route; a request of
// another team that follows carries its own.
func TestEveryLineOfARequestCarriesTheRequestAndTeam(t *testing.T) {
	var buf bytes.Buffer
	log := logctx.Wrap(slog.New(slog.NewJSONHandler(&buf, nil)))
	rt := httpapi.NewRouter(log)
	rt.Handle("POST /v1/things/{id}/poke", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		// What a service does with the context it is given.
		log.WarnContext(ctx, "service line", "thing_id", r.Param("id"))
		return httpapi.Response{}, errors.New("store down")
	})
	h := lambdafn.Counted(rt.Serve, log)
	serve := func(lambdaID, requestID, team string) []map[string]any {
		t.Helper()
		buf.Reset()
		ev, err := json.Marshal(events.APIGatewayV2HTTPRequest{RouteKey: "POST /v1/things/{id}/poke", PathParameters: map[string]string{"id": "t1"},
			RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: requestID,
				Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{"team_id": team}}}})
		require.NoError(t, err)
		out, err := h.Invoke(lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: lambdaID}), ev)
		require.NoError(t, err)
		var resp events.APIGatewayV2HTTPResponse
		require.NoError(t, json.Unmarshal(out, &resp))
		require.Equal(t, 500, resp.StatusCode)
		return logtest.Lines(t, &buf)
	}
	for _, c := range []struct{ lambda, request, team string }{{"lambda-1", "req-1", "team_a"}, {"lambda-2", "req-2", "team_b"}} {
		var msgs []string
		for _, l := range serve(c.lambda, c.request, c.team) {
			msg := l["msg"].(string)
			msgs = append(msgs, msg)
			assert.Equal(t, c.lambda, l["lambda_request_id"], msg)
			if msg == "invocation" {
				continue // the invocation's own line, logged outside the request
			}
			assert.Equal(t, c.request, l["request_id"], msg)
			assert.Equal(t, c.team, l["team_id"], msg)
			assert.Equal(t, "POST /v1/things/{id}/poke", l["route"], msg)
		}
		assert.Equal(t, []string{"service line", "internal error", "request", "invocation"}, msgs)
	}
}

// The authorizer's own answer, carried to the route as API Gateway carries
// it (its context as JSON in the request's authorizer context), decides:
// under the team's rate the handler runs; over
// it the route answers 429 with the authorizer's Retry-After. Were the
// authorizer to write its mark under another key than the one the router
// reads, the second request would run and this test would fail.
func TestAuthorizerRateLimitBecomes429ThroughTheRoute(t *testing.T) {
	// GIVEN a team allowed one request a second, and the second request of
	// one second
	table := memtable.New() // the teams and the request counter
	svc := teams.NewService(teamfake.New(table))
	_, key, err := svc.CreateTeam(context.Background(), "rated")
	require.NoError(t, err)
	now := time.Unix(1_800_000_000, 0)
	authz := &authorizer.Handler{Teams: svc, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Rate: &authorizer.RateLimit{PerSecond: 1, Counter: table, Now: func() time.Time { return now }}}
	calls := 0
	rt := newRouter(&calls)
	serve := func(body string) events.APIGatewayV2HTTPResponse {
		t.Helper()
		auth, err := authz.Handle(context.Background(), events.APIGatewayV2CustomAuthorizerV2Request{Headers: map[string]string{"x-api-key": key.Secret}})
		require.NoError(t, err)
		require.True(t, auth.IsAuthorized, "a limited request is still authorized")
		carried, err := json.Marshal(auth.Context)
		require.NoError(t, err)
		var lambda map[string]any
		require.NoError(t, json.Unmarshal(carried, &lambda))
		resp, err := rt.Serve(context.Background(), events.APIGatewayV2HTTPRequest{
			RouteKey: "POST /v1/things", RawPath: "/v1/things", Body: body,
			RequestContext: events.APIGatewayV2HTTPRequestContext{
				RequestID: "req-1", HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST"},
				Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: lambda},
			},
		})
		require.NoError(t, err)
		return resp
	}

	// WHEN the first request of the second arrives THEN it runs
	first := serve(`{"name":"first"}`)
	require.Equal(t, 201, first.StatusCode, first.Body)
	require.Equal(t, 1, calls)

	// WHEN the second arrives THEN it is refused before its handler runs
	second := serve(`{"name":"second"}`)
	assert.Equal(t, 429, second.StatusCode, second.Body)
	assert.Equal(t, "1", second.Headers["Retry-After"])
	assert.Equal(t, "TeamRateLimit", errorOf(t, second).Error.Reason)
	assert.Equal(t, 1, calls, "the limited request's handler did not run")
}

// A body over the limit is 413 whatever the path names: the size is
// checked before the path's ids (a 1 MB body to a malformed id answered
// 404), and the handler never runs.
func TestAnOversizedBodyIsRefusedBeforeThePathIsRead(t *testing.T) {
	calls := 0
	rt := newRouter(&calls)
	rt.Handle("POST /v1/things/{id}", func(context.Context, *httpapi.Request) (httpapi.Response, error) {
		calls++
		return httpapi.OK(map[string]string{}), nil
	})
	for _, id := range []string{"thing_1", "not a valid id\x00"} {
		ev := events.APIGatewayV2HTTPRequest{
			RouteKey: "POST /v1/things/{id}", RawPath: "/v1/things/x", Body: strings.Repeat("x", httpapi.MaxBodyBytes+1),
			PathParameters: map[string]string{"id": id},
			RequestContext: events.APIGatewayV2HTTPRequestContext{
				RequestID: "req-1", HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST"},
				Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{authorizer.ContextTeamID: "team_a"}},
			},
		}
		resp, err := rt.Serve(context.Background(), ev)
		require.NoError(t, err)
		assert.Equal(t, 413, resp.StatusCode, id)
		// Exactly at the limit the path is read: a malformed id is 404.
		ev.Body = strings.Repeat("x", httpapi.MaxBodyBytes)
		resp, err = rt.Serve(context.Background(), ev)
		require.NoError(t, err)
		if id == "thing_1" {
			assert.NotEqual(t, 413, resp.StatusCode, "at the limit")
		} else {
			assert.Equal(t, 404, resp.StatusCode, "at the limit, the malformed id")
		}
	}
	assert.LessOrEqual(t, calls, 1)
}
