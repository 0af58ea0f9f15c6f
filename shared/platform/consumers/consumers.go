// Package consumers holds what the SQS consumers of bus events other than
// the activity recorder share: the message fan-out (AgentMessageSent → one
// inbox entry per recipient), the memory invalidator (MemoryShared → every
// agent's cached context dropped), the report finalizer and the result
// poster (TaskStatusChanged, ReportFinished, SessionStatusChanged → the
// outcome posted into its conversation, shared/work/results). All report
// partial batch failures, so a failing event is retried on its own and
// dead-lettered after two retries; all are idempotent, so a redelivered
// event changes nothing.
package consumers

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/conclave-ai/conclave/shared/platform/logctx"
)

// envelope is the EventBridge event as delivered to SQS.
type envelope struct {
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Detail     json.RawMessage `json:"detail"`
}

// Handler runs Apply on the detail of every event in a batch.
type Handler struct {
	// DetailType is the one event this consumer accepts.
	DetailType string
	Apply      func(ctx context.Context, detail json.RawMessage) error
	Log        *slog.Logger
	// Retry counts failed attempts and dead-letters the last; nil leaves
	// every failure to the queue's redrive.
	Retry *Retry
	// more are the other detail types the consumer accepts (On).
	more map[string]func(ctx context.Context, detail json.RawMessage) error
}

// Handle implements the SQS event source mapping with ReportBatchItemFailures.
// A body that is not an event of its type is a failure too: it lands in the
// DLQ for someone to look at instead of vanishing.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	for _, m := range ev.Records {
		ctx := MessageContext(ctx, m)
		err := h.one(ctx, m.Body)
		if err != nil && (h.Retry == nil || h.Retry.Failed(ctx, m, err)) {
			h.Log.ErrorContext(ctx, "event failed; it will be retried, then dead-lettered", "error", err.Error())
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
		}
	}
	return resp, nil
}

// workIDs are the ids of an event's detail that say whose and which work
// it is (the events' schemas, events/schemas), by their JSON names, which
// are also their names in the log lines.
var workIDs = []string{"team_id", "task_id", "session_id", "conversation_id", "report_id", "memory_id", "message_id", "consultation_id", "handoff_id"}

// MessageContext returns ctx carrying, for every line logged while m is
// handled (shared/platform/logctx), the queue message's id (sqs_message_id), its
// event's id and detail type, and the ids its detail has of workIDs: the
// team and the task, session, conversation, report, memory or message.
// Whatever of it does not decode is left out: a body that is not an
// event still has its message id.
func MessageContext(ctx context.Context, m events.SQSMessage) context.Context {
	attrs := []any{"sqs_message_id", m.MessageId}
	var e envelope
	if json.Unmarshal([]byte(m.Body), &e) == nil {
		if e.ID != "" {
			attrs = append(attrs, "event_id", e.ID)
		}
		if e.DetailType != "" {
			attrs = append(attrs, "detail_type", e.DetailType)
		}
		var d map[string]any
		if json.Unmarshal(e.Detail, &d) == nil {
			for _, k := range workIDs {
				if v, ok := d[k].(string); ok && v != "" {
					attrs = append(attrs, k, v)
				}
			}
		}
	}
	return logctx.With(ctx, attrs...)
}

func (h *Handler) one(ctx context.Context, body string) error {
	var e envelope
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		return fmt.Errorf("not an event: %w", err)
	}
	if e.DetailType == h.DetailType {
		return h.Apply(ctx, e.Detail)
	}
	if apply, ok := h.more[e.DetailType]; ok {
		return apply(ctx, e.Detail)
	}
	return fmt.Errorf("unexpected detail-type %q", e.DetailType)
}

// For is a Handler whose detail is decoded into T and checked by valid
// before apply runs; a detail that does not decode or is not valid is a
// failure (dead-lettered after the retries), never silently dropped.
func For[T any](detailType string, log *slog.Logger, valid func(T) bool, apply func(ctx context.Context, ev T) error) *Handler {
	return &Handler{DetailType: detailType, Log: log, Apply: decoded(detailType, valid, apply)}
}

// On makes h accept a further detail type, decoded and checked as For
// does; the consumer's rule delivers several detail types to one queue.
func On[T any](h *Handler, detailType string, valid func(T) bool, apply func(ctx context.Context, ev T) error) *Handler {
	if h.more == nil {
		h.more = map[string]func(context.Context, json.RawMessage) error{}
	}
	h.more[detailType] = decoded(detailType, valid, apply)
	return h
}

func decoded[T any](detailType string, valid func(T) bool, apply func(ctx context.Context, ev T) error) func(context.Context, json.RawMessage) error {
	return func(ctx context.Context, detail json.RawMessage) error {
		var ev T
		if err := json.Unmarshal(detail, &ev); err != nil || !valid(ev) {
			return fmt.Errorf("bad %s detail", detailType)
		}
		return apply(ctx, ev)
	}
}
