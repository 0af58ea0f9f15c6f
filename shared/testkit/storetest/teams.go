package storetest

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/team/teams"
)

// apiKey is a new active key of team's and the hash of its secret.
func apiKey(team, name string) (teams.APIKey, string) {
	return teams.APIKey{ID: ids.New("key"), TeamID: team, Name: name, Prefix: "ck_" + name, Status: teams.KeyActive,
		CreatedAt: time.Now().UTC().Truncate(time.Millisecond)}, teams.Hash(ids.New("secret"))
}

func keyIDs(list []teams.APIKey) []string {
	out := []string{}
	for _, k := range list {
		out = append(out, k.ID)
	}
	return out
}

// keyLifecycle: a key is added only to a team that exists and under a
// hash no key has; it is found by its hash, whole; a rotation revokes the
// old key and adds the new one at once, and is refused whole when the old
// key is revoked, another team's, or the new hash taken; keys are listed
// newest first, act_as_users kept.
func keyLifecycle(t *testing.T, f *fixture) {
	ctx := context.Background()
	initial, err := f.Teams.ListAPIKeys(ctx, f.team)
	require.NoError(t, err)
	require.Len(t, initial, 1)
	k, hash := apiKey(f.team, "second")
	require.NoError(t, f.Teams.PutAPIKey(ctx, k, hash))
	stray, strayHash := apiKey("team_missing", "stray")
	refused(t, f.Teams.PutAPIKey(ctx, stray, strayHash), apperr.ENOTFOUND, "")
	dup, _ := apiKey(f.team, "dup")
	refused(t, f.Teams.PutAPIKey(ctx, dup, hash), apperr.ECONFLICT, "")
	got, err := f.Teams.APIKeyByHash(ctx, hash)
	require.NoError(t, err)
	assert.Equal(t, k.ID, got.ID, "the hash's first key")
	assert.Equal(t, []string{f.team, "second", "ck_second", teams.KeyActive}, []string{got.TeamID, got.Name, got.Prefix, got.Status})
	assert.True(t, got.CreatedAt.Equal(k.CreatedAt))
	assert.Nil(t, got.RevokedAt)
	assert.False(t, got.ActAsUsers)
	for _, h := range []string{strayHash, teams.Hash("unknown")} {
		_, err := f.Teams.APIKeyByHash(ctx, h)
		refused(t, err, apperr.ENOTFOUND, "")
	}

	at := time.Now().UTC().Truncate(time.Millisecond)
	k2, hash2 := apiKey(f.team, "rotated")
	k2.ActAsUsers = true
	require.NoError(t, f.Teams.RotateAPIKey(ctx, f.team, k.ID, k2, hash2, at))
	old, err := f.Teams.APIKeyByHash(ctx, hash)
	require.NoError(t, err)
	assert.Equal(t, teams.KeyRevoked, old.Status)
	require.NotNil(t, old.RevokedAt)
	assert.True(t, old.RevokedAt.Equal(at))
	fresh, err := f.Teams.APIKeyByHash(ctx, hash2)
	require.NoError(t, err)
	assert.Equal(t, teams.KeyActive, fresh.Status)
	assert.True(t, fresh.ActAsUsers, "act_as_users stored")

	k3, hash3 := apiKey(f.team, "third")
	refused(t, f.Teams.RotateAPIKey(ctx, f.team, k.ID, k3, hash3, at), apperr.ECONFLICT, "")
	refused(t, f.Teams.RotateAPIKey(ctx, f.team, k2.ID, k3, hash, at), apperr.ECONFLICT, "")
	refused(t, f.Teams.RotateAPIKey(ctx, f.otherTeam(), k2.ID, k3, hash3, at), apperr.ENOTFOUND, "")
	_, err = f.Teams.APIKeyByHash(ctx, hash3)
	refused(t, err, apperr.ENOTFOUND, "")
	still, err := f.Teams.APIKeyByHash(ctx, hash2)
	require.NoError(t, err)
	assert.Equal(t, teams.KeyActive, still.Status, "a refused rotation revokes nothing")

	list, err := f.Teams.ListAPIKeys(ctx, f.team)
	require.NoError(t, err)
	assert.Equal(t, []string{k2.ID, k.ID, initial[0].ID}, keyIDs(list), "newest first")
	assert.Equal(t, []bool{true, false, false}, []bool{list[0].ActAsUsers, list[1].ActAsUsers, list[2].ActAsUsers})
	theirs, err := f.Teams.ListAPIKeys(ctx, f.otherTeam())
	require.NoError(t, err)
	assert.Empty(t, theirs)
}

// a2aIDGiven: a team without an A2A id is given one once, by the store
// itself (the first writer wins and every later one reads it back); an
// unknown team has none to give.
func a2aIDGiven(t *testing.T, f *fixture) {
	ctx := context.Background()
	legacy := teams.Team{ID: ids.New("team"), Name: "legacy", CreatedAt: time.Now().UTC()}
	k, hash := apiKey(legacy.ID, "k")
	require.NoError(t, f.Teams.CreateTeam(ctx, legacy, k, hash))
	first, second := teams.NewA2AID(), teams.NewA2AID()
	got, err := f.Teams.SetA2AID(ctx, legacy.ID, first)
	require.NoError(t, err)
	assert.Equal(t, first, got)
	got, err = f.Teams.SetA2AID(ctx, legacy.ID, second)
	require.NoError(t, err)
	assert.Equal(t, first, got, "given once")
	tm, err := f.Teams.GetTeam(ctx, legacy.ID)
	require.NoError(t, err)
	assert.Equal(t, first, tm.A2AID)
	_, err = f.Teams.TeamByA2AID(ctx, second)
	refused(t, err, apperr.ENOTFOUND, "")
	_, err = f.Teams.SetA2AID(ctx, "team_missing_"+legacy.ID, second)
	refused(t, err, apperr.ENOTFOUND, "")
}

// requestCounts: a team's requests are counted per second, each count
// once however many race; another second or team counts from one.
func requestCounts(t *testing.T, f *fixture) {
	ctx := context.Background()
	second := time.Now().Unix() + 3600 // a second nothing else counts in
	raceCounts(t, func() (int, error) { return f.Requests.CountRequest(ctx, f.team, second) })
	for _, c := range []struct {
		team   string
		second int64
	}{{f.team, second + 1}, {f.otherTeam(), second}} {
		one, err := f.Requests.CountRequest(ctx, c.team, c.second)
		require.NoError(t, err)
		assert.Equal(t, 1, one, "%s at %d counts on its own", c.team, c.second)
	}
	userRequestCounts(t, f, second)
}

// userRequestCounts: one person's requests are counted per second apart
// from the team's and from another person's, each count once however many
// race.
func userRequestCounts(t *testing.T, f *fixture, second int64) {
	ctx := context.Background()
	raceCounts(t, func() (int, error) { return f.Requests.CountUserRequest(ctx, f.team, "auth0|alice", second) })
	for _, c := range []struct{ team, user string }{{f.team, "bob"}, {f.otherTeam(), "auth0|alice"}} {
		one, err := f.Requests.CountUserRequest(ctx, c.team, c.user, second)
		require.NoError(t, err)
		assert.Equal(t, 1, one, "%s of %s counts on its own", c.user, c.team)
	}
	team, err := f.Requests.CountRequest(ctx, f.team, second+2)
	require.NoError(t, err)
	assert.Equal(t, 1, team, "the team's count is not a person's")
}

// raceCounts runs 12 counts at once: each answers one of 1 … 12, once.
func raceCounts(t *testing.T, count func() (int, error)) {
	t.Helper()
	const n = 12
	got := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c, err := count()
			assert.NoError(t, err)
			got[i] = c
		})
	}
	wg.Wait()
	sort.Ints(got)
	want := make([]int, n)
	for i := range want {
		want[i] = i + 1
	}
	assert.Equal(t, want, got, "1 … n, each once")
}
