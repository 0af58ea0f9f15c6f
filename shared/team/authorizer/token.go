package authorizer

import (
	"context"
	"strings"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/authctx"
	"github.com/conclave-ai/conclave/shared/platform/logctx"
	"github.com/conclave-ai/conclave/shared/team/identity"
)

// AuthorizationHeader carries a bearer token (a request with X-Api-Key is
// checked by its key, whatever else it carries).
const AuthorizationHeader = "authorization"

// Context keys of a token's caller, beside the team id: the user and the
// role (identity.RoleAdmin or identity.RoleMember). A key's own request
// has neither; a key acting for a user has both (actas.go).
const (
	ContextUserID = authctx.UserID
	ContextRole   = authctx.Role
)

// TokenVerifier verifies a bearer token (identity.Verifier).
type TokenVerifier interface {
	Verify(ctx context.Context, raw string) (identity.Caller, error)
}

// decideToken checks a bearer token. What its user may call is decided by
// its role in the route function, before anything runs
// (manifest.MemberRoutes, enforced by httpapi.Router): the authorizer
// says who, not what.
func (h *Handler) decideToken(ctx, actx context.Context, header string) (bool, map[string]any) {
	scheme, raw, _ := strings.Cut(strings.TrimSpace(header), " ")
	raw = strings.TrimSpace(raw)
	if !strings.EqualFold(scheme, "Bearer") || raw == "" || h.Tokens == nil {
		h.Log.InfoContext(ctx, "denied", "reason", "no API key and no bearer token")
		return false, nil
	}
	c, err := h.Tokens.Verify(actx, raw)
	if apperr.Is(err, apperr.EUNAUTHORIZED) {
		reason := err.Error()
		if e, ok := apperr.As(err); ok {
			reason = e.Message
		}
		h.Log.InfoContext(ctx, "denied", "reason", "token: "+reason)
		return false, nil
	}
	if err != nil {
		h.Log.ErrorContext(ctx, "authorizer failure: the token's issuer could not be looked up", "error", err.Error())
		return true, map[string]any{authctx.Unavailable: true}
	}
	ctx = logctx.With(ctx, "team_id", c.TeamID, "user_id", c.UserID)
	authz := map[string]any{ContextTeamID: c.TeamID, ContextUserID: c.UserID, ContextRole: c.Role}
	h.limit(ctx, actx, c.TeamID, c.UserID, authz)
	return true, authz
}
