package answerby_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/shared/platform/answerby"
)

// Detached work outlives its caller's cancel but not the time to answer
// by; without one it has its own bound.
func TestDetachedEndsByTheTimeToAnswer(t *testing.T) {
	caller, cancel := context.WithCancel(context.Background())
	by := time.Now().Add(50 * time.Millisecond)
	ctx, done := answerby.Detached(answerby.With(caller, by), time.Hour)
	defer done()
	cancel()
	assert.NoError(t, ctx.Err(), "not canceled with its caller")
	dl, ok := ctx.Deadline()
	assert.True(t, ok)
	assert.Equal(t, by, dl)

	free, done2 := answerby.Detached(context.Background(), time.Minute)
	defer done2()
	dl, _ = free.Deadline()
	assert.WithinDuration(t, time.Now().Add(time.Minute), dl, time.Second)
}
