// Package clipfake is the in-memory fake of toolpacks.ClipboardStore (the
// tool packs' clipboard), as shared/store/clipstore is the DynamoDB one;
// both are held to the store contract (shared/testkit/storetest).
package clipfake

import (
	"context"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
)

var _ toolpacks.ClipboardStore = (*Clipboard)(nil)

// Clipboard is toolpacks.ClipboardStore on a memtable.Table. Safe for concurrent use.
type Clipboard struct{ tb *memtable.Table }

// New returns the clipboard of tb (nil: a table of its own).
func New(tb *memtable.Table) *Clipboard {
	if tb == nil {
		tb = memtable.New()
	}
	return &Clipboard{tb: tb}
}

// clipKey names a clipboard value: a team, its scope and its key.
type clipKey struct{ team, scope, key string }

// clips are the clipboard's values. Call with the table locked.
func (s *Clipboard) clips() map[clipKey]toolpacks.Clip {
	return *memtable.Part(s.tb, "clips", func() *map[clipKey]toolpacks.Clip { m := map[clipKey]toolpacks.Clip{}; return &m })
}

// PutClip implements toolpacks.ClipboardStore: the value replaces its
// key's.
func (s *Clipboard) PutClip(_ context.Context, teamID string, c toolpacks.Clip) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	s.clips()[clipKey{teamID, c.Scope, c.Key}] = c
	return nil
}

// GetClip implements toolpacks.ClipboardStore: ENOTFOUND for a key
// without a value, or whose value expired before now (as the adapter,
// which does not wait for DynamoDB's TTL to delete it).
func (s *Clipboard) GetClip(_ context.Context, teamID, scope, key string, now time.Time) (toolpacks.Clip, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	c, ok := s.clips()[clipKey{teamID, scope, key}]
	if !ok || !now.Before(c.ExpiresAt) {
		return toolpacks.Clip{}, apperr.NotFound("clipboard key", key)
	}
	return c, nil
}
