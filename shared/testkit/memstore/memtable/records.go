package memtable

import (
	"context"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/consumers"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
)

var (
	_ idempotency.Store  = (*Table)(nil)
	_ consumers.Attempts = (*Table)(nil)
)

// record is an idempotent POST's record and when it expires (the
// adapter's TTL attribute, in seconds).
type record struct {
	rec     idempotency.Record
	expires int64
}

// records are the idempotency records, by team and key. Call with the
// table locked.
func records(tb *Table) map[Key]record {
	return *Part(tb, "idempotency", func() *map[Key]record { m := map[Key]record{}; return &m })
}

// Begin implements idempotency.Store, as the DynamoDB core: the claim
// (pending, expiring at until) is stored where no
// record is or the one there has expired (to the second, as the TTL
// attribute); otherwise the record found comes back and nothing is
// stored.
func (tb *Table) Begin(_ context.Context, teamID, k, requestHash string, now, until time.Time) (*idempotency.Record, error) {
	tb.Lock()
	defer tb.Unlock()
	recs := records(tb)
	if cur, ok := recs[Key{teamID, k}]; ok && cur.expires >= now.Unix() {
		rec := cur.rec
		return &rec, nil
	}
	recs[Key{teamID, k}] = record{rec: idempotency.Record{Key: k, RequestHash: requestHash, State: idempotency.StatePending},
		expires: until.Unix()}
	return nil, nil
}

// Complete implements idempotency.Store: the response stored (done,
// expiring after idempotency.TTL), whatever the key held.
func (tb *Table) Complete(_ context.Context, teamID string, rec idempotency.Record, now time.Time) error {
	tb.Lock()
	defer tb.Unlock()
	rec.State = idempotency.StateDone
	records(tb)[Key{teamID, rec.Key}] = record{rec: rec, expires: now.Add(idempotency.TTL).Unix()}
	return nil
}

// Abandon implements idempotency.Store: a pending record is deleted; a
// done one (or none) is left as it is.
func (tb *Table) Abandon(_ context.Context, teamID, k string) error {
	tb.Lock()
	defer tb.Unlock()
	recs := records(tb)
	if cur, ok := recs[Key{teamID, k}]; ok && cur.rec.State == idempotency.StatePending {
		delete(recs, Key{teamID, k})
	}
	return nil
}

// Failed implements consumers.Attempts: the message's failed attempts on
// the queue, this one included (the adapter's atomic ADD).
func (tb *Table) Failed(_ context.Context, queue, messageID string) (int, error) {
	tb.Lock()
	defer tb.Unlock()
	attempts := *Part(tb, "attempts", func() *map[string]int { m := map[string]int{}; return &m })
	attempts[queue+"#"+messageID]++
	return attempts[queue+"#"+messageID], nil
}
