package conversationstore

import "time"

// RoleResult is the marker of a posted result in a transaction.
const RoleResult = "result marker"

// ResultItem marks the result of one piece of work (a task, a report, a
// session's run) as posted into its conversation, with the message that
// carries it. It has no expiry: it is what makes a redelivered event,
// whenever it comes, post nothing.
type ResultItem struct {
	PK             string    `dynamodbav:"pk"`
	SK             string    `dynamodbav:"sk"`
	Type           string    `dynamodbav:"type"`
	ConversationID string    `dynamodbav:"conversation_id"`
	MessageID      string    `dynamodbav:"message_id"`
	PostedAt       time.Time `dynamodbav:"posted_at"`
}
