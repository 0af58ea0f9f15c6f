package memory_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/authctx"
	"github.com/conclave-ai/conclave/shared/team/memory"
)

func person(id, role string) context.Context {
	return authctx.WithCaller(context.Background(), authctx.Caller{UserID: id, Role: role})
}

func TestAUserProfileBelongsToItsPersonAndReachesOnlyTheirTurns(t *testing.T) {
	// GIVEN the team's default profile (a key's), alice's (an admin's
	// own) and bob's (named by a key)
	svc, _, _ := newService(t)
	profile := func(ctx context.Context, user, content string) memory.Memory {
		t.Helper()
		m, err := svc.Create(ctx, team, "kyra", memory.CreateInput{Type: memory.UserProfile, Visibility: memory.Shared, UserID: user, Content: content})
		require.NoError(t, err)
		return m
	}
	def := profile(context.Background(), "", "The team writes in English")
	alice := profile(person("alice", authctx.RoleAdmin), "", "Alice is a nurse")
	bob := profile(context.Background(), "bob", "Bob is a pilot")
	assert.Empty(t, def.UserID, "a key's own write is the team's default")
	assert.Equal(t, "alice", alice.UserID, "a person's write is their own")
	assert.Equal(t, "bob", bob.UserID, "a key names the person")

	// WHEN each is answered THEN each reads the defaults and their own only
	for _, tc := range []struct {
		person string
		want   []string
	}{
		{"", []string{"The team writes in English"}},
		{"alice", []string{"Alice is a nurse", "The team writes in English"}},
		{"bob", []string{"Bob is a pilot", "The team writes in English"}},
		{"carol", []string{"The team writes in English"}},
	} {
		for range 2 { // built, then from the cache
			c, err := svc.ForPerson(context.Background(), team, "luke", tc.person)
			require.NoError(t, err)
			assert.ElementsMatch(t, tc.want, contents(c.UserProfile), "person %q", tc.person)
		}
	}
	c, err := svc.ForAgent(context.Background(), team, "luke")
	require.NoError(t, err)
	assert.Equal(t, []string{"The team writes in English"}, contents(c.UserProfile), "no person: the defaults only")
}

func TestAUserProfilesUserIDIsChecked(t *testing.T) {
	svc, _, _ := newService(t)
	for _, tc := range []struct {
		name string
		ctx  context.Context
		in   memory.CreateInput
		code string
	}{
		{"not a user id", context.Background(), memory.CreateInput{Type: memory.UserProfile, Visibility: memory.Shared, UserID: "a b", Content: "x"}, apperr.EINVALID},
		{"not a profile", context.Background(), memory.CreateInput{Type: "fact", UserID: "bob", Content: "x"}, apperr.EINVALID},
		{"a member names another", person("alice", authctx.RoleMember), memory.CreateInput{Type: memory.UserProfile, Visibility: memory.Shared, UserID: "bob", Content: "x"}, apperr.EFORBIDDEN},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := svc.Create(tc.ctx, team, "kyra", tc.in)
			assert.Equal(t, tc.code, apperr.Code(err))
		})
	}
}
