package conversations_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/authctx"
	"github.com/conclave-ai/conclave/shared/platform/paging"
)

func as(userID, role string) context.Context {
	return authctx.WithCaller(context.Background(), authctx.Caller{UserID: userID, Role: role})
}

// A conversation belongs to the person who started it: a member reaches
// their own only (another's is 404 on every call, and nothing changes), a
// member lists their own, and a key and an admin reach and list every one,
// by owner too.
func TestAMembersConversationIsTheirs(t *testing.T) {
	f := newFixture(t, collaborationOn)
	alice, bob, admin := as("alice", authctx.RoleMember), as("bob", authctx.RoleMember), as("root", authctx.RoleAdmin)
	mine, err := f.svc.Create(alice, team, conversations.CreateInput{Title: "Alice's"})
	require.NoError(t, err)
	assert.Equal(t, "alice", mine.Owner)
	keys := f.create(t, "")
	assert.Empty(t, keys.Owner, "a key's own conversation has no owner")
	_, err = f.svc.Post(alice, team, mine.ID, conversations.PostInput{Content: "hello"})
	require.NoError(t, err)
	before := f.messages(t, mine.ID)

	notFound := func(what string, err error) {
		t.Helper()
		assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "%s: %v", what, err)
	}
	_, err = f.svc.Get(bob, team, mine.ID)
	notFound("get", err)
	_, _, err = f.svc.Messages(bob, team, mine.ID, paging.Page{})
	notFound("messages", err)
	_, _, err = f.svc.MessagesAfter(bob, team, mine.ID, before[0].ID, 0, paging.Page{})
	notFound("messages after", err)
	_, err = f.svc.Post(bob, team, mine.ID, conversations.PostInput{Content: "mine now"})
	notFound("post", err)
	_, err = f.svc.Rate(bob, team, mine.ID, before[len(before)-1].ID, conversations.RateInput{Rating: 1})
	notFound("feedback", err)
	_, err = f.svc.Handoff(bob, team, mine.ID, conversations.HandoffInput{To: "luke", Reason: "x"})
	notFound("handoff", err)
	_, err = f.svc.Return(bob, team, mine.ID)
	notFound("return", err)
	_, err = f.svc.Handoffs(bob, team, mine.ID)
	notFound("handoffs", err)
	_, err = f.svc.SetAgents(bob, team, mine.ID, conversations.AgentsInput{Add: []string{"luke"}})
	notFound("agents", err)
	_, err = f.svc.ContextFor(bob, team, mine.ID, "luke")
	notFound("context", err)
	_, err = f.svc.Close(bob, team, mine.ID)
	notFound("close", err)
	_, err = f.svc.Get(bob, team, keys.ID)
	notFound("a key's own conversation, to a member", err)
	assert.Equal(t, before, f.messages(t, mine.ID), "nothing changed")
	assert.Equal(t, conversations.StatusOpen, f.get(t, mine.ID).Status)

	for name, ctx := range map[string]context.Context{"alice": alice, "an admin": admin, "a key": context.Background()} {
		got, err := f.svc.Get(ctx, team, mine.ID)
		require.NoError(t, err, name)
		assert.Equal(t, "alice", got.Owner, name)
	}

	list, _, err := f.svc.List(alice, team, "", paging.Page{})
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, mine.ID, list[0].ID)
	list, _, err = f.svc.List(bob, team, "", paging.Page{})
	require.NoError(t, err)
	assert.Empty(t, list, "bob has none")
	_, _, err = f.svc.List(bob, team, "alice", paging.Page{})
	assert.True(t, apperr.Is(err, apperr.EFORBIDDEN), "a member asks for another's: %v", err)
	list, _, err = f.svc.List(admin, team, "", paging.Page{})
	require.NoError(t, err)
	assert.Len(t, list, 2, "an admin lists every one")
	list, _, err = f.svc.List(context.Background(), team, "alice", paging.Page{})
	require.NoError(t, err)
	require.Len(t, list, 1, "a key filters by owner")
	_, _, err = f.svc.List(context.Background(), team, "no spaces", paging.Page{})
	assert.True(t, apperr.Is(err, apperr.EINVALID))
}
