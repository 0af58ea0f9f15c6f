package dynamo

import (
	"context"
	"time"
)

// attemptsRetention outlives the message: SQS keeps it at most 14 days.
const attemptsRetention = 14 * 24 * time.Hour

// Failed implements consumers.Attempts: one atomic ADD, whose new value is
// the count (two concurrent deliveries of one message both count).
func (s *Store) Failed(ctx context.Context, queue, messageID string) (int, error) {
	return s.ttlCount(ctx, Key("QATTEMPT#"+queue+"#"+messageID, "ATTEMPTS"), "attempts", TTL(time.Now().Add(attemptsRetention)))
}
