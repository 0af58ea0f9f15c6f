// Package consultations is the consultation protocol of seed 002: an agent
// asks for help, the orchestrator (this service) chooses the specialist
// through the ExpertGate (a suggestion is a signal, never a command),
// curates a small context package with secrets redacted, asks the
// specialist through the model port, and logs every exchange with its
// tokens and cost. Loop detection runs before every exchange; a detected
// loop escalates the consultation to a human, who answers through an
// escalation (the answer reaches the requester's inbox). Outcomes become
// shared memories that later context packages draw on.
//
// Asked from a chat reply or a task (consult_specialist), the specialist
// answers in a task of its own and nothing waits for it (async.go).
// Through POST /v1/consultations, and for every follow-up, the specialist
// answers within the request (synchronously): one model call bounded by
// AnswerTimeout fits the 29 s function limit, and nothing is left
// half-done when the call ends; a failed or timed-out answer escalates the consultation
// (specialist_failed) instead of leaving it pending. The writes after the
// call are detached from the caller's deadline (writeTimeout), so a caller
// that ran out of time still leaves the consultation escalated, not
// pending with its slot held.
//
// A consultation holds one of its requester's MaxActivePerAgent slots only
// while an answer is being written (pending: the question; in_progress: a
// follow-up): the transaction that saves the answer also marks it
// completed and gives the slot back (seed 002: "orchestrator routes
// question, gets answer, returns to requester"). A follow-up reopens a
// completed consultation to in_progress and takes a slot again, on the
// counter's condition, in the transaction that reopens it. An escalation
// gives back the slot its consultation held in the transaction that
// escalates it. Every slot change is in a transaction conditioned on the
// consultation's version, so each is taken and given back exactly once.
//
// A consultation left active (its request cut off after the create or the
// reopen, past writeTimeout) holds its slot only while it is fresh: after
// IdleLimit without a change it no longer counts as a wait (circular
// detection ignores it), and it is closed (completed, closed_reason
// idle), releasing its slot, when its requester next needs the slot.
// Closing lazily fits the slot counter: the counter (one item per agent)
// is the truth the create transaction is conditioned on, so the slot can
// only be given back by a write that also closes the consultation; a
// sweeper would need an index of active consultations across teams that
// nothing else needs.
package consultations

import (
	"context"
	"errors"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/team/messaging"
)

// Status is a consultation's state.
type Status string

// Statuses. A consultation is pending while the specialist is asked its
// question, completed once answered (by the specialist, or by a human
// after an escalation; it may be rated, and one the specialist answered
// takes follow-ups until it is rated), in_progress while a follow-up that
// reopened it is being answered, and escalated when a loop (or a failed
// specialist) handed it to a human.
const (
	Pending    Status = "pending"
	InProgress Status = "in_progress"
	Completed  Status = "completed"
	Escalated  Status = "escalated"
)

// Statuses lists every status, for validation.
var Statuses = []Status{Pending, InProgress, Completed, Escalated}

// Active reports whether s counts against the requester's active limit:
// an answer is being written.
func (s Status) Active() bool { return s == Pending || s == InProgress }

// ClosedIdle is the closed_reason of a consultation the service closed
// because it stayed active longer than IdleLimit without a change.
const ClosedIdle = "idle"

// ReasonActiveLimit is the reason of the conflict a follow-up meets when
// its requester already has MaxActivePerAgent active consultations: the
// name tasks give the same kind of limit (an agent's active work).
const ReasonActiveLimit = "ConcurrencyLimit"

// GeneralReason is the consultation_reason when the chosen specialist
// matched none of its skills (the gate chose on its other signals).
const GeneralReason = "general"

// Urgencies.
var Urgencies = []string{"low", "normal", "high", "critical"}

// Loop types (seed 002 §4), and the escalation a failed specialist causes.
const (
	LoopIdentical        = "identical_questions"
	LoopCircular         = "circular_dependency"
	LoopStall            = "stall"
	LoopTooManyActive    = "too_many_concurrent"
	EscalSpecialistError = "specialist_failed"
)

// Limits (seed 002 §4 COLLABORATION_LIMITS and the request's sizes).
const (
	MaxExchanges = 5
	// IdleLimit is how long an active consultation may go without a
	// change and still count as an answer being written: far longer than
	// an answer takes (AnswerTimeout plus writeTimeout), so only one whose
	// request was cut off passes it.
	IdleLimit = 30 * time.Minute
	// MaxActivePerAgent is the product's "3 active consultations per
	// agent": a conditional counter enforces it.
	MaxActivePerAgent = 3
	// IdenticalThreshold is the similarity above which two questions are
	// the same question; IdenticalRepeats is the count (this one included)
	// that is a loop, within IdenticalWindow.
	IdenticalThreshold = 0.95
	IdenticalRepeats   = 3
	IdenticalWindow    = time.Hour

	MaxQuestion   = 4000
	MaxField      = 2000 // current_task, specific_concern
	MaxListItems  = 10   // attempted_approaches, relevant_files, error_messages
	MaxListItem   = 1000
	MaxAnswer     = 8000 // a human's answer
	MaxLessons    = 1500
	SimilarPast   = 3
	MaxMemories   = 5
	AnswerTimeout = 20 * time.Second
	// writeTimeout bounds the writes after the specialist's call, which
	// run even when the caller's own deadline has passed: one
	// transaction takes tens of milliseconds, and a chat turn keeps
	// seconds after its tools for its reply and commit.
	writeTimeout = 2 * time.Second
	// maxAnswerTokens bounds the specialist's answer.
	maxAnswerTokens = 1024
	// historyLimit bounds the consultations read for loops, similarity
	// and metrics (newest first).
	historyLimit = 1000
)

// DetailType is the event an escalation publishes.
const DetailType = "ConsultationEscalated"

// RequestContext is the requester's context (seed 002 §1).
type RequestContext struct {
	CurrentTask         string   `json:"current_task,omitempty"`
	SpecificConcern     string   `json:"specific_concern,omitempty"`
	AttemptedApproaches []string `json:"attempted_approaches"`
	RelevantFiles       []string `json:"relevant_files"`
	ErrorMessages       []string `json:"error_messages"`
}

// Answer is the specialist's (or the human's) response.
type Answer struct {
	Answer            string `json:"answer"`
	AdditionalContext string `json:"additional_context,omitempty"`
	CodeReference     string `json:"code_reference,omitempty"`
}

// Candidate is one agent the gate scored for the question.
type Candidate struct {
	Slug    string   `json:"slug"`
	Score   float64  `json:"score"`
	Bonus   float64  `json:"bonus,omitempty"`
	Total   float64  `json:"total"`
	Matched []string `json:"matching_skills"`
}

// Decision records why the specialist was chosen and what became of the
// suggestion.
type Decision struct {
	Selected        string      `json:"selected"`
	Suggested       string      `json:"suggested,omitempty"`
	SuggestionTaken bool        `json:"suggestion_taken"`
	Reason          string      `json:"reason"`
	Candidates      []Candidate `json:"candidates"`
}

// PastResolution is a similar past consultation in a context package.
type PastResolution struct {
	ConsultationID string  `json:"consultation_id"`
	Question       string  `json:"question"`
	Resolution     string  `json:"resolution"`
	Similarity     float64 `json:"similarity"`
	Why            string  `json:"why"`
}

// MemoryRef is a shared memory in a context package.
type MemoryRef struct {
	MemoryID   string  `json:"memory_id"`
	Content    string  `json:"content"`
	Similarity float64 `json:"similarity"`
	Why        string  `json:"why"`
}

// ContextPackage is what the specialist sees beside the question: the
// request's own fields, similar past resolutions and relevant shared
// memories, all redacted; Included says what is in it and why, Redactions
// how many secrets of each kind were removed (from the request and the
// package).
type ContextPackage struct {
	RequestingAgent string           `json:"requesting_agent"`
	Context         RequestContext   `json:"context"`
	SimilarPast     []PastResolution `json:"similar_past"`
	Memories        []MemoryRef      `json:"memories"`
	Included        []string         `json:"included"`
	Redactions      map[string]int   `json:"redactions"`
}

// Exchange is one round: the requester's question (the first) or
// clarification (a follow-up), and the specialist's response, with the
// round's tokens and cost.
type Exchange struct {
	Number     int       `json:"number"`
	Type       string    `json:"type"` // question, clarification
	From       string    `json:"from"`
	To         string    `json:"to"`
	Message    string    `json:"message"`
	Response   string    `json:"response"`
	TokensUsed int       `json:"tokens_used"`
	CostUSD    float64   `json:"cost_usd"`
	ResponseMS int64     `json:"response_ms"`
	CreatedAt  time.Time `json:"created_at"`
}

// Loop is a detected loop (or failed specialist) and its evidence.
type Loop struct {
	Type       string         `json:"type"`
	Evidence   map[string]any `json:"evidence"`
	DetectedAt time.Time      `json:"detected_at"`
}

// Outcome is the requester's verdict.
type Outcome struct {
	Rating         int       `json:"rating"`
	LessonsLearned string    `json:"lessons_learned,omitempty"`
	MemoryID       string    `json:"memory_id,omitempty"`
	RecordedAt     time.Time `json:"recorded_at"`
}

// Consultation is one help request (the seed's response format plus its
// tracking).
type Consultation struct {
	TeamID          string         `json:"-"`
	ID              string         `json:"collaboration_id"`
	Status          Status         `json:"status"`
	RequestingAgent string         `json:"requesting_agent"`
	ConsultedAgent  string         `json:"consulted_agent"`
	Question        string         `json:"question"`
	Context         RequestContext `json:"context"`
	SuggestedAgent  string         `json:"suggested_agent,omitempty"`
	Urgency         string         `json:"urgency"`
	// ConversationID is the conversation the consultation was asked from
	// (a chat reply's, or the one POST /v1/consultations names), if any:
	// it is listed among the conversation's work.
	ConversationID string `json:"conversation_id,omitempty"`
	// TaskID is the specialist's task that answers a consultation asked
	// from a chat reply or a task (asynchronously: see Request); empty
	// when the specialist answered within the request.
	TaskID string `json:"task_id,omitempty"`
	// ConsultationReason is what the consultation is about (seed 002's
	// consultation_reason): the chosen specialist's best-matching skill,
	// set by the orchestrator (GeneralReason when none matched), so the
	// metrics' success rate by reason needs no free text from the
	// requester.
	ConsultationReason string         `json:"consultation_reason"`
	Decision           Decision       `json:"decision"`
	Response           *Answer        `json:"response"`
	SuggestedNextSteps []string       `json:"suggested_next_steps"`
	ContextPackage     ContextPackage `json:"context_package"`
	Exchanges          []Exchange     `json:"exchanges"`
	Loop               *Loop          `json:"loop,omitempty"`
	EscalationID       string         `json:"escalation_id,omitempty"`
	ResolvedBy         string         `json:"resolved_by,omitempty"` // specialist, remote (a specialist outside the team: an A2A agent), human
	// ClosedReason is ClosedIdle when the service closed the consultation
	// after IdleLimit without a change.
	ClosedReason string     `json:"closed_reason,omitempty"`
	Outcome      *Outcome   `json:"outcome,omitempty"`
	TokensUsed   int        `json:"tokens_used"`
	CostUSD      float64    `json:"cost_usd"`
	Version      int        `json:"version"`
	CreatedAt    time.Time  `json:"created_at"`
	UpdatedAt    time.Time  `json:"updated_at"`
	CompletedAt  *time.Time `json:"completed_at,omitempty"`
}

// Stale reports whether c is active but has had no change for longer than
// IdleLimit at now: the request writing its answer was cut off.
func (c Consultation) Stale(now time.Time) bool {
	return c.Status.Active() && now.Sub(c.UpdatedAt) > IdleLimit
}

// Reason is c's consultation_reason; for a consultation stored before the
// field existed, it is derived from the decision the same way.
func (c Consultation) Reason() string {
	if c.ConsultationReason != "" {
		return c.ConsultationReason
	}
	return reasonOf(c.Decision)
}

func reasonOf(d Decision) string {
	for _, cand := range d.Candidates {
		if cand.Slug == d.Selected && len(cand.Matched) > 0 {
			return cand.Matched[0]
		}
	}
	return GeneralReason
}

// EscalationStatus is an escalation's state.
type EscalationStatus string

// Escalation statuses.
const (
	EscalationOpen     EscalationStatus = "open"
	EscalationResolved EscalationStatus = "resolved"
)

// Escalation hands a consultation, or an overdue task, to a human. Type
// is a loop type (a consultation's: ConsultationID, the agents and the
// question are set) or tasks.EscalationTypeOverdue (a task's: TaskID is
// set, and the task service writes and resolves it with the task).
type Escalation struct {
	TeamID          string           `json:"-"`
	ID              string           `json:"id"`
	ConsultationID  string           `json:"consultation_id,omitempty"`
	TaskID          string           `json:"task_id,omitempty"`
	RequestingAgent string           `json:"requesting_agent,omitempty"`
	ConsultedAgent  string           `json:"consulted_agent,omitempty"`
	Question        string           `json:"question,omitempty"`
	Type            string           `json:"type"`
	Evidence        map[string]any   `json:"evidence"`
	Status          EscalationStatus `json:"status"`
	Resolution      string           `json:"resolution,omitempty"`
	ResolvedBy      string           `json:"resolved_by,omitempty"`
	// Action is what resolving a task's escalation did to the task
	// (tasks.ResolveCancel, tasks.ResolveRequeue; empty: nothing).
	Action     string     `json:"action,omitempty"`
	MessageID  string     `json:"message_id,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	ResolvedAt *time.Time `json:"resolved_at,omitempty"`
}

// EscalatedEvent is the ConsultationEscalated detail.
type EscalatedEvent struct {
	TeamID          string    `json:"team_id"`
	EscalationID    string    `json:"escalation_id"`
	ConsultationID  string    `json:"consultation_id"`
	RequestingAgent string    `json:"requesting_agent"`
	ConsultedAgent  string    `json:"consulted_agent"`
	Type            string    `json:"type"`
	Urgency         string    `json:"urgency"`
	CreatedAt       time.Time `json:"created_at"`
}

// Filter narrows a listing: Agent matches the requester or the specialist.
type Filter struct {
	Status Status
	Agent  string
}

// Errors of the store the service turns into domain outcomes.
var (
	// ErrActiveLimit: the requester already has MaxActivePerAgent active
	// consultations (the counter's condition failed).
	ErrActiveLimit = errors.New("the agent has too many active consultations")
	// ErrChanged: the consultation changed since it was read.
	ErrChanged = errors.New("the consultation changed since it was read")
)

// Save is one change of a consultation, written in one transaction. At
// most one of Release and Acquire is set.
type Save struct {
	Consultation Consultation
	// Release decrements the requester's active counter and removes the
	// consultation's id from it (the consultation left
	// pending/in_progress).
	Release bool
	// Acquire, when above 0, increments the requester's active counter
	// and records the consultation's id there, conditioned on the counter
	// being below Acquire (else ErrActiveLimit): the consultation
	// re-entered in_progress (a follow-up reopened it).
	Acquire int
	// Escalation, when set, is created.
	Escalation *Escalation
	// Memory, when set, is created (an outcome's lessons).
	Memory *memory.Memory
}

// Store persists consultations and escalations.
type Store interface {
	// CreateConsultation stores a new active consultation and increments
	// its requester's active counter (recording the consultation's id
	// there), conditioned on the counter being below limit (else
	// ErrActiveLimit), in one transaction.
	CreateConsultation(ctx context.Context, c Consultation, limit int) error
	// ActiveConsultations returns the ids of the consultations that hold
	// agent's slots as its counter records them: a create adds the id and
	// a release removes it, in the same transactions as the count.
	ActiveConsultations(ctx context.Context, teamID, agent string) ([]string, error)
	// CreateEscalated stores a new consultation that is escalated from the
	// start, with its escalation (the counter is not touched).
	CreateEscalated(ctx context.Context, c Consultation, e Escalation) error
	// GetConsultation returns ENOTFOUND for a consultation not in the team.
	GetConsultation(ctx context.Context, teamID, id string) (Consultation, error)
	// ListConsultations returns consultations newest first.
	ListConsultations(ctx context.Context, teamID string, f Filter, p paging.Page) ([]Consultation, string, error)
	// SaveConsultation writes s.Consultation if the stored one is still at
	// version Version-1 (else ErrChanged, whatever else failed), with the
	// writes s names (ErrActiveLimit when Acquire's condition fails).
	SaveConsultation(ctx context.Context, s Save) error
	// GetEscalation returns ENOTFOUND for an escalation not in the team.
	GetEscalation(ctx context.Context, teamID, id string) (Escalation, error)
	// ListEscalations returns the team's escalations with status st
	// newest first.
	ListEscalations(ctx context.Context, teamID string, st EscalationStatus, p paging.Page) ([]Escalation, string, error)
	// ResolveEscalation marks e resolved (if still open, else ECONFLICT),
	// writes c (version-conditioned, else ErrChanged) and stores msg in
	// the requester's inbox, in one transaction.
	ResolveEscalation(ctx context.Context, e Escalation, c Consultation, msg messaging.Message) error
}

// Conversations checks the conversation a consultation is asked from.
type Conversations interface {
	// CheckConversation returns ENOTFOUND unless id is a conversation of
	// the team.
	CheckConversation(ctx context.Context, teamID, id string) error
}

// Directory reads the team's agents.
type Directory interface {
	TeamAgents(ctx context.Context, teamID string) ([]agents.Agent, error)
}

// Gate scores agents for a question (the ExpertGate: New).
type Gate interface {
	// include names agents to score wherever they rank (the suggested
	// agent), beyond the best the gate answers.
	Score(ctx context.Context, teamID, query string, candidates []agents.Agent, include ...string) ([]routing.ExpertScore, error)
}

// Memories reads the team's memories (newest first).
type Memories interface {
	RecentMemories(ctx context.Context, teamID string, limit int) ([]memory.Memory, error)
}

// Publisher puts domain events on the bus.
type Publisher interface {
	Publish(ctx context.Context, detailType string, detail any) error
}

// Who answered a consultation (Consultation.ResolvedBy).
const (
	ResolvedBySpecialist = "specialist"
	// ResolvedByRemote: a specialist outside the team (an A2A agent)
	// answered; the requester's model reads its answer as untrusted data.
	ResolvedByRemote = "remote"
	ResolvedByHuman  = "human"
)
