package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/memory"
)

// memory is a new shared memory of author's (not stored).
func (f *fixture) memory(author, content string) memory.Memory {
	return memory.Memory{ID: ids.New("mem"), TeamID: f.team, Author: author, Type: "fact", Visibility: memory.Shared,
		Content: content, Source: "api", CreatedAt: time.Now().UTC().Truncate(time.Millisecond)}
}

// memoryIDs are the team's memories' ids, newest first.
func (f *fixture) memoryIDs(t *testing.T) []string {
	t.Helper()
	list, err := f.Memories.RecentMemories(context.Background(), f.team, 100)
	require.NoError(t, err)
	out := []string{}
	for _, m := range list {
		out = append(out, m.ID)
	}
	return out
}

// cacheContext caches a context of agent's built now, as the memory
// service does: under the epoch read before building it.
func (f *fixture) cacheContext(t *testing.T, agent string) memory.Context {
	t.Helper()
	ctx := context.Background()
	epoch, err := f.Memories.MemoryEpoch(ctx, f.team)
	require.NoError(t, err)
	c := memory.Context{Agent: agent, Shared: []memory.Memory{f.memory("ann", "in the context")},
		UserProfile: []memory.Memory{f.memory("ann", "a person's profile")}, BuiltAt: time.Now().UTC().Truncate(time.Millisecond)}
	c.Shared[0].TeamID, c.UserProfile[0].TeamID = "", ""
	c.UserProfile[0].Type, c.UserProfile[0].UserID = memory.UserProfile, "auth0|alice"
	cached, err := f.Memories.PutContext(ctx, f.team, c, epoch)
	require.NoError(t, err)
	require.True(t, cached, "a context built under the current epoch is cached")
	return c
}

// memoriesListed: a memory is stored once (a second write of its id is
// refused and changes nothing); the team's are listed newest first, whole,
// a page at a time, the recent ones up to a limit; another team reads none.
func memoriesListed(t *testing.T, f *fixture) {
	ctx := context.Background()
	var made []string
	for i := range 3 {
		m := f.memory("ann", "memory")
		if i == 1 {
			m.Visibility, m.Agents, m.Type = memory.Private, []string{"bob"}, "episodic"
		}
		if i == 2 {
			m.Type, m.UserID = memory.UserProfile, "auth0|alice"
		}
		require.NoError(t, f.Memories.PutMemory(ctx, m))
		made = append(made, m.ID)
	}
	first, err := f.Memories.RecentMemories(ctx, f.team, 3)
	require.NoError(t, err)
	require.Len(t, first, 3)
	again := f.memory("bob", "written twice")
	again.ID = made[0]
	assert.Error(t, f.Memories.PutMemory(ctx, again), "an id is stored once")

	list := func(team string) func(paging.Page) ([]memory.Memory, string, error) {
		return func(p paging.Page) ([]memory.Memory, string, error) { return f.Memories.ListMemories(ctx, team, p) }
	}
	key := func(m memory.Memory) string { return m.ID }
	assert.Equal(t, reversed(made), pages(t, 2, list(f.team), key), "newest first, each once")
	whole, _, err := f.Memories.ListMemories(ctx, f.team, paging.Page{Limit: 10})
	require.NoError(t, err)
	require.Len(t, whole, 3)
	assert.Equal(t, "ann", whole[2].Author, "the first write kept")
	assert.Equal(t, "memory", whole[2].Content)
	assert.Equal(t, memory.Private, whole[1].Visibility)
	assert.Equal(t, []string{"bob"}, whole[1].Agents)
	assert.Equal(t, "episodic", whole[1].Type)
	assert.Equal(t, "api", whole[1].Source)
	assert.True(t, whole[1].CreatedAt.Equal(first[1].CreatedAt))
	assert.Equal(t, "auth0|alice", whole[0].UserID, "a profile keeps its person")
	assert.Empty(t, whole[1].UserID)

	recent, err := f.Memories.RecentMemories(ctx, f.team, 2)
	require.NoError(t, err)
	assert.Equal(t, reversed(made)[:2], []string{recent[0].ID, recent[1].ID}, "the newest, up to the limit")
	assert.Empty(t, pages(t, 10, list(f.otherTeam()), key), "another team's")
	boundToken(t, list(f.team), list(f.otherTeam()))

	// The consultations' service reads the same memories.
	theirs, err := f.Consultations.RecentMemories(ctx, f.team, 10)
	require.NoError(t, err)
	assert.Len(t, theirs, 3)
}

// memoryContexts: a context is cached only under the epoch read before it
// was built; dropping contexts moves the epoch on and ends the named
// agents' (and no other's); a context built more than an hour ago is a
// miss; a team's epoch and contexts are its own.
func memoryContexts(t *testing.T, f *fixture) {
	ctx := context.Background()
	epoch, err := f.Memories.MemoryEpoch(ctx, f.team)
	require.NoError(t, err)
	assert.Zero(t, epoch, "no invalidation yet")
	ann := f.cacheContext(t, "ann")
	f.cacheContext(t, "bob")
	got, hit, err := f.Memories.GetContext(ctx, f.team, "ann")
	require.NoError(t, err)
	require.True(t, hit)
	assert.False(t, got.Cached, "the store does not mark what it returns")
	assert.True(t, got.BuiltAt.Equal(ann.BuiltAt))
	require.Len(t, got.Shared, 1)
	assert.Equal(t, ann.Shared[0].ID, got.Shared[0].ID)
	assert.Equal(t, ann.Shared[0].Content, got.Shared[0].Content)
	require.Len(t, got.UserProfile, 1)
	assert.Equal(t, "auth0|alice", got.UserProfile[0].UserID, "the cache keeps each profile's person")
	_, hit, err = f.Memories.GetContext(ctx, f.otherTeam(), "ann")
	require.NoError(t, err)
	assert.False(t, hit, "another team's")

	require.NoError(t, f.Memories.DropContexts(ctx, f.team, []string{"ann", "ann", "cat"}))
	now, err := f.Memories.MemoryEpoch(ctx, f.team)
	require.NoError(t, err)
	assert.Equal(t, epoch+1, now, "one drop, one step")
	_, hit, err = f.Memories.GetContext(ctx, f.team, "ann")
	require.NoError(t, err)
	assert.False(t, hit, "dropped")
	_, hit, err = f.Memories.GetContext(ctx, f.team, "bob")
	require.NoError(t, err)
	assert.True(t, hit, "an agent not named keeps its context")
	theirs, err := f.Memories.MemoryEpoch(ctx, f.otherTeam())
	require.NoError(t, err)
	assert.Zero(t, theirs, "the epoch is the team's")

	cached, err := f.Memories.PutContext(ctx, f.team, ann, epoch)
	require.NoError(t, err)
	assert.False(t, cached, "built before the drop: not cached")
	_, hit, err = f.Memories.GetContext(ctx, f.team, "ann")
	require.NoError(t, err)
	assert.False(t, hit)
	old := ann
	old.BuiltAt = time.Now().UTC().Add(-time.Hour - time.Minute)
	cached, err = f.Memories.PutContext(ctx, f.team, old, now)
	require.NoError(t, err)
	assert.True(t, cached)
	_, hit, err = f.Memories.GetContext(ctx, f.team, "ann")
	require.NoError(t, err)
	assert.False(t, hit, "built over an hour ago: a miss")
}

// teamDirectory: the team's agents as the memory service and the expert
// gate see them: every agent not archived, or the active ones, by slug.
func teamDirectory(t *testing.T, f *fixture) {
	ctx := context.Background()
	now := time.Now().UTC()
	_, err := f.Agents.SetStatus(ctx, f.team, "bob", agents.StatusPaused, now)
	require.NoError(t, err)
	_, err = f.Agents.SetStatus(ctx, f.team, "cat", agents.StatusArchived, now)
	require.NoError(t, err)
	dir, ok := f.Memories.(memory.Directory)
	require.True(t, ok, "the memories' store reads the team's agents")
	slugs := func(list []agents.Agent, err error) []string {
		t.Helper()
		require.NoError(t, err)
		out := []string{}
		for _, a := range list {
			assert.Equal(t, f.team, a.TeamID)
			out = append(out, a.Slug)
		}
		return out
	}
	assert.Equal(t, []string{"ann", "bob"}, slugs(dir.TeamAgents(ctx, f.team)), "not archived")
	assert.Equal(t, []string{"ann"}, slugs(f.Gate.ActiveAgents(ctx, f.team)), "active")
	assert.Empty(t, slugs(dir.TeamAgents(ctx, f.otherTeam())))
	assert.Empty(t, slugs(f.Consultations.ActiveAgents(ctx, f.otherTeam())))
	a, err := dir.GetAgent(ctx, f.team, "bob")
	require.NoError(t, err)
	assert.Equal(t, agents.StatusPaused, a.Status)
}
