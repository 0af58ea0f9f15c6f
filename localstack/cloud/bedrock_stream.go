package cloud

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/smithy-go/eventstream"

	"github.com/conclave-ai/conclave/shared/models"
)

// DefaultStreamChunkDelay is Bedrock.StreamChunkDelay from NewBedrock:
// about the pace at which a fast model writes a few words.
const DefaultStreamChunkDelay = 25 * time.Millisecond

// streamChunkWords is how many words each text delta of a streamed answer
// holds.
const streamChunkWords = 3

// streamFirstByteDelay holds the answer's first byte back a little, as a
// real model's time to first token does, and for a reason of the SDK's:
// smithy-go closes the request body as soon as the response headers are
// in, while net/http may still be reading that body's end; the read then
// fails (the closed body answers WriteTo with io.EOF), and net/http closes
// the connection under the event stream being read ("use of closed network
// connection"). An answer that begins microseconds after the request, as
// the edge's would, hits that race often; real Bedrock's never begins that
// soon.
const streamFirstByteDelay = 10 * time.Millisecond

// serveConverseStream answers ConverseStream: the request checked and
// answered as Converse's (converse), then the answer written as the AWS
// event stream Bedrock sends, the text in deltas of a few words paced by
// StreamChunkDelay, each event flushed as it is written. Every event is
// checked against the service model before the first is sent, since a
// stream that has begun can no longer become an error response.
func (b *Bedrock) serveConverseStream(w http.ResponseWriter, r *http.Request, modelID string, body []byte) {
	start := time.Now()
	resp, ok := b.converse(w, r, "ConverseStream", modelID, body)
	if !ok {
		return
	}
	events := streamEvents(resp, time.Since(start))
	msgs := make([]eventstream.Message, len(events))
	for i, ev := range events {
		msg, err := b.eventMessage(ev)
		if err != nil {
			b.badResponse(w, "ConverseStream", err)
			return
		}
		msgs[i] = msg
	}
	if !b.pause(r, streamFirstByteDelay) {
		b.count("ConverseStream.abandoned")
		return
	}
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.Header().Set("X-Amzn-Requestid", newRequestID())
	w.WriteHeader(http.StatusOK)
	flush := http.NewResponseController(w)
	enc := eventstream.NewEncoder()
	delta := 0
	for i, msg := range msgs {
		if i > 0 && events[i].paced && events[i-1].paced {
			delta++
			if !b.paceDelta(r, delta) {
				b.count("ConverseStream.abandoned")
				return
			}
		}
		if err := enc.Encode(w, msg); err != nil {
			// The caller went away: nobody reads the rest.
			b.count("ConverseStream.abandoned")
			return
		}
		_ = flush.Flush()
	}
}

// paceDelta waits before the text delta numbered delta: StreamPace's
// word, or StreamChunkDelay.
func (b *Bedrock) paceDelta(r *http.Request, delta int) bool {
	if b.StreamPace != nil {
		return b.StreamPace(r, delta)
	}
	return b.pause(r, b.StreamChunkDelay)
}

// pause waits d, or until the caller goes away (false).
func (b *Bedrock) pause(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return r.Context().Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// streamEvent is one event of a ConverseStream answer: its :event-type
// (a member of the service model's ConverseStreamOutput) and JSON payload.
// Paced events (the text deltas) are StreamChunkDelay apart.
type streamEvent struct {
	typ     string
	payload map[string]any
	paced   bool
}

// streamEvents is resp as the events Bedrock streams: messageStart, the
// text block's deltas (index 0, no contentBlockStart: Bedrock starts only
// tool blocks), one block per tool call (contentBlockStart with its id and
// name, one delta with its input JSON), messageStop with the stop reason
// Converse would give and metadata with the tokens.
func streamEvents(resp models.Response, took time.Duration) []streamEvent {
	events := []streamEvent{{typ: "messageStart", payload: map[string]any{"role": "assistant"}}}
	index := 0
	if chunks := models.Chunks(resp.Text, streamChunkWords); len(chunks) > 0 {
		for _, c := range chunks {
			events = append(events, streamEvent{typ: "contentBlockDelta", paced: true,
				payload: map[string]any{"contentBlockIndex": index, "delta": map[string]any{"text": c}}})
		}
		events = append(events, streamEvent{typ: "contentBlockStop", payload: map[string]any{"contentBlockIndex": index}})
		index++
	}
	for _, c := range resp.ToolCalls {
		// The input Converse sends (toolInput) as JSON text, indented as a
		// model may write it: the adapter renders it as Converse does.
		input, _ := json.MarshalIndent(toolInput(c), "", "  ")
		events = append(events,
			streamEvent{typ: "contentBlockStart", payload: map[string]any{"contentBlockIndex": index,
				"start": map[string]any{"toolUse": map[string]any{"toolUseId": c.ID, "name": c.Name}}}},
			streamEvent{typ: "contentBlockDelta", payload: map[string]any{"contentBlockIndex": index,
				"delta": map[string]any{"toolUse": map[string]any{"input": string(input)}}}},
			streamEvent{typ: "contentBlockStop", payload: map[string]any{"contentBlockIndex": index}})
		index++
	}
	return append(events,
		streamEvent{typ: "messageStop", payload: map[string]any{"stopReason": stopReason(resp)}},
		streamEvent{typ: "metadata", payload: map[string]any{
			"usage":   map[string]any{"inputTokens": resp.InputTokens, "outputTokens": resp.OutputTokens, "totalTokens": resp.InputTokens + resp.OutputTokens},
			"metrics": map[string]any{"latencyMs": took.Milliseconds()},
		}})
}

// eventMessage is ev as an event stream message, its payload checked
// against the event's shape in the service model.
func (b *Bedrock) eventMessage(ev streamEvent) (eventstream.Message, error) {
	var msg eventstream.Message
	output, ok := b.Service.Shapes["ConverseStreamOutput"]
	if !ok {
		return msg, fmt.Errorf("the service model has no ConverseStreamOutput")
	}
	member, ok := output.Members[ev.typ]
	if !ok {
		return msg, fmt.Errorf("ConverseStreamOutput has no event %q", ev.typ)
	}
	payload, err := json.Marshal(ev.payload)
	if err != nil {
		return msg, err
	}
	if err := b.Service.ValidateShape(member.Shape, payload); err != nil {
		return msg, fmt.Errorf("%s: %w", ev.typ, err)
	}
	msg.Headers.Set(eventstream.MessageTypeHeader, eventstream.StringValue(eventstream.EventMessageType))
	msg.Headers.Set(eventstream.EventTypeHeader, eventstream.StringValue(ev.typ))
	msg.Headers.Set(eventstream.ContentTypeHeader, eventstream.StringValue("application/json"))
	msg.Payload = payload
	return msg, nil
}
