// Package tasks is the one task model behind both agent delegation and the
// team task board: who gives whom what to do, its lifecycle, its append-only
// event timeline, and the safety limits of delegation. The limits are not
// checked here by reading and then writing: the service hands the store one
// change that the database applies in a single conditional transaction
// (architecture decision 3), so concurrent requests cannot break them.
package tasks

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// Status is a task's lifecycle state.
type Status string

// Statuses.
const (
	Queued    Status = "queued"
	Running   Status = "running"
	Blocked   Status = "blocked"
	Completed Status = "completed"
	Failed    Status = "failed"
	Canceled  Status = "canceled"
	TimedOut  Status = "timed_out"
)

// Statuses lists every status, for validation.
var Statuses = []Status{Queued, Running, Blocked, Completed, Failed, Canceled, TimedOut}

// Terminal reports whether s never changes again.
func (s Status) Terminal() bool {
	return s == Completed || s == Failed || s == Canceled || s == TimedOut
}

// HoldsSlot reports whether a task in s counts against its assignee's limit
// of concurrent tasks ("running or queued"), when it is a task that holds
// slots at all (Task.HoldsSlot: work items never do). A blocked task gives
// its slot back and takes one again when it resumes.
func (s Status) HoldsSlot() bool { return s == Queued || s == Running }

// HoldsSlot reports whether t counts against its assignee's limit of
// MaxActivePerAgent: an executed or delegated task that is queued or
// running. A work item (WorkItem) never does: it waits in its assignee's
// queue (bounded by MaxQueuedPerAgent) and is worked at a person's pace,
// so it must not starve the agent's delegations and workflow stages.
//
// A plan's root (PlanRoot) holds none either: its steps take their
// agents' slots, and a root holding its lead's would let five plans led
// by one agent lock out every step of that agent.
func (t Task) HoldsSlot() bool { return !t.WorkItem() && !t.PlanRoot() && t.Status.HoldsSlot() }

// Load is an agent's task counters: Active counts the tasks holding one of
// its MaxActivePerAgent slots, Queued its queued work items (its queue,
// bounded by MaxQueuedPerAgent).
type Load struct {
	Active int
	Queued int
}

// Action is a lifecycle verb.
type Action string

// Actions and the transitions they make (see Transitions).
const (
	ActStart    Action = "start"    // queued → running, blocked → running (resumed)
	ActComplete Action = "complete" // running → completed
	ActFail     Action = "fail"     // running → failed
	ActBlock    Action = "block"    // running → blocked
	ActCancel   Action = "cancel"   // queued | running | blocked → canceled
	ActTimeout  Action = "timeout"  // running → timed_out
	ActAssign   Action = "assign"   // queued | running | blocked → queued, new assignee
)

// Transitions is the lifecycle: the source states each action accepts and
// the state it leads to. Anything not listed is a 409 with the current
// status; terminal states accept nothing.
var Transitions = map[Action]struct {
	From []Status
	To   Status
}{
	ActStart:    {[]Status{Queued, Blocked}, Running},
	ActComplete: {[]Status{Running}, Completed},
	ActFail:     {[]Status{Running}, Failed},
	ActBlock:    {[]Status{Running}, Blocked},
	ActCancel:   {[]Status{Queued, Running, Blocked}, Canceled},
	ActTimeout:  {[]Status{Running}, TimedOut},
	ActAssign:   {[]Status{Queued, Running, Blocked}, Queued},
}

// Allowed reports whether action a may run on a task in status s.
func Allowed(a Action, s Status) bool {
	t, ok := Transitions[a]
	return ok && slices.Contains(t.From, s)
}

// Types of task.
var Types = []string{"research", "review", "analyze", "generate", "summarize", "validate", "plan", "execute"}

// ModelTierAuto asks for the tier the task's complexity picks (AutoTier),
// as a chat turn's is picked; it is never stored.
const ModelTierAuto = "auto"

// ModelTiers are the values of a task's model_tier: the routing tiers
// (MODEL_TIERS names each one's model) and ModelTierAuto.
var ModelTiers = []string{routing.Tier0, routing.Tier1, routing.Tier2, ModelTierAuto}

// AutoTier is the tier t's complexity picks, by the mapping a chat turn's
// tier comes from (routing.ComplexityOf, routing.TierFor), scored on what
// the task asks: its title, instructions and expected output. Its
// context is background, as a turn's history is, and is not scored; one
// assignee is one agent's skills, so breadth adds nothing.
func AutoTier(t Task) string {
	parts := []string{t.Title}
	if t.Instructions != t.Title {
		parts = append(parts, t.Instructions)
	}
	if t.ExpectedOutput != "" {
		parts = append(parts, t.ExpectedOutput)
	}
	return routing.TierFor(routing.ComplexityOf(strings.Join(parts, "\n"), 1).Score)
}

// Priorities of a task, lowest first.
var Priorities = []string{"low", "normal", "high", "urgent"}

// Event types of the timeline.
const (
	EvCreated      = "created"
	EvAssigned     = "assigned"
	EvStarted      = "started"
	EvProgress     = "progress"
	EvToolCall     = "tool_call"
	EvToolResult   = "tool_result"
	EvBlocked      = "blocked"
	EvResumed      = "resumed"
	EvCompleted    = "completed"
	EvFailed       = "failed"
	EvCanceled     = "canceled"
	EvTimedOut     = "timed_out"
	EvEscalated    = "escalated"
	EvDeadLettered = "dead_lettered"
	// EvAwaited: the parent's execution waits for this task to end.
	EvAwaited = "awaited"
	// EvRevision: the worker asked the agent to revise its answer (a
	// report missing required sections); written by the worker.
	EvRevision = "revision_requested"
	// EvApprovalRequested: a tool call of the task waits for a human's
	// approval (shared/work/approvals); written by the worker.
	EvApprovalRequested = "approval_requested"
	// EvToolPackAdded: the agent added a tool pack to the running task
	// (request_tool_pack); written by the worker.
	EvToolPackAdded = "tool_pack_added"
)

// The product's safety limits.
const (
	MaxDepth          = 3 // A→B→C→D, never a fifth agent
	MaxActivePerAgent = 5 // running-or-queued executed or delegated tasks per assignee
	// MaxQueuedPerAgent bounds an agent's queue of work items (board
	// tasks, Task.WorkItem) instead of the five-task limit: generous, for
	// a backlog people fill, yet bounded so one agent's queue cannot grow
	// without end (and next-task's reads stay short).
	MaxQueuedPerAgent = 1000
	DefaultCostCapUSD = 0.50 // per collaboration (a root task and its delegation tree)
	// SweepGrace is how long past its deadline a running task may stay
	// before the sweeper ends it; it leaves the state machine time to
	// record the timeout itself.
	SweepGrace = 15 * time.Second
)

// Rejection reasons of delegation (the error's reason field).
const (
	ReasonDepth       = "DelegationDepthExceeded"
	ReasonCycle       = "CycleDetected"
	ReasonSelf        = "SelfDelegation"
	ReasonConcurrency = "ConcurrencyLimit"
	// ReasonQueueFull: the assignee already has MaxQueuedPerAgent queued
	// work items.
	ReasonQueueFull   = "QueueFull"
	ReasonUnavailable = "AgentUnavailable"
	ReasonBudget      = "BudgetExhausted"
	ReasonState       = "InvalidTransition"
)

// ReasonAwaitingApproval is a blocked task's status_reason while a tool
// call of its waits for a human (shared/work/approvals).
const ReasonAwaitingApproval = "awaiting_approval"

// Where the result of a task linked to a conversation goes when the task
// ends (Task.ResultDelivery).
const (
	// DeliverToConversation: the result-poster function posts the result
	// (or the failure) into the conversation, as a message of the
	// assignee. The default of a task created with a conversation_id.
	DeliverToConversation = "conversation"
	// DeliverInReply: a chat turn waits for the task and puts the result
	// in its own reply; nothing is posted. The turn hands the delivery to
	// the conversation (ReleaseToConversation) when its wait runs out.
	DeliverInReply = "reply"
)

// Creator is who made a task: an agent (by slug) or a user (by API key id).
type Creator struct {
	Type string `json:"type"` // "agent" or "user"
	ID   string `json:"id"`
}

// Task is one unit of work given to an agent.
type Task struct {
	TeamID         string  `json:"-"`
	ID             string  `json:"id"`
	CreatedBy      Creator `json:"created_by"`
	UserID         string  `json:"user_id,omitempty"`  // the person it works for (a token's user, the user a key acts for, or the parent's)
	TraceID        string  `json:"trace_id,omitempty"` // the trace of the request or turn that created it (its answer's X-Trace-Id)
	Assignee       string  `json:"assignee"`
	ParentID       string  `json:"parent_task_id,omitempty"`
	RootID         string  `json:"root_task_id"`
	ConversationID string  `json:"conversation_id,omitempty"`
	// ResultDelivery is where the result goes when the task ends
	// (DeliverToConversation or DeliverInReply); empty for a task whose
	// result stays on the task (no conversation_id of its own).
	ResultDelivery string   `json:"result_delivery,omitempty"`
	Type           string   `json:"type"`
	Title          string   `json:"title"`
	Instructions   string   `json:"instructions"`
	Context        string   `json:"context,omitempty"`
	ExpectedOutput string   `json:"expected_output,omitempty"`
	InputArtifacts []string `json:"input_artifacts"`
	// Input is the task's JSON payload (an object, an array or a string,
	// at most MaxPayloadBytes), beside the text of Instructions; absent on
	// a task created without one (and on every task stored before it).
	Input    json.RawMessage  `json:"input,omitempty"`
	Priority string           `json:"priority"`
	DueAt    *time.Time       `json:"due_at,omitempty"`
	Budgets  workflow.Budgets `json:"budgets"`
	// ModelTier is the tier the worker picks the model from (unless the
	// agent names its own model): the one the task was created with, or
	// the one its complexity picked (AutoTier). Empty on a task stored
	// before tasks had one: the provider's default.
	ModelTier string `json:"model_tier,omitempty"`
	// Report is set on the task that delivers a report (shared/work/reports).
	Report *workflow.ReportCheck `json:"report,omitempty"`
	// ConsultationID is set on the task that answers a consultation
	// (shared/work/consultations): its result is the specialist's answer.
	ConsultationID string `json:"consultation_id,omitempty"`
	// ToolPacks are the tool packs the task was created with
	// (CreateInput.ToolPacks): their tools are the task's, on top of its
	// agent's. A pack added while it runs (request_tool_pack) is on its
	// timeline (EvToolPackAdded), not here.
	ToolPacks []string `json:"tool_packs,omitempty"`
	// SessionID is set on the task of a collaboration session's stage
	// (CreateInput.SessionID): run by the session's workflow, it holds a
	// slot like an executed task, though no delegation machine runs it.
	SessionID string `json:"session_id,omitempty"`
	// PlanID is set on a compound plan's root task and on its steps
	// (CreateInput.PlanID, shared/work/plans): the root is the plan's lead's
	// work (a slot, no 120 s deadline: the plan machine bounds it), and a
	// step is a child of the root that may be any agent of the team, the
	// lead included (PlanStep).
	PlanID string `json:"plan_id,omitempty"`
	// Ticket is the granted slot ticket the task is created on (its key;
	// CreateInput.Ticket): the create uses the ticket's slot instead of
	// taking one. Never stored.
	Ticket string `json:"-"`
	// HeldCall is set on the task that continues a chat reply whose tool
	// call waits for approval (CreateInput.HeldCall); the approval shows
	// the call, so the task's representation does not.
	HeldCall *workflow.ApprovalWait `json:"-"`
	// CostCapUSD bounds the spend of the whole delegation tree; it is set on
	// the root task and inherited.
	CostCapUSD float64 `json:"cost_cap_usd"`
	// TreeCostUSD is the spend of the tree so far (root tasks only).
	TreeCostUSD float64 `json:"tree_cost_usd,omitempty"`
	Depth       int     `json:"delegation_depth"`
	// Chain is the agents from the root creator to the assignee; a new
	// delegation may not assign anyone already in it.
	Chain  []string `json:"delegation_chain"`
	Status Status   `json:"status"`
	Result string   `json:"result,omitempty"`
	// Output is the JSON payload the task ended with (complete or fail),
	// beside the text of Result; absent when none was given.
	Output          json.RawMessage `json:"output,omitempty"`
	ResultArtifacts []string        `json:"result_artifacts"`
	Error           string          `json:"error,omitempty"`
	TokensUsed      int             `json:"tokens_used"`
	ToolCalls       int             `json:"tool_calls"`
	CostUSD         float64         `json:"cost_usd"`
	Execute         bool            `json:"execute"`
	Execution       string          `json:"execution_arn,omitempty"`
	Runs            int             `json:"runs,omitempty"`
	Deadline        *time.Time      `json:"deadline,omitempty"`
	// StatusReason says why a blocked task waits (ReasonAwaitingApproval:
	// a tool call waits for a human); cleared when it leaves blocked.
	StatusReason string `json:"status_reason,omitempty"`
	// ApprovalIDs are the approvals a task blocked for approval waits on
	// (ExecBlockForApproval); cleared when it leaves blocked. When it
	// leaves blocked for anything but running (canceled, failed,
	// reassigned), the ones still pending end as canceled in the same
	// transaction (Change.EndApprovals).
	ApprovalIDs []string `json:"-"`
	Version     int      `json:"version"`
	// EventSeq is the sequence number of the last event; it lives on the
	// task item so appends are ordered by the same conditional write.
	EventSeq int `json:"-"`
	// Waiter is the task token of a parent's execution waiting for this
	// task to end (workflow.ActionAwait); the end sends it the outcome.
	Waiter      string     `json:"-"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	StartedAt   *time.Time `json:"started_at,omitempty"`
	CompletedAt *time.Time `json:"completed_at,omitempty"`
	// OverdueAt is when the sweeper found the task past its DueAt and
	// flagged it (TaskOverdue published once); see overdue.go.
	OverdueAt *time.Time `json:"overdue_at,omitempty"`
	// Escalation is the task's task_overdue escalation, when the board
	// policy escalated it (see overdue.go).
	Escalation *Escalation `json:"escalation,omitempty"`
	// Events is the timeline, filled by Get.
	Events []Event `json:"events,omitempty"`
}

// Event is one entry of a task's append-only timeline. Seq orders it.
type Event struct {
	Seq     int            `json:"seq"`
	Type    string         `json:"type"`
	Actor   string         `json:"actor,omitempty"`
	Payload map[string]any `json:"payload,omitempty"`
	At      time.Time      `json:"at"`
}

// Filter narrows a listing.
type Filter struct {
	Status   Status
	Agent    string // creator or assignee
	Assignee string
	Parent   string
	// ConversationID lists the tasks of a conversation (on their own
	// index: it takes Status, Agent and Assignee, not Parent or Sort).
	ConversationID string
	// Sort is "" (newest first) or SortPriority (see Service.List).
	Sort string
	// UserID lists the tasks of one person (user_id): a member's own.
	UserID string
}

// Agents are the agents on the task: its assignee, its delegation chain
// and the agent that created it (the members of its task:<id> channel).
// A domain rule, so every store answers it alike (messaging.Directory).
func (t Task) Agents() []string {
	out := append([]string{t.Assignee}, t.Chain...)
	if t.CreatedBy.Type == "agent" {
		out = append(out, t.CreatedBy.ID)
	}
	return out
}

// Change is one conditional write: the task as it was read (its version is
// the condition, with its status among From), the task as it will be, the
// events to append, and the slot bookkeeping the store derives from the two.
type Change struct {
	Before Task
	After  Task
	From   []Status
	Events []Event
	// RootCharge is spend to add to the root task's tree cost (when the
	// task is not its own root).
	RootCharge float64
	// EndApprovals are approvals of the task (Task.ApprovalIDs) to end as
	// canceled, each conditioned on still being pending: a task that
	// leaves blocked for good takes its pending approvals with it. A
	// failed condition is *ConditionFailed with ItemApproval + id.
	EndApprovals []ApprovalEnd
	// Handoff, when the change frees a slot (Before held one that After
	// does not, or the task moves), gives that slot to this waiting ticket
	// instead of releasing it: the ticket becomes granted (conditioned on
	// still waiting: ItemTicket) and the agent's counter does not move.
	// Without it the release is conditioned on no ticket waiting
	// (ItemWaiting), unless ForceRelease.
	Handoff      *Ticket
	ForceRelease bool
}

// ApprovalEnd is an approval ended with its task (Change.EndApprovals):
// its status becomes canceled (approvals.Canceled), decided by By at At
// for Reason.
type ApprovalEnd struct {
	ID     string
	Reason string
	By     string
	At     time.Time
}

// ApprovalCanceled is the status an approval ends with when its task
// ends while waiting for it (approvals.Canceled; this package cannot
// import approvals).
const ApprovalCanceled = "canceled"

// Ref names a task across teams (the sweeper's view).
type Ref struct {
	TeamID string
	ID     string
}
