package api

import (
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/httpapi"
)

// What a person starts (tasks, sessions, reports) records their user id
// (user_id); a member reads only their own, as conversations are
// (conversations/owner.go): another's is not found, so its existence is
// not told, and their listings hold their own only. A key and an admin
// reach everything the team's. The check is the routes', not the
// services': an agent at work in a member's chat turn still reads the
// team's work as its tools always have.

// Reach is ENOTFOUND (naming kind and id) when r's caller is a member and
// userID, the person what they ask for was started by ("" for a key's
// own), is not theirs.
func Reach(r *httpapi.Request, userID, kind, id string) error {
	if r.Caller.Member() && userID != r.Caller.UserID {
		return apperr.NotFound(kind, id)
	}
	return nil
}

// OwnUser is the person a listing is narrowed to: a member's own user id,
// or "" (everyone's) for a key and an admin.
func OwnUser(r *httpapi.Request) string {
	if r.Caller.Member() {
		return r.Caller.UserID
	}
	return ""
}
