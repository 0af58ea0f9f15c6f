package conversations

import (
	"fmt"

	"github.com/conclave-ai/conclave/shared/platform/streams"
)

// Detail types of a conversation's stream (streams.Conversation). They
// are stored on the stream only, with the message they tell of, and not
// published on the bus: a message is already the conversation's record,
// and its readers are the stream's clients.
const (
	// MessagePostedType: a message was stored in the conversation (the
	// user's, an agent's reply, a system note of a handoff).
	MessagePostedType = "MessagePosted"
	// ResultPostedType: a message carrying the result of work linked to
	// the conversation (Message.ResultOf: a task, report, session or
	// plan) was stored.
	ResultPostedType = "ResultPosted"
)

// MessagePosted is the detail of MessagePosted and ResultPosted: the
// message as the API returns it.
type MessagePosted struct {
	TeamID         string  `json:"team_id"`
	ConversationID string  `json:"conversation_id"`
	Message        Message `json:"message"`
}

// messageType is the detail type of m's event: ResultPosted when m
// carries a result, else MessagePosted.
func messageType(m Message) string {
	if m.ResultOf != nil {
		return ResultPostedType
	}
	return MessagePostedType
}

// MessageEvent is the stream event of m being stored (unnumbered).
func MessageEvent(teamID string, m Message) (streams.Event, error) {
	return streams.New(messageType(m), m.CreatedAt, MessagePosted{TeamID: teamID, ConversationID: m.ConversationID, Message: m})
}

// MessageEvents are the stream events of msgs stored in one change whose
// conversation's event_seq moves to head (Conversation.EventSeq of a
// Turn's or HandoffChange's new state): numbered head−len(msgs)+1 … head,
// in order. A head that does not count them is an error of the writer.
func MessageEvents(teamID string, head int64, msgs []Message) ([]streams.Event, error) {
	if head < int64(len(msgs)) {
		return nil, fmt.Errorf("%w: %d messages, event_seq %d", streams.ErrNumbering, len(msgs), head)
	}
	var b streams.Batch
	for _, m := range msgs {
		b.At = m.CreatedAt
		b.Add(messageType(m), MessagePosted{TeamID: teamID, ConversationID: m.ConversationID, Message: m})
	}
	evs, _, err := b.Numbered(head - int64(len(msgs)))
	return evs, err
}
