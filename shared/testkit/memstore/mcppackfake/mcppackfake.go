// Package mcppackfake is the in-memory fake of toolpacks.MCPPackStore
// (the teams' MCP packs), as shared/store/mcppackstore is the DynamoDB
// one; both are held to the store contract (shared/testkit/storetest).
package mcppackfake

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
)

var _ toolpacks.MCPPackStore = (*Packs)(nil)

// Packs is toolpacks.MCPPackStore on a memtable.Table. Safe for concurrent use.
type Packs struct{ tb *memtable.Table }

// New returns the MCP packs of tb (nil: a table of their own).
func New(tb *memtable.Table) *Packs {
	if tb == nil {
		tb = memtable.New()
	}
	return &Packs{tb: tb}
}

// packs are the MCP packs, by team and name. Call with the table locked.
func (s *Packs) packs() map[string]map[string]toolpacks.MCPPack {
	return *memtable.Part(s.tb, "mcppacks", func() *map[string]map[string]toolpacks.MCPPack {
		m := map[string]map[string]toolpacks.MCPPack{}
		return &m
	})
}

// remoteOf copies r (its tools included) so a caller's later change does
// not reach the store.
func remoteOf(r toolpacks.MCPPack) toolpacks.MCPPack {
	raw, _ := json.Marshal(r.Tools)
	r.Tools = nil
	_ = json.Unmarshal(raw, &r.Tools)
	return r
}

// CreateMCPPack implements toolpacks.MCPPackStore: ECONFLICT for a name
// taken, ELIMIT at the cap, as the adapter's transaction.
func (s *Packs) CreateMCPPack(_ context.Context, teamID string, r toolpacks.MCPPack) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	team := s.packs()[teamID]
	if _, ok := team[r.Name]; ok {
		return apperr.New(apperr.ECONFLICT, "tool pack %q was created meanwhile", r.Name)
	}
	if len(team) >= toolpacks.MaxMCPPacks {
		return toolpacks.LimitError()
	}
	if team == nil {
		team = map[string]toolpacks.MCPPack{}
		s.packs()[teamID] = team
	}
	team[r.Name] = remoteOf(r)
	return nil
}

// ReplaceMCPPack implements toolpacks.MCPPackStore.
func (s *Packs) ReplaceMCPPack(_ context.Context, teamID string, r toolpacks.MCPPack) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	if _, ok := s.packs()[teamID][r.Name]; !ok {
		return apperr.NotFound("tool pack", r.Name)
	}
	s.packs()[teamID][r.Name] = remoteOf(r)
	return nil
}

// GetMCPPack implements toolpacks.MCPPackStore.
func (s *Packs) GetMCPPack(_ context.Context, teamID, name string) (toolpacks.MCPPack, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	r, ok := s.packs()[teamID][name]
	if !ok {
		return toolpacks.MCPPack{}, apperr.NotFound("tool pack", name)
	}
	return remoteOf(r), nil
}

// ListMCPPacks implements toolpacks.MCPPackStore: by name, as the
// adapter's query.
func (s *Packs) ListMCPPacks(_ context.Context, teamID string) ([]toolpacks.MCPPack, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	var out []toolpacks.MCPPack
	for _, r := range s.packs()[teamID] {
		out = append(out, remoteOf(r))
	}
	slices.SortFunc(out, func(a, b toolpacks.MCPPack) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// DeleteMCPPack implements toolpacks.MCPPackStore.
func (s *Packs) DeleteMCPPack(_ context.Context, teamID, name string) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	if _, ok := s.packs()[teamID][name]; !ok {
		return apperr.NotFound("tool pack", name)
	}
	delete(s.packs()[teamID], name)
	return nil
}
