// Package recorder is the SQS consumer that writes bus events into each
// team's activity log. It reports partial batch failures so one bad message
// is retried (and, after two retries, dead-lettered) without redelivering the
// rest of the batch.
package recorder

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/conclave-ai/conclave/shared/platform/consumers"
	"github.com/conclave-ai/conclave/shared/team/activity"
)

// Handler consumes the activity queue.
type Handler struct {
	Store activity.Store
	Log   *slog.Logger
	// Retry counts failed attempts and dead-letters the last.
	Retry *consumers.Retry
}

// envelope is the EventBridge event as delivered to SQS.
type envelope struct {
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Time       time.Time       `json:"time"`
	Detail     json.RawMessage `json:"detail"`
}

// Handle implements the SQS event source mapping contract with
// ReportBatchItemFailures. Messages that can never succeed (not an event, no
// team) are logged and dropped rather than retried into the DLQ.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	for _, m := range ev.Records {
		// The message's, event's, team's and work's ids on every line.
		ctx := consumers.MessageContext(ctx, m)
		var e envelope
		if err := json.Unmarshal([]byte(m.Body), &e); err != nil || e.ID == "" {
			h.Log.WarnContext(ctx, "dropping message that is not an event")
			continue
		}
		var d struct {
			TeamID string `json:"team_id"`
		}
		if err := json.Unmarshal(e.Detail, &d); err != nil || d.TeamID == "" {
			h.Log.WarnContext(ctx, "dropping event without team_id")
			continue
		}
		if e.Time.IsZero() {
			e.Time = time.Now().UTC()
		}
		err := h.Store.Record(ctx, activity.Entry{TeamID: d.TeamID, EventID: e.ID, DetailType: e.DetailType, Source: e.Source, Time: e.Time, Detail: e.Detail})
		if err != nil {
			h.Log.ErrorContext(ctx, "record failed", "error", err.Error())
			if h.Retry == nil || h.Retry.Failed(ctx, m, err) {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
			}
			continue
		}
		h.Log.InfoContext(ctx, "recorded")
	}
	return resp, nil
}
