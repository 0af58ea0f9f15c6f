package teams_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/team/teams"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/teamfake"
)

var now = time.Date(2030, 1, 2, 9, 0, 0, 0, time.UTC)

func newService(tb testing.TB) (*teams.Service, *teamfake.Teams) {
	tb.Helper()
	store := teamfake.New(nil)
	svc := teams.NewService(store)
	svc.Now = func() time.Time { return now }
	return svc, store
}

// mustTeam creates a team and returns it with its first key.
func mustTeam(tb testing.TB, svc *teams.Service, name string) (teams.Team, teams.IssuedKey) {
	tb.Helper()
	t, k, err := svc.CreateTeam(context.Background(), name)
	require.NoError(tb, err)
	return t, k
}

func requireCode(tb testing.TB, err error, code string) *apperr.Error {
	tb.Helper()
	require.Error(tb, err)
	ae, ok := apperr.As(err)
	require.True(tb, ok, "%v is not an *apperr.Error", err)
	require.Equal(tb, code, ae.Code, ae.Error())
	return ae
}

func TestCreateTeamIssuesAKeyThatAuthenticates(t *testing.T) {
	svc, store := newService(t)
	ctx := context.Background()
	team, key := mustTeam(t, svc, "  Platform  ")

	assert.Equal(t, "Platform", team.Name)
	assert.True(t, strings.HasPrefix(team.ID, "team_"))
	assert.Equal(t, now, team.CreatedAt)
	assert.True(t, strings.HasPrefix(key.Secret, teams.KeyPrefix))
	assert.Equal(t, key.Secret[:10], key.Prefix)
	assert.Equal(t, teams.KeyActive, key.Status)
	assert.Equal(t, team.ID, key.TeamID)
	assert.Equal(t, "initial", key.Name)

	got, err := store.GetTeam(ctx, team.ID)
	require.NoError(t, err)
	assert.Equal(t, team, got)

	k, err := svc.Authenticate(ctx, key.Secret)
	require.NoError(t, err)
	assert.Equal(t, key.APIKey, k)
	stored, err := store.APIKeyByHash(ctx, teams.Hash(key.Secret))
	require.NoError(t, err)
	assert.Equal(t, key.ID, stored.ID, "only the hash of the secret is the key's address")
}

func TestCreateTeamValidatesTheName(t *testing.T) {
	svc, _ := newService(t)
	for _, name := range []string{"", "   ", strings.Repeat("x", 81)} {
		_, _, err := svc.CreateTeam(context.Background(), name)
		ae := requireCode(t, err, apperr.EINVALID)
		assert.Equal(t, "name", ae.Field)
	}
	_, _, err := svc.CreateTeam(context.Background(), strings.Repeat("é", 80))
	assert.NoError(t, err, "the limit counts characters, not bytes")
}

func TestIssueKeyAddsAKeyToAnExistingTeam(t *testing.T) {
	svc, _ := newService(t)
	ctx := context.Background()
	team, first := mustTeam(t, svc, "Platform")

	second, err := svc.IssueKey(ctx, team.ID, teams.KeySpec{Name: "ci"})
	require.NoError(t, err)
	assert.NotEqual(t, first.Secret, second.Secret)
	_, err = svc.Authenticate(ctx, second.Secret)
	require.NoError(t, err)
	keys, err := svc.Store.ListAPIKeys(ctx, team.ID)
	require.NoError(t, err)
	require.Len(t, keys, 2)
	assert.Equal(t, []string{second.ID, first.ID}, []string{keys[0].ID, keys[1].ID}, "newest first")

	_, err = svc.IssueKey(ctx, "team_missing", teams.KeySpec{Name: "ci"})
	requireCode(t, err, apperr.ENOTFOUND)
	ae := requireCode(t, func() error { _, err := svc.IssueKey(ctx, team.ID, teams.KeySpec{Name: " "}); return err }(), apperr.EINVALID)
	assert.Equal(t, "name", ae.Field)
}

func TestRotateKeyReplacesTheKeyAtOnce(t *testing.T) {
	svc, _ := newService(t)
	ctx := context.Background()
	team, old := mustTeam(t, svc, "Platform")

	next, err := svc.RotateKey(ctx, team.ID, old.ID)
	require.NoError(t, err)
	assert.Equal(t, old.Name, next.Name, "the new key keeps the old one's name")
	assert.NotEqual(t, old.ID, next.ID)

	_, err = svc.Authenticate(ctx, old.Secret)
	requireCode(t, err, apperr.EUNAUTHORIZED)
	_, err = svc.Authenticate(ctx, next.Secret)
	require.NoError(t, err)

	keys, err := svc.Store.ListAPIKeys(ctx, team.ID)
	require.NoError(t, err)
	require.Len(t, keys, 2)
	assert.Equal(t, teams.KeyActive, keys[0].Status)
	assert.Equal(t, teams.KeyRevoked, keys[1].Status)
	require.NotNil(t, keys[1].RevokedAt)
	assert.Equal(t, now, *keys[1].RevokedAt)

	_, err = svc.RotateKey(ctx, team.ID, old.ID)
	ae := requireCode(t, err, apperr.ECONFLICT)
	assert.Equal(t, teams.KeyRevoked, ae.Details["status"])
	_, err = svc.RotateKey(ctx, team.ID, "key_missing")
	requireCode(t, err, apperr.ENOTFOUND)
}

func TestRevokeKey(t *testing.T) {
	svc, _ := newService(t)
	ctx := context.Background()
	team, key := mustTeam(t, svc, "Platform")
	other, _ := mustTeam(t, svc, "Other")

	_, err := svc.RevokeKey(ctx, other.ID, key.ID)
	requireCode(t, err, apperr.ENOTFOUND) // another team cannot touch the key
	_, err = svc.Authenticate(ctx, key.Secret)
	require.NoError(t, err)

	k, err := svc.RevokeKey(ctx, team.ID, key.ID)
	require.NoError(t, err)
	assert.Equal(t, teams.KeyRevoked, k.Status)
	require.NotNil(t, k.RevokedAt)
	assert.Equal(t, now, *k.RevokedAt)
	_, err = svc.Authenticate(ctx, key.Secret)
	requireCode(t, err, apperr.EUNAUTHORIZED)

	_, err = svc.RevokeKey(ctx, team.ID, key.ID)
	requireCode(t, err, apperr.ECONFLICT)
}

func TestAuthenticateTellsNothingAboutWhyAKeyFailed(t *testing.T) {
	svc, _ := newService(t)
	ctx := context.Background()
	team, key := mustTeam(t, svc, "Platform")
	revoked, err := svc.IssueKey(ctx, team.ID, teams.KeySpec{Name: "old"})
	require.NoError(t, err)
	_, err = svc.RevokeKey(ctx, team.ID, revoked.ID)
	require.NoError(t, err)

	for name, secret := range map[string]string{
		"empty":          "",
		"no prefix":      strings.TrimPrefix(key.Secret, teams.KeyPrefix),
		"too long":       key.Secret + strings.Repeat("x", 128),
		"unknown":        teams.KeyPrefix + "unknown000000000000000000000000000",
		"revoked":        revoked.Secret,
		"wrong case":     strings.ToUpper(key.Secret),
		"trailing space": key.Secret + " ",
	} {
		_, err := svc.Authenticate(ctx, secret)
		ae := requireCode(t, err, apperr.EUNAUTHORIZED)
		assert.Equal(t, "invalid API key", ae.Message, name)
	}
}

func TestAKeyIssuedToActAsUsersKeepsItThroughRotation(t *testing.T) {
	svc, _ := newService(t)
	ctx := context.Background()
	team, first := mustTeam(t, svc, "Platform")
	assert.False(t, first.ActAsUsers, "false by default")

	server, err := svc.IssueKey(ctx, team.ID, teams.KeySpec{Name: "backend", ActAsUsers: true})
	require.NoError(t, err)
	assert.True(t, server.ActAsUsers)
	k, err := svc.Authenticate(ctx, server.Secret)
	require.NoError(t, err)
	assert.True(t, k.ActAsUsers, "the authorizer reads it from the stored key")

	rotated, err := svc.RotateKey(ctx, team.ID, server.ID)
	require.NoError(t, err)
	assert.True(t, rotated.ActAsUsers)
	keys, err := svc.Store.ListAPIKeys(ctx, team.ID)
	require.NoError(t, err)
	shown := map[string]bool{}
	for _, k := range keys {
		shown[k.ID] = k.ActAsUsers
	}
	assert.Equal(t, map[string]bool{first.ID: false, server.ID: true, rotated.ID: true}, shown)
}
