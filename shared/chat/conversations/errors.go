package conversations

import "errors"

// ErrChanged is why a Store refuses CommitTurn, CommitHandoff or
// CloseConversation: the conversation moved on (another write bumped its
// version) or was closed since it was read. The store returns it inside the
// client-facing ECONFLICT error (reason ConversationChanged), so the service
// matches it with errors.Is and retries on a fresh read, never by the
// reason's text.
var ErrChanged = errors.New("the conversation changed since it was read")

// Replayed is why a Store refuses a turn under an Idempotency-Key that
// already stored one: MessageIDs are that turn's messages, the user's
// first.
type Replayed struct{ MessageIDs []string }

func (r Replayed) Error() string {
	return "a turn was stored under this Idempotency-Key: " + r.MessageIDs[0]
}
