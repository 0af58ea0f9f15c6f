package memory

import (
	"context"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/authctx"
)

// The user profile is per person (issue 44): a user_profile memory with
// a UserID belongs to that person, one without is the team's default
// profile. An agent answering a person reads the defaults and that
// person's own, never another's; an agent answering no person (a key's
// own turn, a task) reads the defaults only.

// UserProfile is the type of a user profile memory.
const UserProfile = "user_profile"

// ReadableFor reports whether m may reach an agent answering person (""
// for none): every memory but another person's profile.
func (m Memory) ReadableFor(person string) bool {
	return m.UserID == "" || m.UserID == person
}

// For is c narrowed to what an agent answering person reads: the team's
// default profiles and person's own.
func (c Context) For(person string) Context {
	profiles := []Memory{}
	for _, m := range c.UserProfile {
		if m.ReadableFor(person) {
			profiles = append(profiles, m)
		}
	}
	c.UserProfile = profiles
	return c
}

// validUserID: only a user_profile belongs to a person, and its user_id
// follows the user id rules. Returns EINVALID.
func validUserID(in CreateInput) error {
	if in.UserID == "" {
		return nil
	}
	if in.Type != UserProfile {
		return apperr.Invalid("user_id", "only a user_profile memory belongs to a user")
	}
	if !authctx.ValidUserID(in.UserID) {
		return apperr.Invalid("user_id", "user_id must be a user id of 1 to %d safe characters", authctx.MaxUserID)
	}
	return nil
}

// profileOwner fills in the person a user_profile written through the
// API belongs to: the user_id a key or an admin names, else the calling
// person's own (a key's own write stays the team's default). A member
// names no one but themselves (EFORBIDDEN).
func profileOwner(ctx context.Context, in CreateInput) (CreateInput, error) {
	caller := authctx.CallerOf(ctx)
	if in.UserID != "" && caller.Member() && in.UserID != caller.UserID {
		return in, apperr.New(apperr.EFORBIDDEN, "a member writes their own profile only").WithReason("RoleForbidden")
	}
	if in.UserID == "" && in.Type == UserProfile {
		in.UserID = caller.UserID
	}
	return in, nil
}
