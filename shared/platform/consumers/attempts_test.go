package consumers_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/consumers"
)

type attempts struct {
	mu  sync.Mutex
	n   map[string]int
	err error
}

func (a *attempts) Failed(_ context.Context, queue, id string) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		return 0, a.err
	}
	a.n[queue+"/"+id]++
	return a.n[queue+"/"+id], nil
}

type deadLetters struct {
	sent []string
	err  error
}

func (d *deadLetters) DeadLetter(_ context.Context, queue string, m events.SQSMessage, n int, lastErr string) error {
	if d.err != nil {
		return d.err
	}
	d.sent = append(d.sent, queue+"/"+m.MessageId+"/"+lastErr)
	return nil
}

func event(t *testing.T, id string) events.SQSMessage {
	body, err := json.Marshal(map[string]any{"id": "ev-" + id, "detail-type": "Thing", "detail": map[string]any{"n": 1}})
	require.NoError(t, err)
	return events.SQSMessage{MessageId: id, Body: string(body)}
}

func newHandler(a consumers.Attempts, d consumers.DeadLetters, apply func() error) *consumers.Handler {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := consumers.For("Thing", log, func(map[string]any) bool { return true }, func(context.Context, map[string]any) error { return apply() })
	h.Retry = &consumers.Retry{Queue: "things", MaxAttempts: 3, Attempts: a, DeadLetters: d, Log: log}
	return h
}

// A failing message is retried twice (reported as a batch item failure)
// and on its third failed attempt dead-lettered by the consumer and
// acknowledged; a message that succeeds costs no attempt write.
func TestThirdFailedAttemptIsDeadLetteredByTheConsumer(t *testing.T) {
	a, d := &attempts{n: map[string]int{}}, &deadLetters{}
	fail := true
	h := newHandler(a, d, func() error {
		if fail {
			return errors.New("store down")
		}
		return nil
	})
	ctx := context.Background()
	for attempt := 1; attempt <= 2; attempt++ {
		resp, err := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{event(t, "m1")}})
		require.NoError(t, err)
		assert.Equal(t, []events.SQSBatchItemFailure{{ItemIdentifier: "m1"}}, resp.BatchItemFailures, "attempt %d is retried", attempt)
		assert.Empty(t, d.sent)
	}
	resp, err := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{event(t, "m1")}})
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures, "the third failure is acknowledged")
	assert.Equal(t, []string{"things/m1/store down"}, d.sent)

	fail = false
	resp, err = h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{event(t, "m2")}})
	require.NoError(t, err)
	assert.Empty(t, resp.BatchItemFailures)
	assert.NotContains(t, a.n, "things/m2", "success writes no attempt")
}

// When the attempt cannot be counted or the dead-letter send fails, the
// message is retried: the queue's own ceiling still bounds it.
func TestUncountedOrUnsentFailuresAreRetried(t *testing.T) {
	for name, c := range map[string]struct {
		a *attempts
		d *deadLetters
	}{
		"count fails": {&attempts{n: map[string]int{}, err: errors.New("throttled")}, &deadLetters{}},
		"send fails":  {&attempts{n: map[string]int{"things/m1": 5}}, &deadLetters{err: errors.New("no queue")}},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHandler(c.a, c.d, func() error { return errors.New("boom") })
			resp, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{event(t, "m1")}})
			require.NoError(t, err)
			assert.Equal(t, []events.SQSBatchItemFailure{{ItemIdentifier: "m1"}}, resp.BatchItemFailures)
			assert.Empty(t, c.d.sent)
		})
	}
}

// A consumer fed several detail types by its rule (On) applies each its
// own way; a detail type it was not given, or a detail its check refuses,
// fails (and so is retried, then dead-lettered), never dropped.
func TestOneConsumerForSeveralDetailTypes(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var seen []string
	type detail struct {
		N int `json:"n"`
	}
	h := consumers.For("Thing", log, func(d detail) bool { return d.N > 0 }, func(_ context.Context, d detail) error {
		seen = append(seen, "thing")
		return nil
	})
	consumers.On(h, "Other", func(d detail) bool { return d.N > 0 }, func(_ context.Context, d detail) error {
		seen = append(seen, "other")
		return nil
	})
	msg := func(id, dt string, n int) events.SQSMessage {
		body, err := json.Marshal(map[string]any{"id": "ev-" + id, "detail-type": dt, "detail": map[string]any{"n": n}})
		require.NoError(t, err)
		return events.SQSMessage{MessageId: id, Body: string(body)}
	}
	resp, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		msg("a", "Thing", 1), msg("b", "Other", 2), msg("c", "Third", 1), msg("d", "Other", 0),
	}})
	require.NoError(t, err)
	assert.Equal(t, []string{"thing", "other"}, seen)
	assert.Equal(t, []events.SQSBatchItemFailure{{ItemIdentifier: "c"}, {ItemIdentifier: "d"}}, resp.BatchItemFailures)
}
