package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
)

func mcpPack(name string, now time.Time) toolpacks.MCPPack {
	return toolpacks.MCPPack{Name: name, Description: "d " + name, URL: "https://mcp.example.com/" + name,
		CredentialHeader: "Authorization", HasCredential: true, SecretID: "conclave/t/team/" + name,
		Tools: []toolpacks.MCPTool{{Name: "lookup.order", ModelName: toolpacks.ModelToolName(name, "lookup.order"), Description: "Look up an order",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`)}},
		ListedAt: now, CreatedAt: now, UpdatedAt: now, UpdatedBy: "key_1"}
}

// mcpPacks: a pack reads back whole (its tools' schemas byte for
// byte), a name is created once, a replace needs the pack, another team
// sees none of it, and a delete frees its place under the cap.
func mcpPacks(t *testing.T, f *fixture) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	a := mcpPack("crm", now)
	require.NoError(t, f.MCPPacks.CreateMCPPack(ctx, f.team, a))
	got, err := f.MCPPacks.GetMCPPack(ctx, f.team, "crm")
	require.NoError(t, err)
	assert.Equal(t, a.URL, got.URL)
	assert.Equal(t, a.SecretID, got.SecretID)
	assert.True(t, got.HasCredential)
	require.Len(t, got.Tools, 1)
	assert.JSONEq(t, string(a.Tools[0].InputSchema), string(got.Tools[0].InputSchema))
	assert.Equal(t, "crm__lookup_order_", got.Tools[0].ModelName[:len("crm__lookup_order_")])
	assert.True(t, got.CreatedAt.Equal(now), "%v", got.CreatedAt)

	err = f.MCPPacks.CreateMCPPack(ctx, f.team, a)
	assert.True(t, apperr.Is(err, apperr.ECONFLICT), "a name is created once: %v", err)
	a.URL = "https://mcp.example.com/v2"
	require.NoError(t, f.MCPPacks.ReplaceMCPPack(ctx, f.team, a))
	got, err = f.MCPPacks.GetMCPPack(ctx, f.team, "crm")
	require.NoError(t, err)
	assert.Equal(t, "https://mcp.example.com/v2", got.URL)
	err = f.MCPPacks.ReplaceMCPPack(ctx, f.team, mcpPack("nope", now))
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "a replace needs the pack: %v", err)

	other := "team_other_" + f.team
	_, err = f.MCPPacks.GetMCPPack(ctx, other, "crm")
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "another team: %v", err)
	list, err := f.MCPPacks.ListMCPPacks(ctx, other)
	require.NoError(t, err)
	assert.Empty(t, list)
	assert.True(t, apperr.Is(f.MCPPacks.DeleteMCPPack(ctx, other, "crm"), apperr.ENOTFOUND))

	// Up to the cap: the pack that makes MaxMCPPacks is stored, the
	// next is refused; a delete makes room for one again.
	for i := 1; i < toolpacks.MaxMCPPacks; i++ {
		require.NoError(t, f.MCPPacks.CreateMCPPack(ctx, f.team, mcpPack(fmt.Sprintf("pack-%02d", i), now)))
	}
	err = f.MCPPacks.CreateMCPPack(ctx, f.team, mcpPack("one-more", now))
	e, ok := apperr.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, apperr.ELIMIT, e.Code)
	assert.Equal(t, toolpacks.ReasonPackLimit, e.Reason)
	list, err = f.MCPPacks.ListMCPPacks(ctx, f.team)
	require.NoError(t, err)
	require.Len(t, list, toolpacks.MaxMCPPacks)
	assert.Equal(t, "crm", list[0].Name, "by name")
	require.NoError(t, f.MCPPacks.DeleteMCPPack(ctx, f.team, "crm"))
	assert.True(t, apperr.Is(f.MCPPacks.DeleteMCPPack(ctx, f.team, "crm"), apperr.ENOTFOUND), "deleted once")
	require.NoError(t, f.MCPPacks.CreateMCPPack(ctx, f.team, mcpPack("one-more", now)), "a delete frees a place")
}

// mcpPacksConcurrent: 16 creates of distinct packs race for a team's
// MaxMCPPacks places; exactly that many are stored.
func mcpPacksConcurrent(t *testing.T, f *fixture) {
	ctx := context.Background()
	now := time.Now().UTC()
	var wg sync.WaitGroup
	var mu sync.Mutex
	made, limited := 0, 0
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := f.MCPPacks.CreateMCPPack(ctx, f.team, mcpPack(fmt.Sprintf("race-%02d", i), now))
			// A transaction that lost to another on the counter item is
			// canceled without a failed condition: its caller retries.
			for apperr.Is(err, apperr.ECONFLICT) {
				err = f.MCPPacks.CreateMCPPack(ctx, f.team, mcpPack(fmt.Sprintf("race-%02d", i), now))
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				made++
			case apperr.Is(err, apperr.ELIMIT):
				limited++
			default:
				t.Errorf("create %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, toolpacks.MaxMCPPacks, made)
	assert.Equal(t, 16-toolpacks.MaxMCPPacks, limited)
	list, err := f.MCPPacks.ListMCPPacks(ctx, f.team)
	require.NoError(t, err)
	assert.Len(t, list, toolpacks.MaxMCPPacks)
}
