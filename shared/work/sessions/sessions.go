// Package sessions is the collaboration session: several agents working
// toward one goal in one of five patterns (supervisor-worker, pipeline,
// peer review, brainstorm, consensus), each run by its own Standard state
// machine (statemachines/<pattern>.asl.json). The package holds the session
// record, the validation of a new session, the structured protocol every
// message between participants must follow (seed 003, phase 11), the caps
// (cost, rounds, duration) and the steps the machines call. Every stage an
// agent works on is a task of the task model (shared/work/tasks), so the
// delegation limits (depth, five active tasks per agent, budgets) hold
// inside sessions too. It imports no AWS SDK; its ports are below.
package sessions

import (
	"fmt"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/streams"
)

// Pattern is how the participants work together.
type Pattern string

// The patterns; each has its state machine of the same name.
const (
	SupervisorWorker Pattern = "supervisor_worker"
	Pipeline         Pattern = "pipeline"
	PeerReview       Pattern = "peer_review"
	Brainstorm       Pattern = "brainstorm"
	Consensus        Pattern = "consensus"
)

// Patterns lists every pattern.
var Patterns = []Pattern{SupervisorWorker, Pipeline, PeerReview, Brainstorm, Consensus}

// Status is a session's lifecycle state.
type Status string

// Statuses.
const (
	Planning         Status = "planning"
	Active           Status = "active"
	Synthesizing     Status = "synthesizing"
	AwaitingApproval Status = "awaiting_approval"
	Completed        Status = "completed"
	Failed           Status = "failed"
	TimedOut         Status = "timed_out"
	Cancelled        Status = "cancelled"
)

// Statuses lists every status, for validation.
var Statuses = []Status{Planning, Active, Synthesizing, AwaitingApproval, Completed, Failed, TimedOut, Cancelled}

// Terminal reports whether s never changes again (resume starts a new run
// of a failed or timed-out session; it is not a transition of the old).
func (s Status) Terminal() bool {
	return s == Completed || s == Failed || s == TimedOut || s == Cancelled
}

// Running reports whether an execution is working on the session.
func (s Status) Running() bool { return s == Active || s == Synthesizing }

// Roles of a participant.
const (
	RoleWorker      = "worker"
	RoleReviewer    = "reviewer"
	RoleContributor = "contributor"
)

// Participant statuses.
const (
	PartWaiting = "waiting"
	// PartWaitingForSlot: the agent holds its five tasks; its stage waits
	// in line for a slot (SlotWaits).
	PartWaitingForSlot = "waiting_for_slot"
	PartWorking        = "working"
	PartCompleted      = "completed"
	PartFailed         = "failed"
)

// Approval modes.
const (
	ApprovalNone  = "none"
	ApprovalFinal = "final"
)

// The caps: defaults and maxima of a session.
const (
	MaxDurationSeconds = 600
	MaxCostUSD         = 0.50
	MaxRounds          = 5
	// SweepGrace is how long past its deadline an unfinished session may
	// stay before the sweeper ends it timed_out (a Catch does not run when
	// the execution itself times out).
	SweepGrace = 15 * time.Second
	// ApprovalWaitSeconds is how long a session waits for a human.
	ApprovalWaitSeconds = 7 * 24 * 3600
)

// Status reasons (status_reason) that clients can match on.
const (
	ReasonBudget     = "BudgetExhausted"
	ReasonRounds     = "MaxRoundsReached"
	ReasonTimeout    = "DeadlineExceeded"
	ReasonRejected   = "RejectedByHuman"
	ReasonCancelled  = "CancelledByUser"
	ReasonProtocol   = "ProtocolViolation"
	ReasonStage      = "StageFailed"
	ReasonNoMajority = "NoConsensus"
)

// Participant is one agent of a session.
// SlotWait is a stage's wait for a slot of its agent (shared/work/tasks,
// slots.go): the workflow waited at no cost until a release handed one
// over; GrantedAt is unset while it waits (or when it never came).
type SlotWait struct {
	Agent     string     `json:"agent"`
	Stage     string     `json:"stage"`
	Since     time.Time  `json:"since"`
	GrantedAt *time.Time `json:"granted_at,omitempty"`
}

type Participant struct {
	Agent  string `json:"agent"`
	Role   string `json:"role"`
	Stage  int    `json:"stage,omitempty"`
	TaskID string `json:"task_id,omitempty"`
	Status string `json:"status"`
}

// StageOutput is what one agent produced at one stage. Key identifies the
// stage within the session ("work:1", "critique:2:luke", …): a stage whose
// key already has an output is not run again (retries, resume).
type StageOutput struct {
	Key             string  `json:"key"`
	Stage           int     `json:"stage"`
	Round           int     `json:"round,omitempty"`
	Kind            string  `json:"kind"`
	Agent           string  `json:"agent"`
	TaskID          string  `json:"task_id,omitempty"`
	Output          string  `json:"output"`
	Tokens          int     `json:"tokens"`
	CostUSD         float64 `json:"cost_usd"`
	DurationSeconds float64 `json:"duration_seconds"`
	// Data is the structured part of a critique or a vote.
	Data map[string]any `json:"data,omitempty"`
	// Remote marks the output of an agent outside the team (an A2A
	// agent): the next agents' prompts fence it as untrusted data.
	Remote bool `json:"remote,omitempty"`
}

// RemoteWait is a stage of an agent outside the team whose A2A task runs
// while the session's machine waits (remote.go): the stage's task, the
// remote task, how often it was read and when it was sent (the stage's
// budget runs from then). It is dropped when the stage ends.
type RemoteWait struct {
	Key          string    `json:"stage"`
	Agent        string    `json:"agent"`
	TaskID       string    `json:"task_id"`
	RemoteTaskID string    `json:"remote_task_id"`
	Attempt      int       `json:"attempt"`
	Polls        int       `json:"polls"`
	Tokens       int       `json:"tokens"`
	SentAt       time.Time `json:"sent_at"`
}

// Session is one collaboration.
type Session struct {
	TeamID             string        `json:"-"`
	ID                 string        `json:"id"`
	ConversationID     string        `json:"conversation_id,omitempty"`
	Pattern            Pattern       `json:"pattern"`
	Lead               string        `json:"lead"`
	Goal               string        `json:"goal"`
	Context            string        `json:"context,omitempty"`
	Participants       []Participant `json:"participants"`
	MaxDurationSeconds int           `json:"max_duration_seconds"`
	MaxCostUSD         float64       `json:"max_cost_usd"`
	MaxRounds          int           `json:"max_rounds"`
	Approval           string        `json:"approval"`
	Status             Status        `json:"status"`
	StatusReason       string        `json:"status_reason,omitempty"`
	CurrentStage       string        `json:"current_stage,omitempty"`
	StagesCompleted    int           `json:"stages_completed"`
	Rounds             int           `json:"rounds"`
	TotalCostUSD       float64       `json:"total_cost_usd"`
	ModelCalls         int           `json:"model_calls"`
	Tokens             int           `json:"tokens"`
	// BudgetExhausted is set by the charge that would have crossed the
	// cap; no model call is made for the session after it.
	BudgetExhausted bool          `json:"budget_exhausted,omitempty"`
	StageOutputs    []StageOutput `json:"stage_outputs"`
	// SlotWaits are the stages that waited for a slot of their agent (it
	// held its five tasks): when each began waiting and was granted one.
	SlotWaits []SlotWait `json:"slot_waits,omitempty"`
	// RemoteWaits are the stages waiting for an agent outside the team.
	RemoteWaits     []RemoteWait `json:"remote_waits,omitempty"`
	FinalOutput     string       `json:"final_output,omitempty"`
	Outcome         string       `json:"outcome,omitempty"`
	Convergence     string       `json:"convergence_reason,omitempty"`
	ApprovalComment string       `json:"approval_comment,omitempty"`
	ExecutionARN    string       `json:"execution_arn,omitempty"`
	ConsoleURL      string       `json:"console_url,omitempty"`
	// Runs counts executions: 1 for the first, N+1 after N resumes.
	Runs      int        `json:"runs"`
	Deadline  *time.Time `json:"deadline,omitempty"`
	CreatedBy string     `json:"created_by"`
	UserID    string     `json:"user_id,omitempty"`  // the person who started it (a token's user, or the user a key acts for)
	TraceID   string     `json:"trace_id,omitempty"` // the trace of the request or turn that started it (its answer's X-Trace-Id)
	Version   int        `json:"version"`
	// Waiter is the task token of the execution waiting for a human.
	Waiter      string     `json:"-"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	StartedAt   *time.Time `json:"started_at,omitempty"`
	CompletedAt *time.Time `json:"completed_at,omitempty"`
	// EventSeq is the last sequence number of the session's stream
	// (streams.Session): stored as event_seq, set with every change that
	// writes events, under the change's version condition.
	EventSeq int64 `json:"-"`
	// Events are the events a write stores with the change, numbered up
	// to EventSeq (updateFrom and Create derive them; changeEvents). Not
	// stored on the session, and empty on a session read.
	Events []streams.Event `json:"-"`
}

// Output returns the stored output of the stage key, if any.
func (s Session) Output(key string) (StageOutput, bool) {
	for _, o := range s.StageOutputs {
		if o.Key == key {
			return o, true
		}
	}
	return StageOutput{}, false
}

// Agents lists the lead and every participant, the lead first.
func (s Session) Agents() []string {
	out := []string{s.Lead}
	for _, p := range s.Participants {
		if p.Agent != s.Lead {
			out = append(out, p.Agent)
		}
	}
	return out
}

// ExecutionName is the name of the session's run n (1 is the first): the
// session id, then <id>-r<N> for the runs resume starts.
func ExecutionName(id string, run int) string {
	if run <= 1 {
		return id
	}
	return fmt.Sprintf("%s-r%d", id, run-1)
}

// Filter narrows a listing.
type Filter struct {
	Status  Status
	Pattern Pattern
	Agent   string // lead or participant
	UserID  string // the person who started it: a member's own
}

// Ref names a session across teams (the sweeper's view).
type Ref struct {
	TeamID string
	ID     string
}
