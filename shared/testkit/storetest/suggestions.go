package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing/suggestions"
)

// suggestion is a new suggestion of the team for agent, created at and
// kept for suggestions.Retention (expired by now when at is older).
func (f *fixture) suggestion(agent string, at time.Time) suggestions.Suggestion {
	return suggestions.Suggestion{ID: ids.New("msg"), TeamID: f.team, Agent: agent, Skill: "work", Content: "how many days of leave <do I> have left & when?",
		ConversationID: ids.New("conv"), DecisionID: ids.New("rdec"), RoutedTo: "bob", Kind: suggestions.KindMention, RatedLow: true,
		CreatedAt: at, ExpiresAt: at.Add(suggestions.Retention)}
}

// suggestionIDs are an agent's listed suggestions' ids, read a page of
// one at a time (a filtered page may hold none).
func (f *fixture) suggestionIDs(t *testing.T, team, agent string) []string {
	t.Helper()
	return pages(t, 1, func(p paging.Page) ([]suggestions.Suggestion, string, error) {
		return f.Suggestions.ListSuggestions(context.Background(), team, agent, p)
	}, func(s suggestions.Suggestion) string { return s.ID })
}

// suggestionsStored: a suggestion is added once per agent and id (a
// second add is false and changes nothing) and read back whole by its
// team and agent only; an agent's list is its own, newest first, a page
// at a time.
func suggestionsStored(t *testing.T, f *fixture) {
	ctx := context.Background()
	s := f.Suggestions
	at := time.Now().UTC().Truncate(time.Millisecond)
	s1, s2, s3 := f.suggestion("ann", at), f.suggestion("ann", at.Add(time.Second)), f.suggestion("ann", at.Add(2*time.Second))
	s2.RatedLow, s2.Kind = false, suggestions.KindHandoff
	b1 := f.suggestion("bob", at)
	o1 := s1
	o1.TeamID, o1.Content = f.otherTeam(), "another team's"
	for _, sg := range []suggestions.Suggestion{s1, s2, s3, b1, o1} {
		added, err := s.AddSuggestion(ctx, sg, suggestions.MaxPerAgent)
		require.NoError(t, err)
		require.True(t, added, "%s of %s", sg.ID, sg.TeamID)
	}
	again := s1
	again.Content, again.Skill = "written twice", "other"
	added, err := s.AddSuggestion(ctx, again, suggestions.MaxPerAgent)
	require.NoError(t, err)
	assert.False(t, added, "an agent's id is added once")
	other := s1
	other.Agent = "cat"
	added, err = s.AddSuggestion(ctx, other, suggestions.MaxPerAgent)
	require.NoError(t, err)
	assert.True(t, added, "another agent's suggestion of the message")

	got, err := s.GetSuggestion(ctx, f.team, "ann", s1.ID)
	require.NoError(t, err)
	assert.Equal(t, s1, got, "read back whole, as first added")
	got, err = s.GetSuggestion(ctx, f.team, "ann", s2.ID)
	require.NoError(t, err)
	assert.Equal(t, s2, got)
	got, err = s.GetSuggestion(ctx, f.otherTeam(), "ann", s1.ID)
	require.NoError(t, err)
	assert.Equal(t, o1, got, "the other team's own")
	for _, miss := range []struct{ team, agent, id string }{
		{f.team, "bob", s2.ID}, {f.otherTeam(), "ann", s2.ID}, {f.team, "ann", ids.New("msg")}, {f.team, "ann", b1.ID},
	} {
		_, err := s.GetSuggestion(ctx, miss.team, miss.agent, miss.id)
		refused(t, err, apperr.ENOTFOUND, "")
	}

	list := func(team, agent string) func(paging.Page) ([]suggestions.Suggestion, string, error) {
		return func(p paging.Page) ([]suggestions.Suggestion, string, error) {
			return s.ListSuggestions(ctx, team, agent, p)
		}
	}
	page, next, err := list(f.team, "ann")(paging.Page{Limit: 2})
	require.NoError(t, err)
	assert.Equal(t, []suggestions.Suggestion{s3, s2}, page, "newest first, whole")
	require.NotEmpty(t, next, "a third follows")
	page, next, err = list(f.team, "ann")(paging.Page{Limit: 2, Token: next})
	require.NoError(t, err)
	assert.Equal(t, []suggestions.Suggestion{s1}, page)
	assert.Empty(t, next)
	assert.Equal(t, []string{s3.ID, s2.ID, s1.ID}, f.suggestionIDs(t, f.team, "ann"))
	assert.Equal(t, []string{b1.ID}, f.suggestionIDs(t, f.team, "bob"), "an agent's own")
	assert.Equal(t, []string{s1.ID}, f.suggestionIDs(t, f.otherTeam(), "ann"), "a team's own")
	boundToken(t, list(f.team, "ann"), list(f.team, "bob"))
	boundToken(t, list(f.team, "ann"), list(f.otherTeam(), "ann"))
}

// suggestionsDismissed: a dismissed suggestion is hidden from reads and
// dismissed once, but holds its id (added again: false); a deleted one,
// dismissed or not, is gone (deleted once) and its id free; neither
// reaches another team's or agent's.
func suggestionsDismissed(t *testing.T, f *fixture) {
	ctx := context.Background()
	s := f.Suggestions
	at := time.Now().UTC().Truncate(time.Millisecond)
	s1, s2, s3 := f.suggestion("ann", at), f.suggestion("ann", at.Add(time.Second)), f.suggestion("ann", at.Add(2*time.Second))
	for _, sg := range []suggestions.Suggestion{s1, s2, s3} {
		added, err := s.AddSuggestion(ctx, sg, suggestions.MaxPerAgent)
		require.NoError(t, err)
		require.True(t, added)
	}

	require.NoError(t, s.DismissSuggestion(ctx, f.team, "ann", s2.ID))
	_, err := s.GetSuggestion(ctx, f.team, "ann", s2.ID)
	refused(t, err, apperr.ENOTFOUND, "")
	assert.Equal(t, []string{s3.ID, s1.ID}, f.suggestionIDs(t, f.team, "ann"), "hidden from the list")
	refused(t, s.DismissSuggestion(ctx, f.team, "ann", s2.ID), apperr.ENOTFOUND, "")
	added, err := s.AddSuggestion(ctx, s2, suggestions.MaxPerAgent)
	require.NoError(t, err)
	assert.False(t, added, "a dismissed suggestion is not suggested again")
	for _, miss := range []struct{ team, agent, id string }{{f.team, "ann", ids.New("msg")}, {f.otherTeam(), "ann", s3.ID}, {f.team, "bob", s3.ID}} {
		refused(t, s.DismissSuggestion(ctx, miss.team, miss.agent, miss.id), apperr.ENOTFOUND, "")
	}
	got, err := s.GetSuggestion(ctx, f.team, "ann", s3.ID)
	require.NoError(t, err)
	assert.Equal(t, s3, got, "another team's or agent's dismiss reached nothing")

	// Deleted: gone, once; dismissed ones too; then free to be added.
	require.NoError(t, s.DeleteSuggestion(ctx, f.team, "ann", s3.ID))
	_, err = s.GetSuggestion(ctx, f.team, "ann", s3.ID)
	refused(t, err, apperr.ENOTFOUND, "")
	refused(t, s.DeleteSuggestion(ctx, f.team, "ann", s3.ID), apperr.ENOTFOUND, "")
	refused(t, s.DeleteSuggestion(ctx, f.otherTeam(), "ann", s2.ID), apperr.ENOTFOUND, "")
	refused(t, s.DeleteSuggestion(ctx, f.team, "bob", s1.ID), apperr.ENOTFOUND, "")
	require.NoError(t, s.DeleteSuggestion(ctx, f.team, "ann", s2.ID), "a dismissed one is deleted too")
	assert.Equal(t, []string{s1.ID}, f.suggestionIDs(t, f.team, "ann"))
	added, err = s.AddSuggestion(ctx, s3, suggestions.MaxPerAgent)
	require.NoError(t, err)
	assert.True(t, added, "a deleted suggestion's id is free")
	assert.Equal(t, []string{s3.ID, s1.ID}, f.suggestionIDs(t, f.team, "ann"))
}

// suggestionsExpired: an expired suggestion (its TTL not yet run) is
// absent to every read and write, and its id may be added again.
func suggestionsExpired(t *testing.T, f *fixture) {
	ctx := context.Background()
	s := f.Suggestions
	at := time.Now().UTC().Truncate(time.Millisecond)
	s1 := f.suggestion("ann", at)
	old := f.suggestion("ann", at.Add(-suggestions.Retention-time.Hour))
	for _, sg := range []suggestions.Suggestion{s1, old} {
		added, err := s.AddSuggestion(ctx, sg, suggestions.MaxPerAgent)
		require.NoError(t, err)
		assert.True(t, added)
	}
	_, err := s.GetSuggestion(ctx, f.team, "ann", old.ID)
	refused(t, err, apperr.ENOTFOUND, "")
	assert.Equal(t, []string{s1.ID}, f.suggestionIDs(t, f.team, "ann"), "not listed")
	refused(t, s.DismissSuggestion(ctx, f.team, "ann", old.ID), apperr.ENOTFOUND, "")
	refused(t, s.DeleteSuggestion(ctx, f.team, "ann", old.ID), apperr.ENOTFOUND, "")
	fresh := old
	fresh.CreatedAt, fresh.ExpiresAt, fresh.Content = at, at.Add(suggestions.Retention), "suggested again"
	added, err := s.AddSuggestion(ctx, fresh, suggestions.MaxPerAgent)
	require.NoError(t, err)
	assert.True(t, added, "an expired suggestion's id is free")
	got, err := s.GetSuggestion(ctx, f.team, "ann", old.ID)
	require.NoError(t, err)
	assert.Equal(t, fresh, got)
	assert.Equal(t, []string{old.ID, s1.ID}, f.suggestionIDs(t, f.team, "ann"))
}

// suggestionsCapped: with a limit of 3 an agent keeps 3 live suggestions,
// an expired one taking no place; the add of a fourth pushes out exactly
// the oldest by created_at (a dismissed one holds its place until then),
// in the same write; a limit below 1 is EINVALID.
func suggestionsCapped(t *testing.T, f *fixture) {
	ctx := context.Background()
	s := f.Suggestions
	at := time.Now().UTC().Truncate(time.Millisecond)
	add := func(sg suggestions.Suggestion) {
		t.Helper()
		added, err := s.AddSuggestion(ctx, sg, 3)
		require.NoError(t, err)
		require.True(t, added)
	}
	add(f.suggestion("cat", at.Add(-suggestions.Retention-time.Hour)))
	a1, a2, a3 := f.suggestion("cat", at), f.suggestion("cat", at.Add(time.Second)), f.suggestion("cat", at.Add(2*time.Second))
	add(a1)
	add(a2)
	add(a3)
	assert.Equal(t, []string{a3.ID, a2.ID, a1.ID}, f.suggestionIDs(t, f.team, "cat"), "the limit exactly: an expired one takes no place")

	require.NoError(t, s.DismissSuggestion(ctx, f.team, "cat", a2.ID))
	a4 := f.suggestion("cat", at.Add(3*time.Second))
	add(a4)
	_, err := s.GetSuggestion(ctx, f.team, "cat", a1.ID)
	refused(t, err, apperr.ENOTFOUND, "")
	assert.Equal(t, []string{a4.ID, a3.ID}, f.suggestionIDs(t, f.team, "cat"), "the oldest pushed out; the dismissed one hidden")
	added, err := s.AddSuggestion(ctx, a2, 3)
	require.NoError(t, err)
	assert.False(t, added, "the dismissed one still holds its place")

	a5 := f.suggestion("cat", at.Add(4*time.Second))
	add(a5)
	assert.Equal(t, []string{a5.ID, a4.ID, a3.ID}, f.suggestionIDs(t, f.team, "cat"))
	refused(t, s.DismissSuggestion(ctx, f.team, "cat", a2.ID), apperr.ENOTFOUND, "")
	added, err = s.AddSuggestion(ctx, a1, 3)
	require.NoError(t, err)
	assert.True(t, added, "a pushed-out id is free")
	assert.Equal(t, []string{a5.ID, a4.ID, a1.ID}, f.suggestionIDs(t, f.team, "cat"), "a3, the oldest kept, pushed out: the one added is kept whatever its age")

	// The oldest is by created_at, not by id: a6's id is the newest.
	a6 := f.suggestion("cat", at.Add(-time.Hour))
	add(a6)
	assert.Equal(t, []string{a6.ID, a5.ID, a4.ID}, f.suggestionIDs(t, f.team, "cat"), "a1 (the oldest created then) pushed out")
	a7 := f.suggestion("cat", at.Add(5*time.Second))
	add(a7)
	assert.Equal(t, []string{a7.ID, a5.ID, a4.ID}, f.suggestionIDs(t, f.team, "cat"), "a6, created first, pushed out before a4")

	_, err = s.AddSuggestion(ctx, f.suggestion("cat", at), 0)
	refused(t, err, apperr.EINVALID, "")
	assert.Len(t, f.suggestionIDs(t, f.team, "cat"), 3, "a refused add writes nothing")
}

// suggestionsConcurrent: 20 adds of distinct suggestions for one agent
// race with a limit of 5; each is stored (a round lost to another add is
// ECONFLICT, which its caller retries), and exactly 5 are kept.
func suggestionsConcurrent(t *testing.T, f *fixture) {
	ctx := context.Background()
	at := time.Now().UTC().Truncate(time.Millisecond)
	var wg sync.WaitGroup
	var mu sync.Mutex
	added := 0
	for i := range 20 {
		sg := f.suggestion("bob", at.Add(time.Duration(i)*time.Millisecond))
		sg.Content = fmt.Sprintf("race %02d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := f.Suggestions.AddSuggestion(ctx, sg, 5)
			for apperr.Is(err, apperr.ECONFLICT) {
				ok, err = f.Suggestions.AddSuggestion(ctx, sg, 5)
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Errorf("add %d: %v", i, err)
			case ok:
				added++
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 20, added, "each added once")
	assert.Len(t, f.suggestionIDs(t, f.team, "bob"), 5, "exactly the limit kept")
	page, _, err := f.Suggestions.ListSuggestions(ctx, f.team, "bob", paging.Page{Limit: 100})
	require.NoError(t, err)
	assert.Len(t, page, 5)
}
