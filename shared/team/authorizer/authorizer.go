// Package authorizer is the HTTP API's Lambda authorizer (simple responses):
// it resolves the X-Api-Key header, or a bearer token of a team's OpenID
// Connect provider (token.go), to a team and hands the team id to the
// route functions in the authorizer context. It is the only place a team id
// comes from.
package authorizer

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/authctx"
	"github.com/conclave-ai/conclave/shared/platform/logctx"
	"github.com/conclave-ai/conclave/shared/team/teams"
)

// Context keys the authorizer hands every route function (shared/platform/httpapi
// reads them by these names; the stage's access log, infra/stack, by
// $context.authorizer.<key>).
const (
	ContextTeamID = authctx.TeamID
	ContextKeyID  = authctx.KeyID
)

// HeaderName carries the API key. API Gateway lowercases header names in
// payload 2.0 events.
const HeaderName = "x-api-key"

// Handler authorizes requests.
type Handler struct {
	Teams *teams.Service
	Log   *slog.Logger
	// Rate limits each team's requests per second; nil does not limit.
	Rate *RateLimit
	// Tokens verifies bearer tokens (identity.Verifier); nil refuses them.
	Tokens TokenVerifier
}

// Handle implements the authorizer. A store failure (the table did not
// answer before the authorizer's own reserve) is not a denial, so an
// outage is not mistaken for bad credentials, nor an error (API Gateway
// would answer a bare 500 with no request id): the request goes through
// with no team and authctx.Unavailable set, and the route function
// answers 503 DependencyUnavailable before anything runs (shared/platform/httpapi).
// Results are never cached (infra/stack), so the next request is checked.
func (h *Handler) Handle(ctx context.Context, ev events.APIGatewayV2CustomAuthorizerV2Request) (events.APIGatewayV2CustomAuthorizerSimpleResponse, error) {
	ok, authz := h.decide(ctx, ev.Headers, ev.RequestContext.RequestID, ev.RouteKey)
	return events.APIGatewayV2CustomAuthorizerSimpleResponse{IsAuthorized: ok, Context: authz}, nil
}

// HandleREST is the same check for the streaming API, a REST API (its
// REQUEST authorizer, caching off): the decision becomes an IAM policy on
// the method (Deny: API Gateway's 403, as the HTTP API's denial), and the
// context is the same keys with the same values, which a REST API hands
// the integration as they are (strings, numbers, booleans).
func (h *Handler) HandleREST(ctx context.Context, ev events.APIGatewayCustomAuthorizerRequestTypeRequest) (events.APIGatewayCustomAuthorizerResponse, error) {
	ok, authz := h.decide(ctx, ev.Headers, ev.RequestContext.RequestID, ev.HTTPMethod+" "+ev.Resource)
	effect := "Deny"
	if ok {
		effect = "Allow"
	}
	principal, _ := authz[ContextTeamID].(string)
	if principal == "" {
		principal = "anonymous"
	}
	return events.APIGatewayCustomAuthorizerResponse{
		PrincipalID: principal,
		PolicyDocument: events.APIGatewayCustomAuthorizerPolicy{Version: "2012-10-17", Statement: []events.IAMPolicyStatement{
			{Action: []string{"execute-api:Invoke"}, Effect: effect, Resource: []string{ev.MethodArn}},
		}},
		Context: authz,
	}, nil
}

// decide checks the request's key, or else its bearer token: authorized
// or not, and the context the route functions read. X-Conclave-User goes
// with a key only (actas.go).
func (h *Handler) decide(ctx context.Context, headers map[string]string, requestID, route string) (bool, map[string]any) {
	secret, bearer, hasKey, act := "", "", false, actAs{}
	for k, v := range headers {
		switch {
		case strings.EqualFold(k, HeaderName):
			secret, hasKey = strings.TrimSpace(v), true
		case strings.EqualFold(k, AuthorizationHeader):
			bearer = v
		case strings.EqualFold(k, ActAsHeader):
			act = actAs{set: true, user: v}
		}
	}
	// Every line of the request says which it is (the id the route's lines
	// and the access log have) and, once known, whose (shared/platform/logctx).
	ctx = logctx.With(ctx, "request_id", requestID, "route", route)
	// The key check and the rate count both end before the authorizer's
	// reserve: a table that stalls between them must not make the
	// invocation time out (API Gateway's bare 500).
	actx, cancel := reserved(ctx)
	defer cancel()
	if !hasKey && bearer != "" {
		if act.set {
			// A token names its user itself; only a key acts for one.
			h.Log.InfoContext(ctx, "denied", "reason", "X-Conclave-User with a bearer token")
			return false, nil
		}
		return h.decideToken(ctx, actx, bearer)
	}
	k, err := h.Teams.Authenticate(actx, secret)
	if apperr.Is(err, apperr.EUNAUTHORIZED) {
		h.Log.InfoContext(ctx, "denied")
		return false, nil
	}
	if err != nil {
		h.Log.ErrorContext(ctx, "authorizer failure: the key could not be checked", "error", err.Error())
		return true, map[string]any{authctx.Unavailable: true}
	}
	ctx = logctx.With(ctx, "team_id", k.TeamID, "key_id", k.ID)
	authz := map[string]any{ContextTeamID: k.TeamID, ContextKeyID: k.ID}
	ctx, allowed := h.actFor(ctx, k, act, authz)
	if !allowed {
		return false, nil
	}
	user, _ := authz[ContextUserID].(string)
	h.limit(ctx, actx, k.TeamID, user, authz)
	return true, authz
}

// Event answers either API's authorizer event: the HTTP API's payload 2.0
// (version "2.0") or the streaming REST API's REQUEST event (a methodArn).
// One function serves both, so the two APIs check keys by one code path.
func (h *Handler) Event(ctx context.Context, raw json.RawMessage) (any, error) {
	var probe struct {
		Version   string `json:"version"`
		MethodArn string `json:"methodArn"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, err
	}
	if probe.Version == "" && probe.MethodArn != "" {
		var ev events.APIGatewayCustomAuthorizerRequestTypeRequest
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, err
		}
		return h.HandleREST(ctx, ev)
	}
	var ev events.APIGatewayV2CustomAuthorizerV2Request
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, err
	}
	return h.Handle(ctx, ev)
}

// answerReserve is what the key check leaves of the authorizer's time (at
// most a fifth of it): a table that does not answer cuts the check off
// and the authorizer still answers.
const answerReserve = 500 * time.Millisecond

func reserved(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, dl.Add(-min(answerReserve, time.Until(dl)/5)))
}
