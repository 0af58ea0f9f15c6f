package conversations

import (
	"strings"

	"github.com/conclave-ai/conclave/shared/routing/cascade"
)

// Watcher sees a turn while it runs: a streamed turn (the streams function,
// docs/streaming.md) writes what it sees as Server-Sent Events. It is
// called from the turn's goroutines (the agents of a TOP_K or ENSEMBLE turn
// answer at once), so it must be safe for concurrent use, and it must not
// block: the turn waits for it. What it sees changes nothing of the turn,
// which is committed exactly as an unwatched one.
type Watcher interface {
	// Routed is the routing decision, as soon as it is made.
	Routed(d cascade.Decision)
	// Delta is a piece of an answer's text as the model writes it.
	Delta(d Delta)
	// ToolCalled and ToolAnswered are a tool call of an answer, before it
	// runs and with its output.
	ToolCalled(t ToolEvent)
	ToolAnswered(t ToolEvent)
}

// Delta is a piece of an answer. The deltas of a stored message, in order,
// concatenate to the beginning of its content; what a turn adds after the
// model's last word (a note of work still running) the watcher adds from
// the stored reply.
type Delta struct {
	MessageID string `json:"message_id"`
	Agent     string `json:"agent"`
	Text      string `json:"text"`
	// Draft: one of several answers asked at once (TOP_K, ENSEMBLE): the
	// turn keeps one of them (TOP_K) or a synthesis under its own id
	// (ENSEMBLE); the reply event says which message is stored.
	Draft bool `json:"draft,omitempty"`
}

// ToolEvent is a tool call of an answer.
type ToolEvent struct {
	MessageID string `json:"message_id"`
	Agent     string `json:"agent"`
	CallID    string `json:"call_id"`
	Tool      string `json:"tool"`
	Input     string `json:"input"`
	Output    string `json:"output,omitempty"`
}

// deltaSink is the model request's OnDelta for one answer (nil unwatched).
func deltaSink(w Watcher, msgID, agent string, draft bool) func(string) {
	if w == nil {
		return nil
	}
	return func(text string) {
		if text != "" {
			w.Delta(Delta{MessageID: msgID, Agent: agent, Text: text, Draft: draft})
		}
	}
}

// replySeparator joins what an agent said before its tool calls to what it
// says after them, in the stored reply as in its deltas.
const replySeparator = "\n\n"

// spoken is the whole text of a tool loop's answer: every model call's
// text that was not empty, joined, so the stored reply is what the user
// watched being written.
func spoken(said []string, last string) string {
	if last != "" {
		said = append(said, last)
	}
	return strings.Join(said, replySeparator)
}
