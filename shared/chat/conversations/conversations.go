// Package conversations owns chat: conversations with their participants
// and attributed messages, handoffs and returns, and the turn that has a
// user's message routed (shared/routing/cascade decides who answers, per the
// feature flags), runs the agents chosen and records the turn and its
// routing decision in one transaction.
//
// The service is built once by New from a Config: its required parts are
// checked there and every optional part's absence is decided there
// (config.go). A turn (Post) is a pipeline of stages with typed hand-offs
// (read, route, plan, answer, commit, after-commit effects; turn.go), so
// each step reads on its own. An agent's prompt is written from its
// context read once through one port, ContextSources (context.go), so
// the turn neither makes a round trip per source nor imports the work
// wing. What follows a commit is a list of effects under one deadline
// policy (effects.go, deadline.go).
package conversations

import (
	"context"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/team/memory"
)

// Conversation statuses.
const (
	StatusOpen   = "open"
	StatusClosed = "closed"
)

// Participant roles.
const (
	RolePrimary       = "primary"        // the conversation's agent from the start
	RoleInvited       = "invited"        // joined because routing picked it
	RoleHandoffSource = "handoff_source" // was primary before a handoff
)

// Message roles.
const (
	AuthorUser      = "user"
	AuthorAssistant = "assistant"
	AuthorSystem    = "system"
)

// Conversation is one chat thread of a team.
type Conversation struct {
	ID           string        `json:"id"`
	TeamID       string        `json:"-"`
	Title        string        `json:"title"`
	Owner        string        `json:"owner,omitempty"` // the user who started it (owner.go); empty for a key's own
	PrimaryAgent string        `json:"primary_agent,omitempty"`
	CurrentAgent string        `json:"current_agent,omitempty"`
	Status       string        `json:"status"`
	MessageCount int           `json:"message_count"`
	Version      int           `json:"version"`
	CreatedAt    time.Time     `json:"created_at"`
	UpdatedAt    time.Time     `json:"updated_at"`
	Participants []Participant `json:"participants,omitempty"`
	// HandoffActive: the conversation was handed to its current agent, so
	// it answers until the next handoff, return or @mention (no routing).
	HandoffActive bool `json:"handoff_active"`
	// PreviousAgent is where a return goes: the agent before the last
	// handoff.
	PreviousAgent string   `json:"previous_agent,omitempty"`
	LastHandoff   *Handoff `json:"last_handoff,omitempty"`
	// EventSeq is the last sequence number of the conversation's stream
	// (streams.Conversation): one event per stored message (MessageEvent).
	// A change that stores messages moves it on by their number, as
	// MessageCount, and is written under the version condition.
	EventSeq int64 `json:"-"`
}

// Handoff kinds.
const (
	KindHandoff = "handoff"
	KindReturn  = "return"
)

// Handoff is one transfer of a conversation between agents.
type Handoff struct {
	ID             string    `json:"id"`
	ConversationID string    `json:"conversation_id"`
	From           string    `json:"from"`
	To             string    `json:"to"`
	Kind           string    `json:"kind"`
	Reason         string    `json:"reason"`
	ContextSummary string    `json:"context_summary,omitempty"`
	MemoryID       string    `json:"memory_id,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
}

// HandoffEvent is the HandoffCompleted detail.
type HandoffEvent struct {
	TeamID         string    `json:"team_id"`
	ConversationID string    `json:"conversation_id"`
	HandoffID      string    `json:"handoff_id"`
	From           string    `json:"from"`
	To             string    `json:"to"`
	Kind           string    `json:"kind"`
	Reason         string    `json:"reason"`
	CreatedAt      time.Time `json:"created_at"`
}

// HandoffDetailType is the event a committed handoff publishes.
const HandoffDetailType = "HandoffCompleted"

// RejoinedDetailType is the event a turn publishes for each agent it
// re-joined: removed from the conversation, then @mentioned.
const RejoinedDetailType = "ParticipantRejoined"

// RejoinedEvent is the ParticipantRejoined detail.
type RejoinedEvent struct {
	TeamID         string    `json:"team_id"`
	ConversationID string    `json:"conversation_id"`
	Agent          string    `json:"agent"`
	MessageID      string    `json:"message_id"`
	DecisionID     string    `json:"decision_id"`
	CreatedAt      time.Time `json:"created_at"`
}

// Participant is an agent taking part in a conversation.
type Participant struct {
	Agent    string     `json:"agent"`
	Role     string     `json:"role"`
	JoinedAt time.Time  `json:"joined_at"`
	LeftAt   *time.Time `json:"left_at,omitempty"`
	// SetRole makes a write replace the role (a handoff or return changes
	// it); otherwise a participant keeps its first role.
	SetRole bool `json:"-"`
}

// Message is one message of a conversation, attributed to the user, the
// system, or the agent that wrote it.
type Message struct {
	ID             string    `json:"id"`
	ConversationID string    `json:"conversation_id"`
	Role           string    `json:"role"`
	Agent          string    `json:"agent,omitempty"`
	Content        string    `json:"content"`
	CreatedAt      time.Time `json:"created_at"`
	// Agent replies: the user message answered, the decision that routed
	// it, and what the reply cost.
	ReplyTo      string   `json:"reply_to,omitempty"`
	DecisionID   string   `json:"decision_id,omitempty"`
	Strategy     string   `json:"strategy,omitempty"`
	Contributors []string `json:"contributors,omitempty"`
	ModelID      string   `json:"model_id,omitempty"`
	InputTokens  int      `json:"input_tokens,omitempty"`
	OutputTokens int      `json:"output_tokens,omitempty"`
	CostUSD      float64  `json:"cost_usd,omitempty"`
	LatencyMS    int64    `json:"latency_ms,omitempty"`
	Rating       int      `json:"rating,omitempty"`
	// ContextMemories are the memories the agent's context held for this
	// reply (shared, user profile and its private ones).
	ContextMemories []string `json:"context_memories,omitempty"`
	// ResultOf marks a message posted into the conversation when work
	// linked to it ended (a delegated task, a report, a session): the
	// work, and its final status. The message is attributed to the agent
	// that did the work.
	ResultOf *WorkRef `json:"result_of,omitempty"`
	// ToolCalls are the tools the agent called for this reply, in order,
	// with what each answered; Stopped says why the loop ended early
	// (StoppedToolCalls, StoppedTokens), if it did.
	ToolCalls []ToolUse `json:"tool_calls,omitempty"`
	Stopped   string    `json:"stopped,omitempty"`
	// Pending is the work a reply started that was still running when the
	// turn had to answer; each result is posted into the conversation when
	// it ends (ResultOf).
	Pending []WorkRef `json:"pending,omitempty"`
	// Query is the user message an agent reply answered; feedback on the
	// reply is stored with it so past performance can match similar queries.
	Query string `json:"-"`
}

// WorkRef names work linked to a conversation: Type is "task", "report"
// or "session".
type WorkRef struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Status string `json:"status,omitempty"`
	// Agent is who does (or did) the work.
	Agent string `json:"agent,omitempty"`
}

// Turn is everything one user message changes, committed at once: the
// conversation (conditioned on the version read), the new messages, the
// participants that joined, the agents' conversation counters and the
// routing decision.
type Turn struct {
	// Conversation is the new state: Version is the one read + 1, and
	// EventSeq the one read + len(Messages) (each message's event is
	// written with the turn, numbered up to it: MessageEvents).
	Conversation Conversation
	PrevCurrent  string // current agent before the turn
	Messages     []Message
	Join         []Participant
	Decision     cascade.Decision
	// Handoff and Memory are set when the turn returned the conversation
	// to its previous agent ("@kyra", "go back to Kyra"): the return's
	// record and episodic memory (its note is among Messages, its roles
	// among Join), the same writes as POST …/return. With a memory, the
	// two agents' cached contexts are dropped.
	Handoff *Handoff
	Memory  *memory.Memory
	// Latency is the new moving average of each answering agent's reply
	// latency (ms), the gate's load signal, written with the turn.
	Latency map[string]float64
	// Carried is the work whose result the turn's reply carries (a
	// delegation it waited for). Each one's result marker, the one the
	// result poster writes with a posted result, is written with the turn
	// on the condition that it is absent. So the result is in the
	// conversation once whatever the commit's fate: a post made after a
	// commit that failed, even one cut off in flight, finds the marker if
	// the commit applied, and a commit still in flight is refused if the
	// post came first.
	Carried []CarriedResult
	// IdempotencyKey is the request's Idempotency-Key (idempotency.KeyFor;
	// "" without one): the store writes, with the turn, a reference from
	// it to the turn's messages, and refuses a second turn under the key
	// with Replayed, so a message sent again after its answer was lost
	// (OutcomeUnknown) is answered with the turn that was stored.
	IdempotencyKey string
}

// CarriedResult is one piece of work whose result a turn's message
// carries. Marker is the work's result marker (a task's id, as
// ResultPoster marks it).
type CarriedResult struct {
	Marker    string
	MessageID string
}

// HandoffChange is a handoff or return committed at once: the
// conversation, the record, the note in the conversation (and its event,
// Conversation.EventSeq being the one read + 1), the participants' roles,
// the agents' counters, the shared episodic memory, and the two agents'
// cached contexts dropped.
type HandoffChange struct {
	Conversation Conversation
	PrevCurrent  string
	Handoff      Handoff
	Note         Message
	Roles        []Participant
	Memory       *memory.Memory
}

// Feedback is a rating of an agent's reply.
type Feedback struct {
	ConversationID string    `json:"conversation_id"`
	MessageID      string    `json:"message_id"`
	Rating         int       `json:"rating"`
	Comment        string    `json:"comment,omitempty"`
	Agents         []string  `json:"agents"`
	Query          string    `json:"-"`
	RatedAt        time.Time `json:"rated_at"`
	// UserID is the person who rated ("" for a key): routing weighs a
	// person's own ratings more when they ask (routing.OwnRatingWeight).
	UserID string `json:"user_id,omitempty"`
}

// Store persists conversations; every method is scoped by team.
type Store interface {
	// CreateConversation stores c and its primary participant (if any) and
	// counts the conversation for its current agent.
	CreateConversation(ctx context.Context, c Conversation, primary *Participant) error
	GetConversation(ctx context.Context, teamID, id string) (Conversation, error)
	// ListConversations returns the team's conversations, newest first:
	// owner's only when owner is set (a page may then hold fewer than
	// its limit and still have a next token).
	ListConversations(ctx context.Context, teamID, owner string, p paging.Page) ([]Conversation, string, error)
	// ListAgentConversations returns the conversations agent took part
	// in (every conversation it joined, whether it left since or not),
	// newest first.
	ListAgentConversations(ctx context.Context, teamID, agent string, p paging.Page) ([]Conversation, string, error)
	ListParticipants(ctx context.Context, teamID, id string) ([]Participant, error)
	// ListMessages returns messages oldest first.
	ListMessages(ctx context.Context, teamID, id string, p paging.Page) ([]Message, string, error)
	// RecentMessages returns the last n messages, oldest first.
	RecentMessages(ctx context.Context, teamID, id string, n int) ([]Message, error)
	GetMessage(ctx context.Context, teamID, convID, msgID string) (Message, error)
	// CommitTurn writes the turn with its routing decision (read back
	// through cascade.Store). Returns ECONFLICT (reason
	// ConversationChanged) when the conversation moved on since it was
	// read, or was closed.
	CommitTurn(ctx context.Context, teamID string, t Turn) error
	CloseConversation(ctx context.Context, teamID string, c Conversation, at time.Time) error
	// RateMessage sets the rating on an agent reply and stores one rating
	// per contributing agent for past performance.
	RateMessage(ctx context.Context, teamID string, f Feedback) error
	// CommitHandoff returns ECONFLICT (reason ConversationChanged) when the
	// conversation moved on since it was read.
	CommitHandoff(ctx context.Context, teamID string, h HandoffChange) error
	ListHandoffs(ctx context.Context, teamID, convID string) ([]Handoff, error)
	// SetParticipants adds and removes agents of an open conversation;
	// removing one that is not an active participant is ENOTFOUND.
	SetParticipants(ctx context.Context, teamID, convID string, add []Participant, remove []string, at time.Time) error
}
