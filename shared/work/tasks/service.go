package tasks

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/authctx"
	"github.com/conclave-ai/conclave/shared/platform/backoff"
	"github.com/conclave-ai/conclave/shared/platform/clock"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/platform/tracing"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// Store persists tasks. Writes are single conditional transactions; a
// failed condition comes back as *ConditionFailed naming the item.
type Store interface {
	CreateTask(ctx context.Context, t Task, parent *Task, events []Event) error
	ApplyTask(ctx context.Context, c Change) error
	GetTask(ctx context.Context, teamID, id string) (Task, error)
	ListTasks(ctx context.Context, teamID string, f Filter, p paging.Page) ([]Task, string, error)
	// QueuedWork pages through the agent's queue (Task.InQueue) in queue
	// order (QueueOrder), read from an index kept in that order: no sort
	// in memory, so paging stays correct however long the queue is.
	QueuedWork(ctx context.Context, teamID, assignee string, p paging.Page) ([]Task, string, error)
	ListTaskEvents(ctx context.Context, teamID, id string) ([]Event, error)
	// AgentLoad is the agent's counters (zero for an agent nobody
	// counted yet).
	AgentLoad(ctx context.Context, teamID, slug string) (Load, error)
	DueTasks(ctx context.Context, before time.Time, limit int) ([]Ref, error)
	GetAgent(ctx context.Context, teamID, slug string) (agents.Agent, error)
	// ReleaseResult switches the task's result delivery from
	// DeliverInReply to DeliverToConversation in one conditional write
	// (the version bumped, so a concurrent change re-reads), only while
	// the task is not terminal. It returns the task as it then is: when
	// the condition fails nothing is written and the task as stored is
	// returned (ended, or not waited for in a reply). ENOTFOUND.
	ReleaseResult(ctx context.Context, teamID, id string, at time.Time) (Task, error)
	// DueStore: due dates and the board policy (overdue.go).
	DueStore
}

// Items a condition can fail on.
const (
	ItemTask     = "task"     // the task itself changed (version) or already exists
	ItemParent   = "parent"   // parent not running, too deep, assignee in its chain, or (as root) over budget
	ItemRoot     = "root"     // the collaboration's budget is spent
	ItemSlot     = "slot"     // the assignee already has MaxActivePerAgent tasks
	ItemQueue    = "queue"    // the assignee already has MaxQueuedPerAgent queued work items
	ItemAssignee = "assignee" // the assignee is missing or not active
	ItemCreator  = "creator"  // the creating agent does not exist
	// ItemConversation: the conversation_id names no conversation of the
	// team (checked in the create's transaction).
	ItemConversation = "conversation"
	// ItemApproval + an approval id: that approval (Change.EndApprovals)
	// is no longer pending (decided meanwhile, or not stored yet).
	ItemApproval = "approval:"
)

// ConditionFailed is a transaction the database refused; Item says which
// condition failed.
type ConditionFailed struct{ Item string }

func (e *ConditionFailed) Error() string { return "condition failed on " + e.Item }

func failedItem(err error) string {
	var cf *ConditionFailed
	if errors.As(err, &cf) {
		return cf.Item
	}
	return ""
}

// Publisher puts domain events on the bus.
type Publisher interface {
	Publish(ctx context.Context, detailType string, detail any) error
}

// Service is the task lifecycle.
type Service struct {
	Store Store
	// Workflows runs executing tasks on the delegation machine; nil runs
	// board tasks only (and the lifecycle steps, which start nothing).
	Workflows workflow.Starter
	// Callbacks wakes the execution of a parent waiting for a task that
	// ended (its task token); nil leaves waiting parents to their timeout.
	Callbacks workflow.Callbacks
	Bus       Publisher
	Log       *slog.Logger
	Now       clock.Func
	// Packs knows the team's own tool packs (toolpacks.Registry: its MCP
	// packs); nil lets a task name only the built-in packs.
	Packs PackChecker
}

// PackChecker answers whether a team may name a tool pack.
type PackChecker interface {
	Exists(ctx context.Context, teamID, name string) (bool, error)
}

// NewService returns a Service.
func NewService(store Store, workflows workflow.Starter, bus Publisher, log *slog.Logger) *Service {
	return &Service{Store: store, Workflows: workflows, Bus: bus, Log: log, Now: time.Now}
}

// BudgetsInput overrides a task's budgets; omitted fields keep the defaults.
type BudgetsInput struct {
	MaxTokens      *int `json:"max_tokens"`
	MaxToolCalls   *int `json:"max_tool_calls"`
	TimeoutSeconds *int `json:"timeout_seconds"`
}

// CreateInput is a new task.
type CreateInput struct {
	Assignee       string   `json:"assignee"`
	CreatedByAgent string   `json:"created_by_agent"`
	ParentID       string   `json:"parent_task_id"`
	ConversationID string   `json:"conversation_id"`
	Type           string   `json:"type"`
	Title          string   `json:"title"`
	Instructions   string   `json:"instructions"`
	Context        string   `json:"context"`
	ExpectedOutput string   `json:"expected_output"`
	InputArtifacts []string `json:"input_artifacts"`
	// Input is the task's JSON payload (see Payload).
	Input      json.RawMessage `json:"input"`
	Priority   string          `json:"priority"`
	DueAt      *time.Time      `json:"due_at"`
	Budgets    *BudgetsInput   `json:"budgets"`
	CostCapUSD *float64        `json:"cost_cap_usd"`
	// Execute runs the task through the delegation state machine. Board
	// tasks (the default for POST /v1/tasks) are driven by start/complete
	// calls instead; delegations execute unless told otherwise.
	Execute *bool `json:"execute"`
	// ToolPacks are tool packs (shared/tools/toolpacks) whose tools the task's
	// agent is given for this task only (a plan step's, or a client's).
	ToolPacks []string `json:"tool_packs"`
	// ModelTier is one of ModelTiers (Task.ModelTier); empty or
	// ModelTierAuto stores the tier AutoTier picks. A report's is its
	// template's (the reports service's).
	ModelTier string `json:"model_tier"`
	// Report is set by the reports service, never by a client of the
	// tasks API (a report is requested with POST /v1/reports, which
	// builds its instructions from the template).
	Report *workflow.ReportCheck `json:"-"`
	// ConsultationID is set by the consultations service on the task
	// whose answer completes that consultation, never by a client.
	ConsultationID string `json:"-"`
	// ResultDelivery overrides where the result of a task created with a
	// conversation_id goes (DeliverToConversation by default): a chat turn
	// that delegates and waits sets DeliverInReply. Never a client's.
	ResultDelivery string `json:"-"`
	// SessionID makes the task the stage of that collaboration session
	// (set by the sessions service, never by a client): not a work item.
	SessionID string `json:"-"`
	// PlanID makes the task a compound plan's root (no parent) or step
	// (ParentID the root), set by the plans service, never by a client.
	PlanID string `json:"-"`
	// Ticket creates the task on this granted slot ticket (its key; see
	// slots.go), set by a workflow stage that waited for a slot.
	Ticket string `json:"-"`
	// HeldCall makes the task the continuation of a chat reply whose tool
	// call waits for a human's approval (set by the chat's tools, never by
	// a client): the agent finishes its own reply, so this is no
	// delegation to itself.
	HeldCall *workflow.ApprovalWait `json:"-"`
}

// Limits of free-text fields, in characters.
const (
	maxTitle        = 500
	maxInstructions = 20000
	maxContext      = 20000
	maxArtifacts    = 50
)

func (in CreateInput) validate() error {
	if in.Assignee == "" {
		return apperr.Invalid("assignee", "assignee is required")
	}
	if !agents.ValidSlug(in.Assignee) {
		return apperr.Invalid("assignee", "assignee must be an agent slug")
	}
	if in.CreatedByAgent != "" && !agents.ValidSlug(in.CreatedByAgent) {
		return apperr.Invalid("created_by_agent", "created_by_agent must be an agent slug")
	}
	if strings.TrimSpace(in.Title) == "" {
		return apperr.Invalid("title", "title is required")
	}
	for _, f := range []struct {
		name, v string
		max     int
	}{{"title", in.Title, maxTitle}, {"instructions", in.Instructions, maxInstructions}, {"context", in.Context, maxContext}, {"expected_output", in.ExpectedOutput, maxContext}} {
		if utf8.RuneCountInString(f.v) > f.max {
			return apperr.Invalid(f.name, "%s is longer than %d characters", f.name, f.max)
		}
	}
	if in.Type != "" && !slices.Contains(Types, in.Type) {
		return apperr.Invalid("type", "type must be one of %s", strings.Join(Types, ", "))
	}
	if in.Priority != "" && !slices.Contains(Priorities, in.Priority) {
		return apperr.Invalid("priority", "priority must be one of %s", strings.Join(Priorities, ", "))
	}
	if in.ConversationID != "" && !ids.Valid("conv", in.ConversationID) {
		// No conversation has such an id: as unknown as another team's.
		return apperr.NotFound("conversation", in.ConversationID)
	}
	switch in.ResultDelivery {
	case "":
	case DeliverToConversation, DeliverInReply:
		if in.ConversationID == "" {
			return apperr.Invalid("conversation_id", "a result delivered to a conversation needs the task's conversation_id")
		}
	default:
		return apperr.Invalid("result_delivery", "result_delivery must be %s or %s", DeliverToConversation, DeliverInReply)
	}
	if len(in.InputArtifacts) > maxArtifacts {
		return apperr.Invalid("input_artifacts", "at most %d input artifacts", maxArtifacts)
	}
	if b := in.Budgets; b != nil {
		if b.MaxTokens != nil && (*b.MaxTokens < 1 || *b.MaxTokens > workflow.MaxTaskTokens) {
			return apperr.Invalid("budgets.max_tokens", "max_tokens must be between 1 and %d", workflow.MaxTaskTokens)
		}
		if b.MaxToolCalls != nil && (*b.MaxToolCalls < 0 || *b.MaxToolCalls > workflow.MaxTaskToolCalls) {
			return apperr.Invalid("budgets.max_tool_calls", "max_tool_calls must be between 0 and %d", workflow.MaxTaskToolCalls)
		}
		if b.TimeoutSeconds != nil && (*b.TimeoutSeconds < 1 || *b.TimeoutSeconds > workflow.MaxTaskSeconds) {
			return apperr.Invalid("budgets.timeout_seconds", "timeout_seconds must be between 1 and %d", workflow.MaxTaskSeconds)
		}
	}
	if err := toolpacks.ValidateNames("tool_packs", in.ToolPacks); err != nil {
		return err
	}
	if in.ModelTier != "" && !slices.Contains(ModelTiers, in.ModelTier) {
		return apperr.Invalid("model_tier", "model_tier must be one of %s", strings.Join(ModelTiers, ", "))
	}
	if in.CostCapUSD != nil && (*in.CostCapUSD <= 0 || *in.CostCapUSD > DefaultCostCapUSD) {
		return apperr.Invalid("cost_cap_usd", "cost_cap_usd must be above 0 and at most %.2f", DefaultCostCapUSD)
	}
	return nil
}

// checkPacks refuses a pack the team does not have: a built-in pack, or
// one of its MCP packs (Packs). Returns EINVALID (tool_packs).
func (s *Service) checkPacks(ctx context.Context, teamID string, packs []string) error {
	for _, p := range packs {
		if toolpacks.Known(p) {
			continue
		}
		ok := false
		if s.Packs != nil {
			var err error
			if ok, err = s.Packs.Exists(ctx, teamID, p); err != nil {
				return err
			}
		}
		if !ok {
			return apperr.Invalid("tool_packs", "tool_packs: unknown tool pack %q (built-in: %s; or one of the team's MCP packs)", p, strings.Join(toolpacks.Names(), ", "))
		}
	}
	return nil
}

// Create makes a task. With a parent it is a delegation: the creator is the
// parent's assignee and the database checks, in the same transaction, that
// the parent is running, is not at the maximum depth, does not have the
// assignee in its chain, and that the collaboration's budget is not spent;
// it also takes one of the assignee's slots and checks it is active.
func (s *Service) Create(ctx context.Context, teamID string, creator Creator, in CreateInput, executeByDefault bool) (Task, error) {
	if err := in.validate(); err != nil {
		return Task{}, err
	}
	if err := s.checkPacks(ctx, teamID, in.ToolPacks); err != nil {
		return Task{}, err
	}
	input, err := Payload("input", in.Input)
	if err != nil {
		return Task{}, err
	}
	in.Input = input
	if id, err := idempotency.Stored(ctx, s.Store, teamID, RefKind); err != nil || id != "" {
		return s.replay(ctx, teamID, id, err)
	}
	now := s.Now.UTC()
	t := in.newTask(teamID, creator, executeByDefault, now)
	t.TraceID = tracing.TraceID(ctx)
	t.UserID = authctx.CallerOf(ctx).UserID
	parent, err := s.place(ctx, &t, in)
	if err != nil {
		return Task{}, err
	}
	if t.UserID == "" && parent != nil {
		// A delegation works for the person its tree works for.
		t.UserID = parent.UserID
	}
	created := Event{Seq: 1, Type: EvCreated, Actor: actor(t.CreatedBy), At: now, Payload: map[string]any{
		"assignee": t.Assignee, "title": t.Title, "depth": t.Depth, "parent_task_id": t.ParentID, "execute": t.Execute,
	}}
	err = s.Store.CreateTask(ctx, t, parent, []Event{created})
	if id, ok := idempotency.ReplayedID(err); ok {
		return s.replay(ctx, teamID, id, nil)
	}
	if item := failedItem(err); item != "" {
		return Task{}, s.rejection(ctx, t, parent, item)
	}
	if err != nil {
		return Task{}, err
	}
	s.publish(ctx, t, "")
	if t.Execute {
		return s.launch(ctx, t)
	}
	return t, nil
}

// newTask is the queued task in asks for, with its defaults and budgets.
func (in CreateInput) newTask(teamID string, creator Creator, executeByDefault bool, now time.Time) Task {
	t := Task{
		TeamID: teamID, ID: ids.New("task"), CreatedBy: creator, Assignee: in.Assignee,
		ConversationID: in.ConversationID, Type: cmp.Or(in.Type, "execute"), Title: strings.TrimSpace(in.Title),
		Instructions: in.Instructions, Context: in.Context, ExpectedOutput: in.ExpectedOutput,
		InputArtifacts: in.InputArtifacts, Input: in.Input, Priority: cmp.Or(in.Priority, "normal"), DueAt: in.DueAt,
		Budgets:    workflow.Budgets{MaxTokens: workflow.MaxTaskTokens, MaxToolCalls: workflow.MaxTaskToolCalls, TimeoutSeconds: workflow.MaxTaskSeconds},
		CostCapUSD: DefaultCostCapUSD, Status: Queued, ResultArtifacts: []string{},
		Execute: executeByDefault, Version: 1, CreatedAt: now, UpdatedAt: now, EventSeq: 1,
		ModelTier: in.ModelTier, Report: in.Report, HeldCall: in.HeldCall, SessionID: in.SessionID, Ticket: in.Ticket, PlanID: in.PlanID,
		ToolPacks: slices.Clone(in.ToolPacks), ConsultationID: in.ConsultationID,
	}
	t.Instructions = cmp.Or(t.Instructions, t.Title)
	if t.ModelTier == "" || t.ModelTier == ModelTierAuto {
		t.ModelTier = AutoTier(t)
	}
	if in.ConversationID != "" && in.Report == nil && in.ConsultationID == "" {
		// Only a conversation_id of the task's own: a sub-task that
		// inherits its parent's conversation delivers to its parent. A
		// report posts its report (ReportFinished), not its task; a
		// consultation's task posts the consultation's answer.
		t.ResultDelivery = cmp.Or(in.ResultDelivery, DeliverToConversation)
	}
	if t.InputArtifacts == nil {
		t.InputArtifacts = []string{}
	}
	if in.Execute != nil {
		t.Execute = *in.Execute
	}
	if t.Execute {
		// Its first execution: Stop and executionName count from here, so a
		// cancel stops the first run too and a reassigned task runs again
		// under a new execution name.
		t.Runs = 1
	}
	if b := in.Budgets; b != nil {
		if b.MaxTokens != nil {
			t.Budgets.MaxTokens = *b.MaxTokens
		}
		if b.MaxToolCalls != nil {
			t.Budgets.MaxToolCalls = *b.MaxToolCalls
		}
		if b.TimeoutSeconds != nil {
			t.Budgets.TimeoutSeconds = *b.TimeoutSeconds
		}
	}
	if in.CostCapUSD != nil {
		t.CostCapUSD = *in.CostCapUSD
	}
	return t
}

// place puts t in its delegation tree: under its parent (depth, chain,
// root, the collaboration's cost cap and conversation), or as a root.
// Returns the parent, whose conditions the create transaction checks.
func (s *Service) place(ctx context.Context, t *Task, in CreateInput) (*Task, error) {
	if in.ParentID == "" {
		t.RootID = t.ID
		t.Chain = []string{t.Assignee}
		if in.CreatedByAgent != "" {
			t.CreatedBy = Creator{Type: "agent", ID: in.CreatedByAgent}
			t.Depth = 1
			t.Chain = []string{in.CreatedByAgent, t.Assignee}
		}
		return nil, selfDelegation(*t)
	}
	p, err := s.Store.GetTask(ctx, t.TeamID, in.ParentID)
	if apperr.Is(err, apperr.ENOTFOUND) {
		return nil, apperr.NotFound("parent task", in.ParentID)
	}
	if err != nil {
		return nil, err
	}
	if in.PlanID != "" && p.PlanID != in.PlanID {
		return nil, apperr.Invalid("parent_task_id", "task %s is not the root of plan %s", p.ID, in.PlanID)
	}
	if in.CreatedByAgent != "" && in.CreatedByAgent != p.Assignee {
		return nil, apperr.Invalid("created_by_agent", "only the parent task's assignee (%s) can delegate from it", p.Assignee)
	}
	if in.CostCapUSD != nil {
		return nil, apperr.Invalid("cost_cap_usd", "a delegated task shares its collaboration's cost cap")
	}
	t.CreatedBy = Creator{Type: "agent", ID: p.Assignee}
	t.ParentID, t.RootID, t.CostCapUSD = p.ID, p.RootID, p.CostCapUSD
	t.Depth = p.Depth + 1
	t.Chain = append(slices.Clone(p.Chain), t.Assignee)
	if t.PlanStep() {
		t.ConversationID = "" // the plan posts its synthesis, not each step
	} else {
		t.ConversationID = cmp.Or(t.ConversationID, p.ConversationID)
	}
	return &p, selfDelegation(*t)
}

func selfDelegation(t Task) error {
	if t.CreatedBy.Type == "agent" && t.CreatedBy.ID == t.Assignee && t.HeldCall == nil && !t.PlanStep() {
		return apperr.New(apperr.EINVALID, "an agent cannot delegate a task to itself").WithReason(ReasonSelf)
	}
	return nil
}

// rejection turns a failed create or assign condition into the error the
// client sees. Depth and chain never change after a task is created, so
// reading the parent after the fact names the cause exactly.
func (s *Service) rejection(ctx context.Context, t Task, parent *Task, item string) error {
	switch item {
	case ItemSlot:
		return apperr.New(apperr.ELIMIT, "agent %q already has %d running or queued tasks", t.Assignee, MaxActivePerAgent).
			WithReason(ReasonConcurrency).WithDetail("limit", MaxActivePerAgent)
	case ItemQueue:
		return apperr.New(apperr.ELIMIT, "agent %q already has %d queued work items", t.Assignee, MaxQueuedPerAgent).
			WithReason(ReasonQueueFull).WithDetail("limit", MaxQueuedPerAgent)
	case ItemAssignee:
		a, err := s.Store.GetAgent(ctx, t.TeamID, t.Assignee)
		if err != nil {
			return err
		}
		return apperr.New(apperr.ECONFLICT, "agent %q is %s and cannot take tasks", a.Slug, a.Status).
			WithReason(ReasonUnavailable).WithDetail("agent_status", a.Status)
	case ItemCreator:
		return apperr.NotFound("agent", t.CreatedBy.ID)
	case ItemConversation:
		// Unknown, or another team's: the key is under the team's
		// partition, so the two are one answer.
		return apperr.NotFound("conversation", t.ConversationID)
	case ItemRoot:
		return budgetError(t)
	case ItemParent:
		p, err := s.Store.GetTask(ctx, t.TeamID, parent.ID)
		if err != nil {
			return err
		}
		switch {
		case p.Status != Running:
			return apperr.New(apperr.ECONFLICT, "the parent task is %s; only a running task can delegate", p.Status).
				WithReason(ReasonState).WithDetail("status", string(p.Status))
		case p.Depth >= MaxDepth:
			return apperr.New(apperr.EREJECTED, "delegation depth would exceed %d", MaxDepth).
				WithReason(ReasonDepth).WithDetail("depth", p.Depth+1).WithDetail("max_depth", MaxDepth)
		case slices.Contains(p.Chain, t.Assignee):
			return apperr.New(apperr.EREJECTED, "agent %q is already in the delegation chain %s", t.Assignee, strings.Join(p.Chain, " → ")).
				WithReason(ReasonCycle).WithDetail("chain", p.Chain)
		default:
			return budgetError(t)
		}
	}
	return apperr.New(apperr.EINTERNAL, "task %s: unexpected condition on %s", t.ID, item)
}

func budgetError(t Task) error {
	return apperr.New(apperr.EREJECTED, "the collaboration's budget of $%.2f is spent", t.CostCapUSD).
		WithReason(ReasonBudget).WithDetail("cost_cap_usd", t.CostCapUSD)
}

// launch starts t's execution. If the start fails the task is failed at
// once, so it never sits queued holding a slot with nothing to run it.
func (s *Service) launch(ctx context.Context, t Task) (Task, error) {
	if s.Workflows == nil {
		return t, nil
	}
	name := executionName(t)
	if _, err := s.Workflows.Start(ctx, workflow.Delegation, name, payload(t)); err != nil {
		s.Log.ErrorContext(ctx, "start execution", "task_id", t.ID, "error", err.Error())
		// The task is queued (a failed transition is running → failed, so
		// this is written directly): failed at once, its slot given back.
		_, ferr := s.apply(ctx, t.TeamID, t.ID, []Status{Queued}, Failed, "system", func(_ Task, after *Task) ([]Event, error) {
			after.Error = "the execution could not be started"
			return []Event{{Type: EvFailed, Payload: map[string]any{"reason": after.Error}}}, nil
		})
		if ferr != nil {
			s.Log.ErrorContext(ctx, "fail unstartable task", "task_id", t.ID, "error", ferr.Error())
		}
		return Task{}, apperr.Wrap(apperr.EINTERNAL, err, "could not start the task's execution")
	}
	return t, nil
}

// executionName is the task id for the first run; a task reassigned and run
// again gets a suffix, since execution names are unique per state machine.
func executionName(t Task) string {
	if t.Runs <= 1 {
		return t.ID
	}
	return fmt.Sprintf("%s-r%d", t.ID, t.Runs)
}

func payload(t Task) workflow.TaskInput {
	return workflow.TaskInput{
		TeamID: t.TeamID, TaskID: t.ID, Assignee: t.Assignee, Title: t.Title, Instructions: t.Instructions,
		Context: t.Context, ExpectedOutput: t.ExpectedOutput, Budgets: t.Budgets,
		ModelTier: t.ModelTier, Report: t.Report, HeldCall: t.HeldCall,
		ToolPacks: t.ToolPacks, RootTaskID: t.RootID,
	}
}

func actor(c Creator) string {
	if c.Type == "agent" {
		return "agent:" + c.ID
	}
	return "user:" + c.ID
}

// Get returns a task with its event timeline.
func (s *Service) Get(ctx context.Context, teamID, id string) (Task, error) {
	t, err := s.Store.GetTask(ctx, teamID, id)
	if err != nil {
		return Task{}, err
	}
	t.Events, err = s.Store.ListTaskEvents(ctx, teamID, id)
	return t, err
}

// Wait returns the task once it is terminal or when d has passed,
// whichever comes first (long-poll).
func (s *Service) Wait(ctx context.Context, teamID, id string, d time.Duration) (Task, error) {
	return s.WaitUntil(ctx, teamID, id, d, func(t Task) bool { return t.Status.Terminal() })
}

// WaitUntil is Wait with its own end: the task once done says so (an A2A
// client's blocking call also ends when the task needs its input).
func (s *Service) WaitUntil(ctx context.Context, teamID, id string, d time.Duration, done func(Task) bool) (Task, error) {
	t, err := backoff.Poll(ctx, d, func(ctx context.Context) (Task, bool, error) {
		t, err := s.Store.GetTask(ctx, teamID, id)
		return t, err == nil && done(t), err
	})
	if err != nil {
		return t, err
	}
	// The timeline is read once, for the answer, not on every look.
	t.Events, err = s.Store.ListTaskEvents(ctx, teamID, id)
	return t, err
}

// ReleaseToConversation hands a task's result to its conversation: a chat
// turn that delegated it and waited (DeliverInReply) has run out of time,
// so the result-poster function posts the result into the conversation
// when the task ends instead. One conditional write, only while the task
// has not ended; it returns the task as it now is. When the task already
// ended nothing is written and the ended task is returned (its delivery
// still DeliverInReply, so nothing is posted): the turn puts the result in
// its reply. Either way exactly one of the two delivers it. A task not
// waited for in a reply is returned as it is. Returns ENOTFOUND.
func (s *Service) ReleaseToConversation(ctx context.Context, teamID, id string) (Task, error) {
	return s.Store.ReleaseResult(ctx, teamID, id, s.Now.UTC())
}

// Load returns an agent's counters: the tasks holding its slots and its
// queued work items. ENOTFOUND for an agent that is not the team's.
func (s *Service) Load(ctx context.Context, teamID, slug string) (Load, error) {
	if _, err := s.Store.GetAgent(ctx, teamID, slug); err != nil {
		return Load{}, err
	}
	return s.Store.AgentLoad(ctx, teamID, slug)
}
