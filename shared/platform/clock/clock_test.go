package clock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/shared/platform/clock"
)

func TestUTC(t *testing.T) {
	at := time.Date(2026, 12, 2, 9, 30, 0, 0, time.FixedZone("CET", 3600))
	got := clock.Func(func() time.Time { return at }).UTC()
	assert.Equal(t, time.UTC, got.Location(), "an injected clock's time is given in UTC")
	assert.True(t, got.Equal(at))

	var system clock.Func
	before := time.Now()
	now := system.UTC()
	assert.Equal(t, time.UTC, now.Location())
	assert.False(t, now.Before(before.Truncate(time.Second)), "a nil clock reads the system clock")
}
