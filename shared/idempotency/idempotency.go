// Package idempotency makes POST requests safe to retry: a request with an
// Idempotency-Key header is executed once per team and key, and every repeat
// gets the first response back. A repeat with a different body is rejected so
// a reused key cannot silently return the wrong resource.
package idempotency

import (
	"context"
	"time"
)

// States of a record.
const (
	StatePending = "pending" // the first request is still running
	StateDone    = "done"
)

// TTL is how long a key is remembered.
const TTL = 24 * time.Hour

// PendingTTL is how long a claim stays pending without an answer: longer
// than any HTTP function runs (API Gateway's integrations end at 30 s),
// so a claim whose request was cut off or crashed (its outcome unknown,
// its release lost) is taken over by the next request with the key
// instead of answering RequestInProgress for a day.
const PendingTTL = 35 * time.Second

// Record is what is remembered about one key.
type Record struct {
	Key         string
	RequestHash string
	State       string
	StatusCode  int
	Body        string
}

// Store persists records.
type Store interface {
	// Begin claims key for a request. When the key is new it stores a
	// pending record and returns (nil, nil); otherwise it returns the
	// existing record and stores nothing.
	Begin(ctx context.Context, teamID, key, requestHash string, now time.Time) (*Record, error)
	// Complete stores the response for a claimed key.
	Complete(ctx context.Context, teamID string, rec Record, now time.Time) error
	// Abandon releases a claimed key after a failure the client may retry.
	Abandon(ctx context.Context, teamID, key string) error
}

type keyCtx struct{}

// WithKey returns ctx carrying the request's Idempotency-Key (the HTTP
// router sets it), so a create can write, in the transaction that stores
// its item, a reference from the key to the item: a request sent again
// after an answer was lost (OutcomeUnknown) finds the item it created
// instead of creating another.
func WithKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, keyCtx{}, key)
}

// KeyOf returns the request's Idempotency-Key ("" without one).
func KeyOf(ctx context.Context) string {
	k, _ := ctx.Value(keyCtx{}).(string)
	return k
}
