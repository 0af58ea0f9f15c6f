package memstore

import (
	"context"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
)

var _ toolpacks.ClipboardStore = (*Store)(nil)

// clipKey names a clipboard value: a team, its scope and its key.
type clipKey struct{ team, scope, key string }

// PutClip implements toolpacks.ClipboardStore: the value replaces its
// key's.
func (s *Store) PutClip(_ context.Context, teamID string, c toolpacks.Clip) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clips == nil {
		s.clips = map[clipKey]toolpacks.Clip{}
	}
	s.clips[clipKey{teamID, c.Scope, c.Key}] = c
	return nil
}

// GetClip implements toolpacks.ClipboardStore: ENOTFOUND for a key
// without a value, or whose value expired before now (as the adapter,
// which does not wait for DynamoDB's TTL to delete it).
func (s *Store) GetClip(_ context.Context, teamID, scope, key string, now time.Time) (toolpacks.Clip, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clips[clipKey{teamID, scope, key}]
	if !ok || !now.Before(c.ExpiresAt) {
		return toolpacks.Clip{}, apperr.NotFound("clipboard key", key)
	}
	return c, nil
}
