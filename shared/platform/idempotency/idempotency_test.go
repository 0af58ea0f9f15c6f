package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/shared/platform/idempotency"
)

// A claim lapses ClaimGrace after its invocation's deadline, and never
// later than PendingTTL from when it was made: at the boundary (the
// deadline ClaimGrace short of PendingTTL) and a nanosecond either side.
func TestClaimUntilIsTheInvocationsDeadlineCappedByPendingTTL(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	capped := now.Add(idempotency.PendingTTL)
	edge := capped.Add(-idempotency.ClaimGrace)

	assert.Equal(t, now.Add(10*time.Second+idempotency.ClaimGrace), idempotency.ClaimUntil(now, now.Add(10*time.Second), true))
	assert.Equal(t, capped.Add(-time.Nanosecond), idempotency.ClaimUntil(now, edge.Add(-time.Nanosecond), true))
	assert.Equal(t, capped, idempotency.ClaimUntil(now, edge, true))
	assert.Equal(t, capped, idempotency.ClaimUntil(now, edge.Add(time.Nanosecond), true))
	assert.Equal(t, capped, idempotency.ClaimUntil(now, now.Add(time.Hour), true))
	assert.Equal(t, capped, idempotency.ClaimUntil(now, time.Time{}, false), "no deadline known")
}
