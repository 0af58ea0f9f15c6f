package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/team/identity"
)

// issuerOf is an issuer of f's own: the pairs are global, so each test
// (and each run on a table that outlives it) names issuers no other does.
func (f *fixture) issuerOf(name string) string {
	return "https://" + name + ".idp.example.com/" + f.team
}

func provider(teamID, issuer string, at time.Time, audiences ...string) identity.Provider {
	return identity.Provider{TeamID: teamID, Issuer: issuer, Audiences: audiences, UserClaim: "email",
		AdminClaim: "groups", AdminValue: "admins", UpdatedAt: at}
}

// sameProvider asserts got is want, read back whole.
func sameProvider(t *testing.T, want, got identity.Provider, msgAndArgs ...any) {
	t.Helper()
	assert.True(t, want.UpdatedAt.Equal(got.UpdatedAt), "updated_at %v, want %v", got.UpdatedAt, want.UpdatedAt)
	got.UpdatedAt = want.UpdatedAt
	assert.Equal(t, want, got, msgAndArgs...)
}

// pairTaken asserts err is the ECONFLICT of a pair another team holds.
func pairTaken(t *testing.T, err error) {
	t.Helper()
	e, ok := apperr.As(err)
	require.True(t, ok, "a taken pair is refused: %v", err)
	assert.Equal(t, apperr.ECONFLICT, e.Code)
	assert.Equal(t, identity.ReasonPairTaken, e.Reason)
}

// identityProviders: a provider reads back whole by its team and by each
// of its pairs; a team without one, another team and a pair no team holds
// read ENOTFOUND; a caller changing what it read changes nothing stored.
func identityProviders(t *testing.T, f *fixture) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	iss := f.issuerOf("read")
	_, err := f.Identity.GetProvider(ctx, f.team)
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "none until put: %v", err)

	p := provider(f.team, iss, now, "web", "cli")
	require.NoError(t, f.Identity.PutProvider(ctx, p))
	got, err := f.Identity.GetProvider(ctx, f.team)
	require.NoError(t, err)
	sameProvider(t, p, got)
	for _, aud := range p.Audiences {
		got, err := f.Identity.ProviderByPair(ctx, iss, aud)
		require.NoError(t, err, aud)
		sameProvider(t, p, got, "the pair %s names its team and the provider whole", aud)
	}

	got.Audiences[0] = "changed"
	got, err = f.Identity.GetProvider(ctx, f.team)
	require.NoError(t, err)
	assert.Equal(t, []string{"web", "cli"}, got.Audiences, "a value read is a copy")

	for _, pr := range [][2]string{{iss, "mobile"}, {f.issuerOf("other"), "web"}, {iss + "/", "web"}} {
		_, err := f.Identity.ProviderByPair(ctx, pr[0], pr[1])
		assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "no team holds %v: %v", pr, err)
	}
	_, err = f.Identity.GetProvider(ctx, "team_other_"+f.team)
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "another team has none: %v", err)

	p.UserClaim, p.AdminClaim, p.AdminValue, p.UpdatedAt = "sub", "", "", now.Add(time.Second)
	require.NoError(t, f.Identity.PutProvider(ctx, p), "the same pairs again: an idempotent replace")
	got, err = f.Identity.ProviderByPair(ctx, iss, "cli")
	require.NoError(t, err)
	sameProvider(t, p, got, "a pair kept carries the replacement")
}

// identityPairTaken: an (issuer, audience) pair belongs to one team;
// another team's registration naming it is refused (IssuerAudienceTaken)
// and writes nothing, its earlier provider included; the same issuer with
// other audiences is another pair.
func identityPairTaken(t *testing.T, f *fixture) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	iss := f.issuerOf("taken")
	other := "team_other_" + f.team
	a := provider(f.team, iss, now, "a1", "a2")
	require.NoError(t, f.Identity.PutProvider(ctx, a))

	pairTaken(t, f.Identity.PutProvider(ctx, provider(other, iss, now, "b1", "a2")))
	_, err := f.Identity.GetProvider(ctx, other)
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "a refused registration stores no provider: %v", err)
	_, err = f.Identity.ProviderByPair(ctx, iss, "b1")
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "nor any of its pairs: %v", err)

	b := provider(other, iss, now, "b1")
	require.NoError(t, f.Identity.PutProvider(ctx, b), "the same issuer with another audience is another pair")
	pairTaken(t, f.Identity.PutProvider(ctx, provider(other, iss, now.Add(time.Second), "b1", "b2", "a1")))
	got, err := f.Identity.GetProvider(ctx, other)
	require.NoError(t, err)
	sameProvider(t, b, got, "a refused replace leaves the team's provider")
	_, err = f.Identity.ProviderByPair(ctx, iss, "b2")
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "and takes none of its pairs: %v", err)

	for pr, want := range map[string]identity.Provider{"a1": a, "a2": a, "b1": b} {
		got, err := f.Identity.ProviderByPair(ctx, iss, pr)
		require.NoError(t, err, pr)
		sameProvider(t, want, got, "the pair %s stays its team's", pr)
	}
	got, err = f.Identity.GetProvider(ctx, f.team)
	require.NoError(t, err)
	sameProvider(t, a, got, "the holder's provider is untouched")
}

// identityReplace: a replace releases the pairs it no longer names (its
// old issuer's too), which another team may then take, and keeps the rest.
func identityReplace(t *testing.T, f *fixture) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	iss, iss2 := f.issuerOf("replace"), f.issuerOf("moved")
	other := "team_other_" + f.team
	require.NoError(t, f.Identity.PutProvider(ctx, provider(f.team, iss, now, "a1", "a2")))
	p := provider(f.team, iss, now.Add(time.Second), "a2", "a3")
	p.UserClaim = "preferred_username"
	require.NoError(t, f.Identity.PutProvider(ctx, p))
	_, err := f.Identity.ProviderByPair(ctx, iss, "a1")
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "a dropped audience's pair is released: %v", err)
	for _, aud := range []string{"a2", "a3"} {
		got, err := f.Identity.ProviderByPair(ctx, iss, aud)
		require.NoError(t, err, aud)
		sameProvider(t, p, got)
	}
	b := provider(other, iss, now, "a1")
	require.NoError(t, f.Identity.PutProvider(ctx, b), "another team takes a released pair")
	got, err := f.Identity.ProviderByPair(ctx, iss, "a1")
	require.NoError(t, err)
	assert.Equal(t, other, got.TeamID)
	pairTaken(t, f.Identity.PutProvider(ctx, provider(f.team, iss, now.Add(2*time.Second), "a1", "a2")))

	moved := provider(f.team, iss2, now.Add(3*time.Second), "a2")
	require.NoError(t, f.Identity.PutProvider(ctx, moved))
	for _, aud := range []string{"a2", "a3"} {
		_, err := f.Identity.ProviderByPair(ctx, iss, aud)
		assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "a new issuer releases the old one's pairs (%s): %v", aud, err)
	}
	got, err = f.Identity.ProviderByPair(ctx, iss2, "a2")
	require.NoError(t, err)
	sameProvider(t, moved, got)
	got, err = f.Identity.GetProvider(ctx, other)
	require.NoError(t, err)
	sameProvider(t, b, got, "another team's provider is untouched")
}

// identityRace: racing replaces by one team are each conditioned on the
// version they read: a stale one is refused (ECONFLICT, not the taken
// pair's), so the pairs the team holds afterwards are exactly its
// provider's, none of a refused or overtaken replace left behind.
func identityRace(t *testing.T, f *fixture) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	iss := f.issuerOf("race")
	require.NoError(t, f.Identity.PutProvider(ctx, provider(f.team, iss, now, "base")))
	const n = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	made := 0
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := f.Identity.PutProvider(ctx, provider(f.team, iss, now.Add(time.Duration(i+1)*time.Millisecond), fmt.Sprintf("r%d", i)))
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				made++
				return
			}
			e, ok := apperr.As(err)
			if !ok || e.Code != apperr.ECONFLICT || e.Reason == identity.ReasonPairTaken {
				t.Errorf("replace %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	assert.GreaterOrEqual(t, made, 1)
	final, err := f.Identity.GetProvider(ctx, f.team)
	require.NoError(t, err)
	require.Len(t, final.Audiences, 1)
	for i := range n {
		aud := fmt.Sprintf("r%d", i)
		got, err := f.Identity.ProviderByPair(ctx, iss, aud)
		if slices.Contains(final.Audiences, aud) {
			require.NoError(t, err, aud)
			sameProvider(t, final, got)
		} else {
			assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "the pair %s of a replace overtaken is not held: %v", aud, err)
		}
	}
	_, err = f.Identity.ProviderByPair(ctx, iss, "base")
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "the replaced pair is released: %v", err)
}

// identityPairRace: teams racing to register one pair: exactly one holds
// it, the others are refused IssuerAudienceTaken (a try lost to a
// concurrent transaction is tried again, as a client would).
func identityPairRace(t *testing.T, f *fixture) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	iss := f.issuerOf("pairrace")
	const n = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	var made []string
	taken := 0
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			team := fmt.Sprintf("team_race%d_%s", i, f.team)
			put := func() error {
				return f.Identity.PutProvider(ctx, provider(team, iss, now, "shared", fmt.Sprintf("own%d", i)))
			}
			err := put()
			for e, ok := apperr.As(err); ok && e.Code == apperr.ECONFLICT && e.Reason != identity.ReasonPairTaken; e, ok = apperr.As(err) {
				err = put()
			}
			mu.Lock()
			defer mu.Unlock()
			switch e, ok := apperr.As(err); {
			case err == nil:
				made = append(made, team)
			case ok && e.Reason == identity.ReasonPairTaken:
				taken++
			default:
				t.Errorf("team %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	require.Len(t, made, 1)
	assert.Equal(t, n-1, taken)
	got, err := f.Identity.ProviderByPair(ctx, iss, "shared")
	require.NoError(t, err)
	assert.Equal(t, made[0], got.TeamID)
	for i := range n {
		team := fmt.Sprintf("team_race%d_%s", i, f.team)
		_, err := f.Identity.ProviderByPair(ctx, iss, fmt.Sprintf("own%d", i))
		_, gerr := f.Identity.GetProvider(ctx, team)
		if team == made[0] {
			assert.NoError(t, err)
			assert.NoError(t, gerr)
		} else {
			assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "a refused team holds none of its pairs: %v", err)
			assert.True(t, apperr.Is(gerr, apperr.ENOTFOUND), "nor a provider: %v", gerr)
		}
	}
}
