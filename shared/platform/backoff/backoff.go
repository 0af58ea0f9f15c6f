// Package backoff holds the two loops that wait with a doubling pause: Poll,
// the long-poll of GET /v1/tasks/{id}, /v1/reports/{id} and
// /v1/consultations/{id} (look again until the thing is done or the wait is
// over), and Retry, a few tries of a call that may fail for a moment (a
// task token's callback). Standard library only: domain services use it.
package backoff

import (
	"context"
	"time"
)

// Poll pauses: the first look again comes after FirstPause, each pause
// doubles up to MaxPause. A task or report usually ends within seconds, so
// the first looks are quick; a long wait costs at most one read a second.
const (
	FirstPause = 100 * time.Millisecond
	MaxPause   = time.Second
)

// Poll calls look until it reports done, returns an error, or the wait d
// is over, and returns its last value. The last look is taken while a
// pause still fits before d ends, so a wait never outlasts d. A cancelled
// ctx ends the wait with the last value and no error: the caller answers
// with what it has (the request is going away anyway).
func Poll[T any](ctx context.Context, d time.Duration, look func(context.Context) (T, bool, error)) (T, error) {
	deadline := time.Now().Add(d)
	pause := FirstPause
	for {
		v, done, err := look(ctx)
		if err != nil || done || !time.Now().Add(pause).Before(deadline) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, nil
		case <-time.After(pause):
		}
		pause = min(pause*2, MaxPause)
	}
}

// Retry calls f up to attempts times, pausing 100 ms, 200 ms, 400 ms, …
// between tries, and returns nil at the first success or the last error.
// It does not pause after the last try, and stops early when ctx ends.
func Retry(ctx context.Context, attempts int, f func(context.Context) error) error {
	var err error
	for attempt := range attempts {
		if err = f(ctx); err == nil || attempt == attempts-1 {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(FirstPause << attempt):
		}
	}
	return err
}
