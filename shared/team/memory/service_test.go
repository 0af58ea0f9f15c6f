package memory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/testkit/demo"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
)

const team = demo.TeamID

func newService(tb testing.TB) (*memory.Service, *memstore.Publisher, *memstore.Store) {
	tb.Helper()
	store := memstore.New()
	require.NoError(tb, demo.Seed(context.Background(), store))
	now := func() time.Time { return time.Date(2030, 1, 2, 9, 0, 0, 0, time.UTC) }
	store.Now = now
	bus := &memstore.Publisher{}
	return &memory.Service{Store: store, Dir: store, Bus: bus, Now: now}, bus, store
}

func contents(list []memory.Memory) []string {
	out := []string{}
	for _, m := range list {
		out = append(out, m.Content)
	}
	return out
}

func TestAPrivateMemoryRefreshesOnlyItsAuthorsContext(t *testing.T) {
	svc, bus, _ := newService(t)
	ctx := context.Background()
	c, err := svc.ForAgent(ctx, team, "kyra")
	require.NoError(t, err)
	assert.False(t, c.Cached)
	c, err = svc.ForAgent(ctx, team, "kyra")
	require.NoError(t, err)
	assert.True(t, c.Cached, "the second read comes from the cache")

	m, err := svc.Create(ctx, team, "kyra", memory.CreateInput{Content: "The user prefers short answers"})
	require.NoError(t, err)
	assert.Equal(t, memory.Private, m.Visibility)
	assert.Empty(t, bus.Events(), "a private memory is not announced")

	c, err = svc.ForAgent(ctx, team, "kyra")
	require.NoError(t, err)
	assert.False(t, c.Cached)
	assert.Equal(t, []string{"The user prefers short answers"}, contents(c.Private))
	luke, err := svc.Visible(ctx, team, "luke")
	require.NoError(t, err)
	assert.Empty(t, luke, "another agent cannot see it")
}

func TestASharedMemoryReachesEveryAgentAfterTheInvalidation(t *testing.T) {
	svc, bus, _ := newService(t)
	ctx := context.Background()
	_, err := svc.ForAgent(ctx, team, "luke") // cached before the memory exists
	require.NoError(t, err)

	m, err := svc.Create(ctx, team, "kyra", memory.CreateInput{Type: "user_profile", Visibility: memory.Shared, Content: "The user is a Go developer"})
	require.NoError(t, err)
	events := memstore.Details[memory.SharedEvent](bus, memory.DetailType)
	require.Len(t, events, 1)
	assert.Equal(t, memory.SharedEvent{TeamID: team, MemoryID: m.ID, Author: "kyra", Type: "user_profile", CreatedAt: m.CreatedAt}, events[0])

	c, err := svc.ForAgent(ctx, team, "luke")
	require.NoError(t, err)
	assert.True(t, c.Cached)
	assert.Empty(t, c.UserProfile, "until the consumer invalidates, the cache is stale")

	n, err := svc.InvalidateTeam(ctx, team) // the MemoryShared consumer
	require.NoError(t, err)
	assert.Equal(t, len(demo.Agents), n)
	c, err = svc.ForAgent(ctx, team, "luke")
	require.NoError(t, err)
	assert.False(t, c.Cached)
	assert.Equal(t, []string{"The user is a Go developer"}, contents(c.UserProfile))
	assert.Equal(t, []string{m.ID}, c.IDs())
}

func TestCreateRejections(t *testing.T) {
	svc, bus, store := newService(t)
	ctx := context.Background()
	_, err := svc.Create(ctx, team, "nobody", memory.CreateInput{Content: "x"})
	assert.Equal(t, apperr.ENOTFOUND, apperr.Code(err))
	_, err = svc.Create(ctx, demo.OtherTeamID, "kyra", memory.CreateInput{Content: "x"})
	assert.Equal(t, apperr.ENOTFOUND, apperr.Code(err))
	_, err = svc.Create(ctx, team, "kyra", memory.CreateInput{Content: "  "})
	assert.Equal(t, apperr.EINVALID, apperr.Code(err))
	_, err = agents.NewService(store).SetStatus(ctx, team, "wren", agents.StatusArchived)
	require.NoError(t, err)
	n, err := svc.InvalidateTeam(ctx, team)
	require.NoError(t, err)
	assert.Equal(t, len(demo.Agents)-1, n, "archived agents have no context to drop")

	bus.Err = errors.New("bus down")
	_, err = svc.Create(ctx, team, "kyra", memory.CreateInput{Visibility: memory.Shared, Content: "x"})
	assert.Equal(t, apperr.EINTERNAL, apperr.Code(err), "a shared memory nobody hears of is a failure")
}
