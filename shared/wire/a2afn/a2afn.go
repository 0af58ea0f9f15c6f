// Package a2afn wires the "a2a" function: a team as an A2A 1.0 agent
// (shared/a2a/server; docs/a2a.md). Its routes are public at the gateway: the
// agent card needs no key, and the JSON-RPC endpoint checks the key here,
// with the authorizer's own code (shared/team/authorizer, the team's rate limit
// included), so that every error on /a2a/* is a JSON-RPC error object with
// its HTTP status instead of the gateway's bare {"message": …}. It links
// DynamoDB, EventBridge, Lambda (the ExpertGate, for routing) and Step
// Functions (the tasks' executions and the approvals' callbacks). The
// "a2a-stream" function (shared/wire/a2astreamfn) serves the same JSON-RPC
// endpoint on the streaming API with this handler's checks and transport
// (ServeStream), so that its streaming methods stream.
package a2afn

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/aws/aws-lambda-go/events"

	"github.com/conclave-ai/conclave/shared/a2a/server"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/authctx"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
	"github.com/conclave-ai/conclave/shared/platform/logctx"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/authorizer"
	"github.com/conclave-ai/conclave/shared/team/teams"
)

// The routes (shared/platform/manifest): both public at the gateway.
const (
	RouteCard = "GET /a2a/{a2a_id}/.well-known/agent-card.json"
	RouteRPC  = "POST /a2a/{a2a_id}"
)

// MaxBody bounds a JSON-RPC request (bytes): a message of MaxMessage
// characters and its envelope, with room.
const MaxBody = 256 << 10

// KeepAlive is how often a stream with nothing to say sends an SSE
// comment, so that no proxy on the way takes it for idle.
const KeepAlive = 15 * time.Second

// Handler serves the routes.
type Handler struct {
	Teams   teams.Store
	Auth    *authorizer.Handler
	Service *server.Service
	Log     *slog.Logger
	// StreamURL is the streaming API's base URL (settings.EnvStreamURL):
	// the card lists the agent's streaming endpoint under it. Empty: the
	// stage does not stream (on the HTTP API; the a2a-stream function
	// then names its own URL as the client reached it).
	StreamURL string
	// Streaming: the handler serves the streaming API (ServeStream),
	// which does not know the HTTP API's URL.
	Streaming bool
}

var validID = regexp.MustCompile(`^a2a_[0-9a-f]{32}$`)

// Serve implements the function.
func (h *Handler) Serve(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (res events.APIGatewayV2HTTPResponse, err error) {
	reqID := ev.RequestContext.RequestID
	ctx = logctx.With(ctx, "request_id", reqID, "route", ev.RouteKey)
	// Last, after a panic's answer is made: every answer names its trace.
	defer func() { httpapi.Traced(ctx, &res) }()
	// A panic answers as every other failure: a JSON-RPC error object,
	// never the gateway's bare 500.
	defer func() {
		if r := recover(); r != nil {
			h.Log.ErrorContext(ctx, "a2a panic", "panic", fmt.Sprint(r))
			res, err = h.failure(ctx, reqID, apperr.New(apperr.EINTERNAL, "internal error")), nil
		}
	}()
	ctx, body, err := h.open(ctx, ev)
	if err != nil {
		return h.failure(ctx, reqID, err), nil
	}
	if ev.RouteKey == RouteCard {
		return h.card(ctx, reqID)
	}
	return h.rpc(ctx, ev, body), nil
}

// open checks a request before it reaches the protocol and returns ctx
// serving the agent it addressed (server.With) and, for the JSON-RPC
// endpoint, its body. The JSON-RPC endpoint checks the key first, as the
// authorizer would (nothing of the agent is read for a caller without
// one); the agent must be the key's team's. Errors: EUNAUTHORIZED, ELIMIT
// and EUNAVAILABLE (the key), ENOTFOUND (the agent), EINVALID and
// ETOOLARGE (the body).
func (h *Handler) open(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (context.Context, []byte, error) {
	id := ev.PathParameters["a2a_id"]
	var key caller
	var err error
	if ev.RouteKey == RouteRPC {
		if key, err = h.authenticate(ctx, ev); err != nil {
			return ctx, nil, err
		}
		ctx = logctx.With(ctx, "team_id", key.TeamID, "key_id", key.KeyID)
	}
	var t teams.Team
	err = apperr.NotFound("a2a agent", id)
	if validID.MatchString(id) {
		t, err = h.Teams.TeamByA2AID(ctx, id)
	}
	if err != nil {
		return ctx, nil, err
	}
	ctx = server.With(ctx, h.endpoint(ev, id, t.ID))
	if ev.RouteKey == RouteCard {
		return ctx, nil, nil
	}
	// The team the key names must be the agent's (another team's agent
	// is not found, as another team's anything).
	if key.TeamID != t.ID {
		return ctx, nil, apperr.NotFound("a2a agent", id)
	}
	body := []byte(ev.Body)
	if ev.IsBase64Encoded {
		if body, err = base64.StdEncoding.DecodeString(ev.Body); err != nil {
			return ctx, nil, apperr.Invalid("body", "the body is not valid base64")
		}
	}
	if len(body) > MaxBody {
		return ctx, nil, apperr.New(apperr.ETOOLARGE, "the request is larger than %d bytes", MaxBody)
	}
	return ctx, body, nil
}

// endpoint is the agent id of team teamID as the request reached it: its
// URL on the API it came through, and on the streaming API.
func (h *Handler) endpoint(ev events.APIGatewayV2HTTPRequest, id, teamID string) server.Endpoint {
	e := server.Endpoint{TeamID: teamID}
	if h.StreamURL != "" {
		e.StreamURL = h.StreamURL + "/a2a/" + id
	}
	switch {
	case !h.Streaming:
		e.BaseURL = baseURL(ev, id)
	case e.StreamURL == "":
		e.StreamURL = baseURL(ev, id)
	}
	return e
}

// card is the public card, written as a2a-go's 0.3 layer writes it: one
// JSON both a 1.0 client and a 0.3 one read (the 1.0 fields, and 0.3's
// url, preferredTransport and protocolVersion).
func (h *Handler) card(ctx context.Context, reqID string) (events.APIGatewayV2HTTPResponse, error) {
	card, err := h.Service.PublicCard(ctx)
	if err != nil {
		return h.failure(ctx, reqID, err), nil
	}
	producer, ok := a2av0.NewStaticAgentCardProducer(card).(interface {
		CardJSON(context.Context) ([]byte, error)
	})
	var body []byte
	if ok {
		body, err = producer.CardJSON(ctx)
	} else {
		body, err = json.Marshal(card)
	}
	if err != nil {
		return h.failure(ctx, reqID, apperr.Wrap(apperr.EINTERNAL, err, "card")), nil
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusOK, Body: string(body),
		Headers: map[string]string{"Content-Type": "application/json"}}, nil
}

// rpc answers the request as one response (the HTTP API buffers every
// answer): a streaming method's events, up to the stream's end, in one
// body.
func (h *Handler) rpc(ctx context.Context, ev events.APIGatewayV2HTTPRequest, body []byte) events.APIGatewayV2HTTPResponse {
	rec := httptest.NewRecorder()
	h.serveRPC(ctx, ev, body, rec)
	headers := map[string]string{"Content-Type": "application/json"}
	if ct := rec.Header().Get("Content-Type"); ct != "" {
		headers["Content-Type"] = ct
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: rec.Code, Body: rec.Body.String(), Headers: headers}
}

// serveRPC hands the request to a2a-go's JSON-RPC transport, which writes
// its answer to w: A2A 1.0 when the client names a 1.x version
// (A2A-Version), its 0.3 compatibility layer when it names 0.x or none
// (0.3 clients send none, or 0.3); any other version is
// VersionNotSupported. A streaming method's answer is Server-Sent Events,
// each a JSON-RPC response, flushed as written.
func (h *Handler) serveRPC(ctx context.Context, ev events.APIGatewayV2HTTPRequest, body []byte, w http.ResponseWriter) {
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/", bytes.NewReader(body))
	for k, v := range ev.Headers {
		req.Header.Set(k, v)
	}
	opts := []a2asrv.TransportOption{
		a2asrv.WithTransportPanicHandler(func(r any) error {
			h.Log.ErrorContext(ctx, "a2a handler panic", "panic", fmt.Sprint(r))
			return a2a.ErrInternalError
		}),
		a2asrv.WithTransportKeepAlive(KeepAlive),
	}
	var srv http.Handler
	switch v := strings.TrimSpace(req.Header.Get(a2a.SvcParamVersion)); {
	case v == "" || v == "0" || strings.HasPrefix(v, "0."):
		srv = a2av0.NewJSONRPCHandler(h.Service, opts...)
	case v == "1" || strings.HasPrefix(v, "1."):
		srv = a2asrv.NewJSONRPCHandler(h.Service, opts...)
	default:
		write(w, h.failure(ctx, ev.RequestContext.RequestID, apperr.Invalid("A2A-Version", "A2A-Version %q is not served: 1.0, or 0.3 (or none)", v).WithReason("VersionNotSupported")))
		return
	}
	srv.ServeHTTP(w, req)
}

// write writes res to w.
func write(w http.ResponseWriter, res events.APIGatewayV2HTTPResponse) {
	for k, v := range res.Headers {
		w.Header().Set(k, v)
	}
	w.WriteHeader(res.StatusCode)
	_, _ = io.WriteString(w, res.Body)
}

// caller is who the key names.
type caller struct{ TeamID, KeyID string }

// authenticate runs the authorizer's check on the request's key: a denial
// is EUNAUTHORIZED, a team over its rate limit ELIMIT (reason
// TeamRateLimited, retry after a second), a store failure EUNAVAILABLE.
func (h *Handler) authenticate(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (caller, error) {
	res, err := h.Auth.Handle(ctx, events.APIGatewayV2CustomAuthorizerV2Request{
		Version: "2.0", Type: "REQUEST", RouteKey: ev.RouteKey, RawPath: ev.RawPath,
		Headers: ev.Headers, RequestContext: ev.RequestContext,
	})
	if err != nil {
		return caller{}, apperr.Wrap(apperr.EUNAVAILABLE, err, "the key could not be checked; retry")
	}
	if !res.IsAuthorized {
		return caller{}, apperr.New(apperr.EUNAUTHORIZED, "a valid Conclave API key of the team is required in X-Api-Key")
	}
	c := caller{}
	c.TeamID, _ = res.Context[authctx.TeamID].(string)
	c.KeyID, _ = res.Context[authctx.KeyID].(string)
	if limited, _ := res.Context[authctx.RateLimited].(bool); limited {
		// In process the authorizer's context holds an int (a JSON
		// number would be a float64: the agent calls it in process).
		if perUser, ok := res.Context[authctx.UserRateLimit].(int); ok {
			// A key acting for a person (X-Conclave-User) over that
			// person's own rate: the rest of the team may go on.
			return c, apperr.New(apperr.ELIMIT, "the user is over their rate limit (at most %d a second); retry after a second", perUser).
				WithReason("UserRateLimit").WithDetail("user_rate_limit", perUser)
		}
		return c, apperr.New(apperr.ELIMIT, "the team is over its rate limit; retry after a second").WithReason("TeamRateLimited")
	}
	return c, nil
}

// baseURL is the agent's URL as the client reached it: the API's host
// (API Gateway sets X-Forwarded-Proto; the local edge too).
func baseURL(ev events.APIGatewayV2HTTPRequest, id string) string {
	proto := ev.Headers["x-forwarded-proto"]
	if proto != "http" {
		proto = "https"
	}
	host := ev.RequestContext.DomainName
	if host == "" {
		host = ev.Headers["host"]
	}
	return proto + "://" + host + "/a2a/" + id
}

// failure is err as a JSON-RPC error object with err's HTTP status: what
// happens before a request reaches the protocol (an unknown agent, a
// missing key, the rate limit, a body too large) is answered in the
// protocol's shape too, with the Conclave code and the request id in its
// data.
func (h *Handler) failure(ctx context.Context, reqID string, err error) events.APIGatewayV2HTTPResponse {
	e, ok := apperr.As(err)
	if !ok {
		e = apperr.New(apperr.EINTERNAL, "internal error")
	}
	status, code := http.StatusInternalServerError, -32603
	headers := map[string]string{"Content-Type": "application/json"}
	switch e.Code {
	case apperr.ENOTFOUND:
		status, code = http.StatusNotFound, -32600
	case apperr.EUNAUTHORIZED:
		status, code = http.StatusUnauthorized, -32600
	case apperr.EINVALID:
		status, code = http.StatusBadRequest, -32600
		if e.Reason == "VersionNotSupported" {
			code = -32009
		}
	case apperr.ETOOLARGE:
		status, code = http.StatusRequestEntityTooLarge, -32600
	case apperr.ELIMIT:
		status, code = http.StatusTooManyRequests, -32000
		headers["Retry-After"] = strconv.Itoa(1)
	case apperr.EUNAVAILABLE:
		status, code = http.StatusServiceUnavailable, -32000
		headers["Retry-After"] = strconv.Itoa(1)
	default:
		h.Log.ErrorContext(ctx, "a2a failure", "error", err.Error())
		e = apperr.New(apperr.EINTERNAL, "internal error")
	}
	data := map[string]any{"code": e.Code, "request_id": reqID}
	if e.Reason != "" {
		data["reason"] = e.Reason
	}
	if e.Field != "" {
		data["field"] = e.Field
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": code, "message": e.Message, "data": data}})
	return events.APIGatewayV2HTTPResponse{StatusCode: status, Body: string(body), Headers: headers}
}

// registry reads the card's team and agents.
type registry struct {
	teams  teams.Store
	agents interface {
		ActiveAgents(ctx context.Context, teamID string) ([]agents.Agent, error)
	}
}

func (r registry) GetTeam(ctx context.Context, teamID string) (teams.Team, error) {
	return r.teams.GetTeam(ctx, teamID)
}

func (r registry) Agents(ctx context.Context, teamID string) ([]agents.Agent, error) {
	return r.agents.ActiveAgents(ctx, teamID)
}
