// Package idempotency makes POST requests safe to retry: a request with an
// Idempotency-Key header is executed once per team and key, and every repeat
// gets the first response back. A repeat with a different body is rejected so
// a reused key cannot silently return the wrong resource.
package idempotency

import (
	"context"
	"errors"
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

// ClaimGrace is how long a claim outlives the invocation that made it:
// Lambda ends an invocation at its deadline, so after it the request
// cannot still be running, and a write it sent just before its deadline
// has landed by then (and a create's reference to its item, IdemRef, is
// in the same transaction). A claim whose release was lost (the table
// slow or stalled as the function answered) is then taken over once its
// invocation's time is up, not PendingTTL later: the retry a 409's
// Retry-After asks for goes through.
const ClaimGrace = 2 * time.Second

// ClaimUntil is when a claim made at now lapses: ClaimGrace after the
// deadline of the invocation making it (hasDeadline false: none known),
// and never later than PendingTTL from now.
func ClaimUntil(now, deadline time.Time, hasDeadline bool) time.Time {
	until := now.Add(PendingTTL)
	if hasDeadline && deadline.Add(ClaimGrace).Before(until) {
		return deadline.Add(ClaimGrace)
	}
	return until
}

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
	// Begin claims key for a request at now, the claim lapsing at until
	// (ClaimUntil). When the key is new, or its record has lapsed, it
	// stores a pending record and returns (nil, nil); otherwise it
	// returns the existing record and stores nothing.
	Begin(ctx context.Context, teamID, key, requestHash string, now, until time.Time) (*Record, error)
	// Complete stores the response for a claimed key.
	Complete(ctx context.Context, teamID string, rec Record, now time.Time) error
	// Abandon releases a claimed key after a failure the client may retry.
	Abandon(ctx context.Context, teamID, key string) error
}

type keyCtx struct{}

type scopeCtx struct{}

// WithKey returns ctx carrying the request's Idempotency-Key (the HTTP
// router sets it). A create can then write, in the transaction that
// stores its item, a reference from the key to the item: a request sent
// again after an answer was lost (OutcomeUnknown) finds the item it
// created instead of creating another.
func WithKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, keyCtx{}, key)
}

// Scope returns ctx for the create of kind the request is for ("turn",
// "session", …): the route's handler names it, so that only that create
// takes the key. The other creates the request makes on its way (the
// tasks a turn delegates, the messages its tools send, the task a report
// runs on) take none: under one key a turn may delegate twice.
func Scope(ctx context.Context, kind string) context.Context {
	return context.WithValue(ctx, scopeCtx{}, kind)
}

// KeyFor returns the request's Idempotency-Key when the request is for a
// create of kind ("" without a key, or for another kind).
func KeyFor(ctx context.Context, kind string) string {
	if k, _ := ctx.Value(scopeCtx{}).(string); k != kind {
		return ""
	}
	k, _ := ctx.Value(keyCtx{}).(string)
	return k
}

// Replayed is a create refused because a request with its Idempotency-Key
// already stored one (ID): the service answers that item.
type Replayed struct{ Kind, ID string }

func (r Replayed) Error() string {
	return "a " + r.Kind + " was stored under this Idempotency-Key: " + r.ID
}

// Refs reads the references creates write (every DynamoDB store, through
// the embedded dynamo.Store, and the in-memory store).
type Refs interface {
	// ReadRef returns the ids the create of kind under key stored, nil
	// when none did.
	ReadRef(ctx context.Context, teamID, kind, key string) ([]string, error)
}

// Stored returns the id of the item of kind a request with ctx's key
// already created ("" when none did, or ctx has no key for kind, or store
// reads no references), read before a create does anything: a request
// repeated after its answer was lost answers that item, and starts no
// work a second time.
func Stored(ctx context.Context, store any, teamID, kind string) (string, error) {
	key := KeyFor(ctx, kind)
	refs, ok := store.(Refs)
	if key == "" || !ok {
		return "", nil
	}
	ids, err := refs.ReadRef(ctx, teamID, kind, key)
	if err != nil || len(ids) == 0 {
		return "", err
	}
	return ids[0], nil
}

// ReplayedID returns the id of the item err (a create refused as
// Replayed) names.
func ReplayedID(err error) (string, bool) {
	var r Replayed
	if errors.As(err, &r) {
		return r.ID, true
	}
	return "", false
}
