package authorizer

import (
	"context"

	"github.com/conclave-ai/conclave/shared/platform/logctx"
	"github.com/conclave-ai/conclave/shared/team/identity"
	"github.com/conclave-ai/conclave/shared/team/teams"
)

// ActAsHeader names the user a key acts for (issue 44, item 2): a server
// that signs its users in itself calls with its key and this header, when
// the key was issued with act_as_users.
const ActAsHeader = "x-conclave-user"

// actAs is the X-Conclave-User of a request: whether it came, and its
// value as it came (an empty value is refused, not read as absent: a
// client that meant to name a user and named none is told so).
type actAs struct {
	set  bool
	user string
}

// actFor applies the header to a key's context: none leaves the key's own
// context; on a key without act_as_users, or with a value that is not a
// user id (identity.ValidUserID: the token path's rule), the request is
// denied and the reason logged. Acting for a user, the key hands the route
// functions the user and the role a token's caller has (authctx.UserID,
// authctx.Role), the role admin: a key acting for a user may do what the
// key does (its server vouches for the user), and what it starts records
// the user (manifest.MemberRoutes narrows members only).
func (h *Handler) actFor(ctx context.Context, k teams.APIKey, a actAs, authz map[string]any) (context.Context, bool) {
	if !a.set {
		return ctx, true
	}
	if !k.ActAsUsers {
		h.Log.InfoContext(ctx, "denied", "reason", "X-Conclave-User on a key not issued with act_as_users")
		return ctx, false
	}
	if !identity.ValidUserID(a.user) {
		h.Log.InfoContext(ctx, "denied", "reason", "X-Conclave-User is not a user id of 1 to 128 safe characters")
		return ctx, false
	}
	authz[ContextUserID], authz[ContextRole] = a.user, identity.RoleAdmin
	return logctx.With(ctx, "user_id", a.user), true
}
