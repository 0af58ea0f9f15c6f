package backoff_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/shared/platform/backoff"
)

func TestPollStopsWhenDone(t *testing.T) {
	looks := 0
	v, err := backoff.Poll(context.Background(), 5*time.Second, func(context.Context) (int, bool, error) {
		looks++
		return looks, looks == 3, nil
	})
	assert.NoError(t, err)
	assert.Equal(t, 3, v)
}

func TestPollStopsOnAnError(t *testing.T) {
	boom := errors.New("boom")
	looks := 0
	_, err := backoff.Poll(context.Background(), 5*time.Second, func(context.Context) (int, bool, error) {
		looks++
		return 0, false, boom
	})
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, 1, looks)
}

// The wait is not outlasted: with 250 ms, the looks are at 0, 100 ms and
// 300 ms would be past it, so two looks and about 100 ms.
func TestPollKeepsWithinTheWait(t *testing.T) {
	start := time.Now()
	looks := 0
	v, err := backoff.Poll(context.Background(), 250*time.Millisecond, func(context.Context) (int, bool, error) {
		looks++
		return looks, false, nil
	})
	assert.NoError(t, err)
	assert.Equal(t, 2, v, "the last look when the next pause does not fit")
	// A third look would have come after a 200 ms pause, at 300 ms: the
	// look count proves the wait was kept; the clock only bounds it
	// loosely (a loaded machine bends timers).
	assert.Less(t, time.Since(start), 300*time.Millisecond+250*time.Millisecond)
}

func TestPollEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	v, err := backoff.Poll(ctx, 5*time.Second, func(context.Context) (string, bool, error) { return "last", false, nil })
	assert.NoError(t, err, "a cancelled wait answers with what it has")
	assert.Equal(t, "last", v)
}

func TestRetry(t *testing.T) {
	calls := 0
	err := backoff.Retry(context.Background(), 3, func(context.Context) error {
		calls++
		if calls < 2 {
			return errors.New("not yet")
		}
		return nil
	})
	assert.NoError(t, err)
	assert.Equal(t, 2, calls)

	calls = 0
	start := time.Now()
	err = backoff.Retry(context.Background(), 3, func(context.Context) error { calls++; return errors.New("down") })
	assert.EqualError(t, err, "down")
	assert.Equal(t, 3, calls)
	// Pauses of 100 and 200 ms, none after the last try: a third pause
	// (400 ms) would bring it to 700 ms, which a loaded machine's timer
	// slack alone does not reach.
	assert.Less(t, time.Since(start), 700*time.Millisecond, "pauses of 100 and 200 ms, none after the last try")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls = 0
	assert.Error(t, backoff.Retry(ctx, 3, func(context.Context) error { calls++; return errors.New("down") }))
	assert.Equal(t, 1, calls, "an ended context stops the retries")
}
