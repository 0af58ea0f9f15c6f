package toolpacks_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
	"github.com/conclave-ai/conclave/shared/tools/catalog"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
)

// Every pack names tools of the catalog, and the five built-in packs are
// the issue's.
func TestPacksNameCatalogTools(t *testing.T) {
	assert.Equal(t, []string{"collaboration", "memory", "board", "reporting", "bridging"}, toolpacks.Names())
	for _, p := range toolpacks.Builtin {
		assert.NotEmpty(t, p.Description, p.Name)
		require.NotEmpty(t, p.Tools, p.Name)
		for _, name := range p.Tools {
			tool, ok := catalog.Get(name)
			require.True(t, ok, "%s: %s is a catalog tool", p.Name, name)
			assert.NotEqual(t, catalog.InChat, tool.Where, "%s: %s can be given in a task", p.Name, name)
		}
	}
	bridging, err := toolpacks.Get("bridging")
	require.NoError(t, err)
	assert.Equal(t, []string{"summarize_text", "extract_structured_data", "compare_texts", "clipboard_store", "clipboard_get"}, bridging.Tools)
	bridging.Tools[0] = "changed"
	again, _ := toolpacks.Get("bridging")
	assert.Equal(t, "summarize_text", again.Tools[0], "Get returns a copy")
	_, err = toolpacks.Get("capture")
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), err)
}

func TestValidateNamesTheField(t *testing.T) {
	assert.NoError(t, toolpacks.Validate("tool_packs", nil))
	assert.NoError(t, toolpacks.Validate("tool_packs", toolpacks.Names()))
	for _, bad := range [][]string{{"capture"}, {"memory", "memory"}, {""}, {"memory", "board", "bridging", "reporting", "collaboration", "memory"}} {
		err := toolpacks.Validate("tool_packs", bad)
		ae, ok := apperr.As(err)
		require.True(t, ok, "%v", bad)
		assert.Equal(t, apperr.EINVALID, ae.Code)
		assert.Equal(t, "tool_packs", ae.Field, "%v", bad)
	}
}

func TestToolsIsTheUnionInPackOrder(t *testing.T) {
	got := toolpacks.Tools([]string{"board", "collaboration", "nope"})
	assert.Equal(t, []string{"next_task", "check_task_status", "delegate_task"}, got[:3])
	assert.Equal(t, 1, strings.Count(strings.Join(got, ","), "delegate_task"), "a tool of two packs is given once")
	assert.Empty(t, toolpacks.Tools(nil))
}

// The clipboard: keys validated, values bounded, a value gone a day after
// its store.
func TestClipboardRules(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	store := memstore.New()
	c := &toolpacks.Clipboard{Store: store, Now: func() time.Time { return now }}
	ctx := context.Background()
	scope := toolpacks.ScopeTask("task_root")
	got, err := c.Put(ctx, "team_a", scope, "draft.v1", "hello", "kyra")
	require.NoError(t, err)
	assert.Equal(t, now.Add(toolpacks.ClipTTL), got.ExpiresAt)
	read, err := c.Get(ctx, "team_a", scope, "draft.v1")
	require.NoError(t, err)
	assert.Equal(t, "hello", read.Value)
	assert.Equal(t, "kyra", read.StoredBy)

	for _, key := range []string{"", "Upper", "has space", "-lead", strings.Repeat("k", 65), "a#b"} {
		_, err := c.Put(ctx, "team_a", scope, key, "v", "kyra")
		assert.Equal(t, "key", field(err), "%q", key)
		_, err = c.Get(ctx, "team_a", scope, key)
		assert.Equal(t, "key", field(err), "%q", key)
	}
	_, err = c.Put(ctx, "team_a", scope, "big", strings.Repeat("x", toolpacks.MaxClipValue+1), "kyra")
	assert.Equal(t, "value", field(err))
	_, err = c.Put(ctx, "team_a", scope, "max", strings.Repeat("x", toolpacks.MaxClipValue), "kyra")
	assert.NoError(t, err, "the limit itself fits")

	_, err = c.Get(ctx, "team_b", scope, "draft.v1")
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "another team's clipboard: %v", err)
	_, err = c.Get(ctx, "team_a", toolpacks.ScopeConversation("conv_1"), "draft.v1")
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "another scope: %v", err)

	now = now.Add(toolpacks.ClipTTL - time.Second)
	_, err = c.Get(ctx, "team_a", scope, "draft.v1")
	require.NoError(t, err, "still there a second before its day is over")
	now = now.Add(time.Second)
	_, err = c.Get(ctx, "team_a", scope, "draft.v1")
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "expired: %v", err)
}

func field(err error) string {
	if ae, ok := apperr.As(err); ok && ae.Code == apperr.EINVALID {
		return ae.Field
	}
	return ""
}
