package conversations

import "errors"

// ErrChanged is why a Store refuses CommitTurn, CommitHandoff or
// CloseConversation: the conversation moved on (another write bumped its
// version) or was closed since it was read. The store returns it inside the
// client-facing ECONFLICT error (reason ConversationChanged), so the service
// matches it with errors.Is and retries on a fresh read, never by the
// reason's text.
var ErrChanged = errors.New("the conversation changed since it was read")
