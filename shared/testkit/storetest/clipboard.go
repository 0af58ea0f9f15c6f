package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
)

// clipboardScopes: a value is read back by its team, scope and key only;
// a store replaces it; it is gone once expired (before the database's TTL
// deletes it). Times are compared to the second: the adapter keeps
// expires_at as epoch seconds (the TTL attribute).
func clipboardScopes(t *testing.T, f *fixture) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	plan, conv := toolpacks.ScopeTask("task_plan1"), toolpacks.ScopeConversation("conv_1")
	put := func(scope, key, value string, expires time.Time) {
		t.Helper()
		require.NoError(t, f.Clipboard.PutClip(ctx, f.team, toolpacks.Clip{Scope: scope, Key: key, Value: value, StoredBy: "ann", StoredAt: now, ExpiresAt: expires}))
	}
	put(plan, "notes", "first", now.Add(time.Hour))
	put(conv, "notes", "the conversation's", now.Add(time.Hour))
	got, err := f.Clipboard.GetClip(ctx, f.team, plan, "notes", now)
	require.NoError(t, err)
	assert.Equal(t, "first", got.Value)
	assert.Equal(t, "ann", got.StoredBy)
	assert.Equal(t, plan, got.Scope)
	assert.WithinDuration(t, now.Add(time.Hour), got.ExpiresAt, time.Second)

	put(plan, "notes", "second", now.Add(time.Hour))
	got, err = f.Clipboard.GetClip(ctx, f.team, plan, "notes", now)
	require.NoError(t, err)
	assert.Equal(t, "second", got.Value, "a store replaces the key's value")
	got, err = f.Clipboard.GetClip(ctx, f.team, conv, "notes", now)
	require.NoError(t, err)
	assert.Equal(t, "the conversation's", got.Value, "scopes do not share keys")

	for _, miss := range []struct{ team, scope, key string }{
		{f.team, toolpacks.ScopeTask("task_other"), "notes"},
		{f.team, plan, "other"},
		{"team_someoneelse", plan, "notes"},
	} {
		_, err := f.Clipboard.GetClip(ctx, miss.team, miss.scope, miss.key, now)
		assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "%v: %v", miss, err)
	}

	put(plan, "old", "expiring", now.Add(time.Minute))
	_, err = f.Clipboard.GetClip(ctx, f.team, plan, "old", now.Add(59*time.Second))
	require.NoError(t, err)
	_, err = f.Clipboard.GetClip(ctx, f.team, plan, "old", now.Add(time.Minute))
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "expired: %v", err)
}
