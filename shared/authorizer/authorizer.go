// Package authorizer is the HTTP API's Lambda authorizer (simple responses):
// it resolves the X-Api-Key header to a team and hands the team id to the
// route functions in the authorizer context. It is the only place a team id
// comes from.
package authorizer

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/conclave-ai/conclave/shared/apperr"
	"github.com/conclave-ai/conclave/shared/authctx"
	"github.com/conclave-ai/conclave/shared/logctx"
	"github.com/conclave-ai/conclave/shared/teams"
)

// Context keys the authorizer hands every route function (shared/httpapi
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
}

// Handle implements the authorizer. A store failure (the table did not
// answer before the authorizer's own reserve) is not a denial, so an
// outage is not mistaken for bad credentials, nor an error (API Gateway
// would answer a bare 500 with no request id): the request goes through
// with no team and authctx.Unavailable set, and the route function
// answers 503 DependencyUnavailable before anything runs (shared/httpapi).
// Results are never cached (infra/stack), so the next request is checked.
func (h *Handler) Handle(ctx context.Context, ev events.APIGatewayV2CustomAuthorizerV2Request) (events.APIGatewayV2CustomAuthorizerSimpleResponse, error) {
	secret := ""
	for k, v := range ev.Headers {
		if strings.EqualFold(k, HeaderName) {
			secret = strings.TrimSpace(v)
		}
	}
	// Every line of the request says which it is (the id the route's lines
	// and the access log have) and, once known, whose (shared/logctx).
	ctx = logctx.With(ctx, "request_id", ev.RequestContext.RequestID, "route", ev.RouteKey)
	// The key check and the rate count both end before the authorizer's
	// reserve: a table that stalls between them must not make the
	// invocation time out (API Gateway's bare 500).
	actx, cancel := reserved(ctx)
	defer cancel()
	k, err := h.Teams.Authenticate(actx, secret)
	if apperr.Is(err, apperr.EUNAUTHORIZED) {
		h.Log.InfoContext(ctx, "denied")
		return events.APIGatewayV2CustomAuthorizerSimpleResponse{IsAuthorized: false}, nil
	}
	if err != nil {
		h.Log.ErrorContext(ctx, "authorizer failure: the key could not be checked", "error", err.Error())
		return events.APIGatewayV2CustomAuthorizerSimpleResponse{IsAuthorized: true, Context: map[string]any{authctx.Unavailable: true}}, nil
	}
	ctx = logctx.With(ctx, "team_id", k.TeamID, "key_id", k.ID)
	authz := map[string]any{ContextTeamID: k.TeamID, ContextKeyID: k.ID}
	if h.limited(actx, k.TeamID) {
		h.Log.WarnContext(ctx, "team over its rate limit")
		authz[ContextRateLimited], authz[ContextRetryAfter] = true, 1
	}
	return events.APIGatewayV2CustomAuthorizerSimpleResponse{IsAuthorized: true, Context: authz}, nil
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
