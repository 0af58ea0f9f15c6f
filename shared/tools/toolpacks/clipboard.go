package toolpacks

import (
	"context"
	"regexp"
	"time"
	"unicode/utf8"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/clock"
)

// The clipboard's limits. A clipboard is small and short-lived on purpose:
// it carries a few values between the steps of one plan, not documents.
const (
	// MaxClipKey is the longest key, in characters (ClipKeyPattern).
	MaxClipKey = 64
	// MaxClipValue is the largest value, in bytes of UTF-8.
	MaxClipValue = 8 * 1024
	// ClipTTL is how long a value lives after its last store: a plan or a
	// conversation that goes quiet for a day loses its clipboard (DynamoDB
	// TTL on expires_at; reads ignore an expired value before TTL deletes
	// it).
	ClipTTL = 24 * time.Hour
)

// ClipKeyPattern is what a clipboard key is made of.
const ClipKeyPattern = `^[a-z0-9][a-z0-9_.-]{0,63}$`

var clipKey = regexp.MustCompile(ClipKeyPattern)

// Clip is one clipboard value.
type Clip struct {
	// Scope is the clipboard it is on: ScopeTask(root task id) or
	// ScopeConversation(conversation id).
	Scope     string    `json:"scope"`
	Key       string    `json:"key"`
	Value     string    `json:"value"`
	StoredBy  string    `json:"stored_by"`
	StoredAt  time.Time `json:"stored_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// ScopeTask is the clipboard of a delegation tree (a plan: its root task
// and every step under it).
func ScopeTask(rootTaskID string) string { return "task:" + rootTaskID }

// ScopeConversation is the clipboard of a conversation's chat turns.
func ScopeConversation(conversationID string) string { return "conv:" + conversationID }

// ClipboardStore keeps clipboard values (shared/testkit/memstore,
// shared/store/clipstore).
type ClipboardStore interface {
	// PutClip stores c, replacing the value of its key.
	PutClip(ctx context.Context, teamID string, c Clip) error
	// GetClip returns the value of key on scope, ENOTFOUND when there is
	// none or it expired before now.
	GetClip(ctx context.Context, teamID, scope, key string, now time.Time) (Clip, error)
}

// Clipboard applies the clipboard's rules on a store.
type Clipboard struct {
	Store ClipboardStore
	// Now is the clock; nil is time.Now.
	Now clock.Func
}

// ValidKey reports whether key is a clipboard key.
func ValidKey(key string) bool { return clipKey.MatchString(key) }

// Put stores value under key on scope, for ClipTTL. Returns EINVALID
// (key, value).
func (c *Clipboard) Put(ctx context.Context, teamID, scope, key, value, by string) (Clip, error) {
	if !ValidKey(key) {
		return Clip{}, apperr.Invalid("key", "key must match %s", ClipKeyPattern)
	}
	if len(value) > MaxClipValue {
		return Clip{}, apperr.Invalid("value", "value is larger than %d bytes", MaxClipValue)
	}
	if !utf8.ValidString(value) {
		return Clip{}, apperr.Invalid("value", "value is not valid UTF-8")
	}
	now := c.Now.UTC()
	clip := Clip{Scope: scope, Key: key, Value: value, StoredBy: by, StoredAt: now, ExpiresAt: now.Add(ClipTTL)}
	return clip, c.Store.PutClip(ctx, teamID, clip)
}

// Get reads key on scope. Returns EINVALID (key), ENOTFOUND (no value,
// or an expired one).
func (c *Clipboard) Get(ctx context.Context, teamID, scope, key string) (Clip, error) {
	if !ValidKey(key) {
		return Clip{}, apperr.Invalid("key", "key must match %s", ClipKeyPattern)
	}
	return c.Store.GetClip(ctx, teamID, scope, key, c.Now.UTC())
}
