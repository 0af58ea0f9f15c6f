package conversations

import (
	"context"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/authctx"
)

// A conversation belongs to the person who started it (Conversation.Owner:
// a bearer token's user, or the user a key acted for); a key's own
// conversation has no owner. A member reaches only their own: another's
// is not found, as another team's is, so its existence is not told. A key
// and an admin reach every conversation of the team.

// visible reports whether ctx's caller may reach c.
func Visible(ctx context.Context, c Conversation) bool {
	caller := authctx.CallerOf(ctx)
	return !caller.Member() || c.Owner == caller.UserID
}

// mine is ENOTFOUND when ctx's caller is a member who does not own the
// conversation id (or it does not exist). It reads the conversation for a
// member only: a key's and an admin's requests cost nothing more.
func (s *Service) mine(ctx context.Context, teamID, id string) error {
	if !authctx.CallerOf(ctx).Member() {
		return nil
	}
	c, err := s.store.GetConversation(ctx, teamID, id)
	if err != nil {
		return err
	}
	if !Visible(ctx, c) {
		return apperr.NotFound("conversation", id)
	}
	return nil
}

// listOwner is the owner a listing is narrowed to: a member's own user id
// whatever they ask (another's is EFORBIDDEN), the owner a key or an admin
// asks for (EINVALID when it is not a user id), or "" for every
// conversation.
func listOwner(ctx context.Context, owner string) (string, error) {
	if owner != "" && !authctx.ValidUserID(owner) {
		return "", apperr.Invalid("owner", "owner must be a user id of 1 to %d safe characters", authctx.MaxUserID)
	}
	caller := authctx.CallerOf(ctx)
	if !caller.Member() {
		return owner, nil
	}
	if owner != "" && owner != caller.UserID {
		return "", apperr.New(apperr.EFORBIDDEN, "a member lists their own conversations only").WithReason("RoleForbidden")
	}
	return caller.UserID, nil
}
