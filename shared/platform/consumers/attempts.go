package consumers

import (
	"context"
	"log/slog"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
)

// Attempts counts the failed processing attempts of one queue message.
type Attempts interface {
	// Failed records one more failed attempt of messageID on queue and
	// returns how many have failed so far.
	Failed(ctx context.Context, queue, messageID string) (int, error)
}

// DeadLetters sends a message that has used up its attempts to the dead
// letter queue of its queue, with why.
type DeadLetters interface {
	DeadLetter(ctx context.Context, queue string, m events.SQSMessage, attempts int, lastErr string) error
}

// Retry keeps the product's promise for a queue — one delivery and two
// retries, then the dead-letter queue — by counting processing attempts
// rather than receives. The queue's own redrive counts receives, and a
// receive is spent also when Lambda throttles the batch and nothing ran;
// so the queue's maxReceiveCount is a high ceiling (for a message that
// crashes or times out the function every time, which records nothing)
// and the consumer moves a message to the dead-letter queue itself once
// MaxAttempts attempts have failed.
//
// The happy path costs nothing: attempts are written only on failure.
type Retry struct {
	Queue       string
	MaxAttempts int
	Attempts    Attempts
	DeadLetters DeadLetters
	Log         *slog.Logger
}

// Failed settles a message whose processing failed with err: it reports
// whether the message must be retried (returned as a batch item failure).
// When its attempts are used up it is dead-lettered and acknowledged; if
// recording or dead-lettering fails, it is retried and the queue's ceiling
// still bounds it. Its lines carry the message's ids from ctx
// (MessageContext).
func (r *Retry) Failed(ctx context.Context, m events.SQSMessage, err error) (retry bool) {
	if r == nil || r.Attempts == nil {
		return true
	}
	n, cerr := r.Attempts.Failed(ctx, r.Queue, m.MessageId)
	if cerr != nil {
		r.Log.ErrorContext(ctx, "could not count the attempt; the message will be retried", "error", cerr.Error())
		return true
	}
	if n < r.MaxAttempts {
		r.Log.WarnContext(ctx, "attempt failed; the message will be retried", "attempt", n, "max_attempts", r.MaxAttempts, "error", err.Error())
		return true
	}
	if derr := r.DeadLetters.DeadLetter(ctx, r.Queue, m, n, err.Error()); derr != nil {
		r.Log.ErrorContext(ctx, "could not dead-letter the message; it will be retried", "error", derr.Error())
		return true
	}
	r.Log.ErrorContext(ctx, "message dead-lettered after its last attempt", "attempts", strconv.Itoa(n), "error", err.Error())
	return false
}
