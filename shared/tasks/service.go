package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/conclave-ai/conclave/shared/agents"
	"github.com/conclave-ai/conclave/shared/apperr"
	"github.com/conclave-ai/conclave/shared/ids"
	"github.com/conclave-ai/conclave/shared/paging"
	"github.com/conclave-ai/conclave/shared/worker"
)

// Store persists tasks. Writes are single conditional transactions; a
// failed condition comes back as *ConditionFailed naming the item.
type Store interface {
	CreateTask(ctx context.Context, t Task, parent *Task, events []Event) error
	ApplyTask(ctx context.Context, c Change) error
	GetTask(ctx context.Context, teamID, id string) (Task, error)
	ListTasks(ctx context.Context, teamID string, f Filter, p paging.Page) ([]Task, string, error)
	ListTaskEvents(ctx context.Context, teamID, id string) ([]Event, error)
	AgentLoad(ctx context.Context, teamID, slug string) (int, error)
	DueTasks(ctx context.Context, before time.Time, limit int) ([]Ref, error)
	GetAgent(ctx context.Context, teamID, slug string) (agents.Agent, error)
}

// Items a condition can fail on.
const (
	ItemTask     = "task"     // the task itself changed (version) or already exists
	ItemParent   = "parent"   // parent not running, too deep, assignee in its chain, or (as root) over budget
	ItemRoot     = "root"     // the collaboration's budget is spent
	ItemSlot     = "slot"     // the assignee already has MaxActivePerAgent tasks
	ItemAssignee = "assignee" // the assignee is missing or not active
	ItemCreator  = "creator"  // the creating agent does not exist
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

// Runner starts and stops executions of the delegation state machine.
type Runner interface {
	Start(ctx context.Context, name string, p worker.Payload) (executionARN string, err error)
	Stop(ctx context.Context, executionARN, cause string) error
	// ExecutionARN is the ARN an execution called name has (or would have).
	ExecutionARN(name string) string
}

// Publisher puts domain events on the bus.
type Publisher interface {
	Publish(ctx context.Context, detailType string, detail any) error
}

// Service is the task lifecycle.
type Service struct {
	Store  Store
	Runner Runner
	Bus    Publisher
	Log    *slog.Logger
	Now    func() time.Time
}

// NewService returns a Service.
func NewService(store Store, runner Runner, bus Publisher, log *slog.Logger) *Service {
	return &Service{Store: store, Runner: runner, Bus: bus, Log: log, Now: time.Now}
}

// BudgetsInput overrides a task's budgets; omitted fields keep the defaults.
type BudgetsInput struct {
	MaxTokens      *int `json:"max_tokens"`
	MaxToolCalls   *int `json:"max_tool_calls"`
	TimeoutSeconds *int `json:"timeout_seconds"`
}

// CreateInput is a new task.
type CreateInput struct {
	Assignee       string        `json:"assignee"`
	CreatedByAgent string        `json:"created_by_agent"`
	ParentID       string        `json:"parent_task_id"`
	ConversationID string        `json:"conversation_id"`
	Type           string        `json:"type"`
	Title          string        `json:"title"`
	Instructions   string        `json:"instructions"`
	Context        string        `json:"context"`
	ExpectedOutput string        `json:"expected_output"`
	InputArtifacts []string      `json:"input_artifacts"`
	Priority       string        `json:"priority"`
	DueAt          *time.Time    `json:"due_at"`
	Budgets        *BudgetsInput `json:"budgets"`
	CostCapUSD     *float64      `json:"cost_cap_usd"`
	// Execute runs the task through the delegation state machine. Board
	// tasks (the default for POST /v1/tasks) are driven by start/complete
	// calls instead; delegations execute unless told otherwise.
	Execute *bool `json:"execute"`
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
	if len(in.InputArtifacts) > maxArtifacts {
		return apperr.Invalid("input_artifacts", "at most %d input artifacts", maxArtifacts)
	}
	if b := in.Budgets; b != nil {
		if b.MaxTokens != nil && (*b.MaxTokens < 1 || *b.MaxTokens > worker.DefaultMaxTokens) {
			return apperr.Invalid("budgets.max_tokens", "max_tokens must be between 1 and %d", worker.DefaultMaxTokens)
		}
		if b.MaxToolCalls != nil && (*b.MaxToolCalls < 0 || *b.MaxToolCalls > worker.DefaultMaxToolCalls) {
			return apperr.Invalid("budgets.max_tool_calls", "max_tool_calls must be between 0 and %d", worker.DefaultMaxToolCalls)
		}
		if b.TimeoutSeconds != nil && (*b.TimeoutSeconds < 1 || *b.TimeoutSeconds > worker.DefaultTimeout) {
			return apperr.Invalid("budgets.timeout_seconds", "timeout_seconds must be between 1 and %d", worker.DefaultTimeout)
		}
	}
	if in.CostCapUSD != nil && (*in.CostCapUSD <= 0 || *in.CostCapUSD > DefaultCostCapUSD) {
		return apperr.Invalid("cost_cap_usd", "cost_cap_usd must be above 0 and at most %.2f", DefaultCostCapUSD)
	}
	return nil
}

func (s *Service) now() time.Time { return s.Now().UTC() }

// Create makes a task. With a parent it is a delegation: the creator is the
// parent's assignee and the database checks, in the same transaction, that
// the parent is running, is not at the maximum depth, does not have the
// assignee in its chain, and that the collaboration's budget is not spent;
// it also takes one of the assignee's slots and checks it is active.
func (s *Service) Create(ctx context.Context, teamID string, creator Creator, in CreateInput, executeByDefault bool) (Task, error) {
	if err := in.validate(); err != nil {
		return Task{}, err
	}
	now := s.now()
	t := Task{
		TeamID: teamID, ID: ids.New("task"), CreatedBy: creator, Assignee: in.Assignee,
		ConversationID: in.ConversationID, Type: in.Type, Title: strings.TrimSpace(in.Title),
		Instructions: in.Instructions, Context: in.Context, ExpectedOutput: in.ExpectedOutput,
		InputArtifacts: in.InputArtifacts, Priority: in.Priority, DueAt: in.DueAt,
		Budgets:    worker.Budgets{MaxTokens: worker.DefaultMaxTokens, MaxToolCalls: worker.DefaultMaxToolCalls, TimeoutSeconds: worker.DefaultTimeout},
		CostCapUSD: DefaultCostCapUSD, Status: Queued, ResultArtifacts: []string{},
		Execute: executeByDefault, Version: 1, CreatedAt: now, UpdatedAt: now,
	}
	if t.Type == "" {
		t.Type = "execute"
	}
	if t.Priority == "" {
		t.Priority = "normal"
	}
	if t.Instructions == "" {
		t.Instructions = t.Title
	}
	if t.InputArtifacts == nil {
		t.InputArtifacts = []string{}
	}
	if in.Execute != nil {
		t.Execute = *in.Execute
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

	var parent *Task
	if in.ParentID != "" {
		p, err := s.Store.GetTask(ctx, teamID, in.ParentID)
		if apperr.Is(err, apperr.ENOTFOUND) {
			return Task{}, apperr.NotFound("parent task", in.ParentID)
		}
		if err != nil {
			return Task{}, err
		}
		if in.CreatedByAgent != "" && in.CreatedByAgent != p.Assignee {
			return Task{}, apperr.Invalid("created_by_agent", "only the parent task's assignee (%s) can delegate from it", p.Assignee)
		}
		if in.CostCapUSD != nil {
			return Task{}, apperr.Invalid("cost_cap_usd", "a delegated task shares its collaboration's cost cap")
		}
		parent = &p
		t.CreatedBy = Creator{Type: "agent", ID: p.Assignee}
		t.ParentID, t.RootID, t.CostCapUSD = p.ID, p.RootID, p.CostCapUSD
		t.Depth = p.Depth + 1
		t.Chain = append(slices.Clone(p.Chain), t.Assignee)
		if t.ConversationID == "" {
			t.ConversationID = p.ConversationID
		}
	} else {
		t.RootID = t.ID
		if in.CreatedByAgent != "" {
			t.CreatedBy = Creator{Type: "agent", ID: in.CreatedByAgent}
			t.Depth = 1
			t.Chain = []string{in.CreatedByAgent, t.Assignee}
		} else {
			t.Chain = []string{t.Assignee}
		}
	}
	if t.CreatedBy.Type == "agent" && t.CreatedBy.ID == t.Assignee {
		return Task{}, apperr.New(apperr.EINVALID, "an agent cannot delegate a task to itself").WithReason(ReasonSelf)
	}

	created := Event{Seq: 1, Type: EvCreated, Actor: actor(t.CreatedBy), At: now, Payload: map[string]any{
		"assignee": t.Assignee, "title": t.Title, "depth": t.Depth, "parent_task_id": t.ParentID, "execute": t.Execute,
	}}
	t.Events = nil
	t.EventSeq = 1
	err := s.Store.CreateTask(ctx, t, parent, []Event{created})
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

// rejection turns a failed create or assign condition into the error the
// client sees. Depth and chain never change after a task is created, so
// reading the parent after the fact names the cause exactly.
func (s *Service) rejection(ctx context.Context, t Task, parent *Task, item string) error {
	switch item {
	case ItemSlot:
		return apperr.New(apperr.ELIMIT, "agent %q already has %d running or queued tasks", t.Assignee, MaxActivePerAgent).
			WithReason(ReasonConcurrency).WithDetail("limit", MaxActivePerAgent)
	case ItemAssignee:
		a, err := s.Store.GetAgent(ctx, t.TeamID, t.Assignee)
		if err != nil {
			return err
		}
		return apperr.New(apperr.ECONFLICT, "agent %q is %s and cannot take tasks", a.Slug, a.Status).
			WithReason(ReasonUnavailable).WithDetail("agent_status", a.Status)
	case ItemCreator:
		return apperr.NotFound("agent", t.CreatedBy.ID)
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
	if s.Runner == nil {
		return t, nil
	}
	name := executionName(t)
	if _, err := s.Runner.Start(ctx, name, payload(t)); err != nil {
		s.Log.Error("start execution", "task_id", t.ID, "error", err.Error())
		_, ferr := s.transition(ctx, t.TeamID, t.ID, ActFail, "system", func(_ Task, after *Task) ([]Event, error) {
			after.Error = "the execution could not be started"
			return []Event{{Type: EvFailed, Payload: map[string]any{"reason": after.Error}}}, nil
		})
		if ferr != nil {
			s.Log.Error("fail unstartable task", "task_id", t.ID, "error", ferr.Error())
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

func payload(t Task) worker.Payload {
	return worker.Payload{
		TeamID: t.TeamID, TaskID: t.ID, Assignee: t.Assignee, Title: t.Title, Instructions: t.Instructions,
		Context: t.Context, ExpectedOutput: t.ExpectedOutput, Budgets: t.Budgets,
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
	deadline := time.Now().Add(d)
	pause := 100 * time.Millisecond
	for {
		t, err := s.Store.GetTask(ctx, teamID, id)
		if err != nil || t.Status.Terminal() || !time.Now().Add(pause).Before(deadline) {
			if err == nil {
				t.Events, err = s.Store.ListTaskEvents(ctx, teamID, id)
			}
			return t, err
		}
		select {
		case <-ctx.Done():
			return t, nil
		case <-time.After(pause):
		}
		pause = min(pause*2, time.Second)
	}
}

// List returns tasks newest first.
func (s *Service) List(ctx context.Context, teamID string, f Filter, p paging.Page) ([]Task, string, error) {
	if f.Status != "" && !slices.Contains(Statuses, f.Status) {
		return nil, "", apperr.Invalid("status", "status must be one of queued, running, blocked, completed, failed, canceled, timed_out")
	}
	for name, v := range map[string]string{"agent": f.Agent, "assignee": f.Assignee} {
		if v != "" && !agents.ValidSlug(v) {
			return nil, "", apperr.Invalid(name, "%s must be an agent slug", name)
		}
	}
	return s.Store.ListTasks(ctx, teamID, f, p)
}

// Load returns how many running-or-queued tasks an agent holds.
func (s *Service) Load(ctx context.Context, teamID, slug string) (int, error) {
	if _, err := s.Store.GetAgent(ctx, teamID, slug); err != nil {
		return 0, err
	}
	return s.Store.AgentLoad(ctx, teamID, slug)
}

// mutation fills in the task after a transition and returns its events.
type mutation func(before Task, after *Task) ([]Event, error)

// maxStaleRetries bounds re-reads when another writer changed the task
// between our read and our write (the worker appending progress, say).
const maxStaleRetries = 10

// transition applies action act to the task: read, check the lifecycle,
// write conditioned on the version read and the allowed source states.
func (s *Service) transition(ctx context.Context, teamID, id string, act Action, by string, m mutation) (Task, error) {
	tr := Transitions[act]
	return s.apply(ctx, teamID, id, tr.From, tr.To, by, func(before Task, after *Task) ([]Event, error) {
		if !Allowed(act, before.Status) {
			return nil, apperr.New(apperr.ECONFLICT, "cannot %s a task that is %s", act, before.Status).
				WithReason(ReasonState).WithDetail("status", string(before.Status))
		}
		return m(before, after)
	})
}

// apply is the read–check–conditional-write loop every change goes through.
// to == "" keeps the status (progress and tool events).
func (s *Service) apply(ctx context.Context, teamID, id string, from []Status, to Status, by string, m mutation) (Task, error) {
	for range maxStaleRetries {
		before, err := s.Store.GetTask(ctx, teamID, id)
		if err != nil {
			return Task{}, err
		}
		after := before
		after.Chain = slices.Clone(before.Chain)
		if to != "" {
			after.Status = to
		}
		now := s.now()
		after.UpdatedAt = now
		after.Version = before.Version + 1
		events, err := m(before, &after)
		if err != nil {
			return Task{}, err
		}
		if after.Status == Running && before.Status != Running {
			after.StartedAt = coalesce(before.StartedAt, now)
			d := now.Add(time.Duration(after.Budgets.TimeoutSeconds) * time.Second)
			after.Deadline = &d
		}
		if after.Status != Running {
			after.Deadline = nil
		}
		if after.Status.Terminal() {
			after.CompletedAt = &now
		}
		// Spend is charged to the collaboration as it happens, so a
		// delegation sees the tree's live cost.
		var charge float64
		if delta := after.CostUSD - before.CostUSD; delta > 0 {
			if after.RootID == after.ID {
				after.TreeCostUSD += delta
			} else {
				charge = delta
			}
		}
		seq := before.EventSeq
		for i := range events {
			seq++
			events[i].Seq = seq
			events[i].At = now
			if events[i].Actor == "" {
				events[i].Actor = by
			}
		}
		after.EventSeq = seq
		err = s.Store.ApplyTask(ctx, Change{Before: before, After: after, From: from, Events: events, RootCharge: charge})
		switch item := failedItem(err); item {
		case "":
		case ItemTask:
			continue // changed under us: read again and re-check
		default:
			return Task{}, s.rejection(ctx, after, nil, item)
		}
		if err != nil {
			return Task{}, err
		}
		if after.Status != before.Status {
			s.publish(ctx, after, before.Status)
		}
		return after, nil
	}
	return Task{}, apperr.New(apperr.ECONFLICT, "task %s is changing too fast; try again", id).WithReason("Contention")
}

func coalesce(t *time.Time, now time.Time) *time.Time {
	if t != nil {
		return t
	}
	return &now
}

// TaskStatusChanged is the event published on every status change; the
// assignee learns of cancellation and reassignment through it.
type TaskStatusChanged struct {
	TeamID         string  `json:"team_id"`
	TaskID         string  `json:"task_id"`
	Assignee       string  `json:"assignee"`
	Status         Status  `json:"status"`
	PreviousStatus Status  `json:"previous_status,omitempty"`
	ParentID       string  `json:"parent_task_id,omitempty"`
	RootID         string  `json:"root_task_id"`
	Depth          int     `json:"delegation_depth"`
	TokensUsed     int     `json:"tokens_used"`
	CostUSD        float64 `json:"cost_usd"`
	Error          string  `json:"error,omitempty"`
}

// publish announces a status change. The change is already committed; a
// failed publish is logged, not undone (the task record is the truth).
func (s *Service) publish(ctx context.Context, t Task, prev Status) {
	if s.Bus == nil {
		return
	}
	ev := TaskStatusChanged{
		TeamID: t.TeamID, TaskID: t.ID, Assignee: t.Assignee, Status: t.Status, PreviousStatus: prev,
		ParentID: t.ParentID, RootID: t.RootID, Depth: t.Depth, TokensUsed: t.TokensUsed, CostUSD: t.CostUSD, Error: t.Error,
	}
	if err := s.Bus.Publish(ctx, "TaskStatusChanged", ev); err != nil {
		s.Log.Error("publish TaskStatusChanged", "task_id", t.ID, "error", err.Error())
	}
}

// ---- The board's verbs (API) ----

// Start moves a queued task to running, or resumes a blocked one.
func (s *Service) Start(ctx context.Context, teamID, id, by string) (Task, error) {
	return s.transition(ctx, teamID, id, ActStart, by, func(before Task, _ *Task) ([]Event, error) {
		if before.Status == Blocked {
			return []Event{{Type: EvResumed}}, nil
		}
		return []Event{{Type: EvStarted}}, nil
	})
}

// Complete finishes a running task with its output.
func (s *Service) Complete(ctx context.Context, teamID, id, by string, output string, artifacts []string) (Task, error) {
	if utf8.RuneCountInString(output) > maxInstructions {
		return Task{}, apperr.Invalid("output", "output is longer than %d characters", maxInstructions)
	}
	return s.transition(ctx, teamID, id, ActComplete, by, func(_ Task, after *Task) ([]Event, error) {
		after.Result = output
		if artifacts != nil {
			after.ResultArtifacts = artifacts
		}
		return []Event{{Type: EvCompleted, Payload: map[string]any{"output_chars": utf8.RuneCountInString(output)}}}, nil
	})
}

// Fail ends a running task with a reason.
func (s *Service) Fail(ctx context.Context, teamID, id, by, reason string) (Task, error) {
	if strings.TrimSpace(reason) == "" {
		return Task{}, apperr.Invalid("reason", "reason is required")
	}
	return s.transition(ctx, teamID, id, ActFail, by, func(_ Task, after *Task) ([]Event, error) {
		after.Error = reason
		return []Event{{Type: EvFailed, Payload: map[string]any{"reason": reason}}}, nil
	})
}

// Block pauses a running task (waiting on a person or a dependency); it
// gives its slot back until it resumes.
func (s *Service) Block(ctx context.Context, teamID, id, by, reason string) (Task, error) {
	return s.transition(ctx, teamID, id, ActBlock, by, func(before Task, _ *Task) ([]Event, error) {
		if before.Execute {
			return nil, apperr.New(apperr.ECONFLICT, "a task run by the delegation state machine cannot be blocked; cancel it instead").
				WithReason(ReasonState).WithDetail("status", string(before.Status))
		}
		return []Event{{Type: EvBlocked, Payload: map[string]any{"reason": reason}}}, nil
	})
}

// Cancel ends a task that has not finished; a running execution is stopped.
func (s *Service) Cancel(ctx context.Context, teamID, id, by, reason string) (Task, error) {
	var prev Task
	t, err := s.transition(ctx, teamID, id, ActCancel, by, func(before Task, after *Task) ([]Event, error) {
		prev = before
		after.Error = reason
		return []Event{{Type: EvCanceled, Payload: map[string]any{"reason": reason, "previous_status": string(before.Status)}}}, nil
	})
	if err != nil {
		return Task{}, err
	}
	if prev.Execute {
		s.stop(ctx, prev, "canceled: "+reason)
	}
	return t, nil
}

func (s *Service) stop(ctx context.Context, t Task, cause string) {
	if s.Runner == nil || t.Runs == 0 {
		return
	}
	arn := s.Runner.ExecutionARN(executionName(t))
	if err := s.Runner.Stop(ctx, arn, cause); err != nil {
		s.Log.Warn("stop execution", "task_id", t.ID, "execution", arn, "error", err.Error())
	}
}

// Reassign gives a task that has not finished to another agent; a running
// task goes back to queued (its execution is stopped, and a task that
// executes runs again for the new assignee). The new assignee must be
// active, below its limit, and not already in the delegation chain.
func (s *Service) Reassign(ctx context.Context, teamID, id, by, assignee string) (Task, error) {
	if !agents.ValidSlug(assignee) {
		return Task{}, apperr.Invalid("assignee", "assignee must be an agent slug")
	}
	var prev Task
	t, err := s.transition(ctx, teamID, id, ActAssign, by, func(before Task, after *Task) ([]Event, error) {
		prev = before
		if assignee == before.Assignee {
			return nil, apperr.Invalid("assignee", "the task is already assigned to %s", assignee)
		}
		if before.CreatedBy.Type == "agent" && before.CreatedBy.ID == assignee {
			return nil, apperr.New(apperr.EINVALID, "an agent cannot delegate a task to itself").WithReason(ReasonSelf)
		}
		if slices.Contains(before.Chain[:len(before.Chain)-1], assignee) {
			return nil, apperr.New(apperr.EREJECTED, "agent %q is already in the delegation chain", assignee).
				WithReason(ReasonCycle).WithDetail("chain", before.Chain)
		}
		after.Assignee = assignee
		after.Chain[len(after.Chain)-1] = assignee
		after.Error = ""
		if before.Execute {
			after.Runs = before.Runs + 1
		}
		return []Event{{Type: EvAssigned, Payload: map[string]any{"from": before.Assignee, "to": assignee, "previous_status": string(before.Status)}}}, nil
	})
	if apperr.Is(err, apperr.ENOTFOUND) && prev.ID != "" {
		return Task{}, apperr.NotFound("agent", assignee)
	}
	if err != nil {
		return Task{}, err
	}
	if prev.Execute {
		s.stop(ctx, prev, "reassigned to "+assignee)
		return s.launch(ctx, t)
	}
	return t, nil
}

// ---- The delegation state machine's steps ----

// ErrNotRunnable means the task is no longer in a state the execution can
// act on (canceled, reassigned, swept); the execution ends quietly.
var ErrNotRunnable = errors.New("task is not runnable")

// ExecStart marks the task running for the execution executionARN.
// Retried calls for the same execution succeed again.
func (s *Service) ExecStart(ctx context.Context, teamID, id, executionARN string) (Task, error) {
	t, err := s.transition(ctx, teamID, id, ActStart, "execution", func(before Task, after *Task) ([]Event, error) {
		if before.Status != Queued || !before.Execute {
			return nil, ErrNotRunnable
		}
		after.Execution = executionARN
		return []Event{{Type: EvStarted, Payload: map[string]any{"execution_arn": executionARN}}}, nil
	})
	if apperr.Code(err) == apperr.ECONFLICT || errors.Is(err, ErrNotRunnable) {
		cur, gerr := s.Store.GetTask(ctx, teamID, id)
		if gerr == nil && cur.Status == Running && cur.Execution == executionARN {
			return cur, nil
		}
		return Task{}, ErrNotRunnable
	}
	return t, err
}

// ExecComplete records the worker's result.
func (s *Service) ExecComplete(ctx context.Context, teamID, id, executionARN string, r worker.Result) (Task, error) {
	t, err := s.transition(ctx, teamID, id, ActComplete, "execution", func(before Task, after *Task) ([]Event, error) {
		if before.Execution != executionARN {
			return nil, ErrNotRunnable
		}
		after.Result = r.Output
		return []Event{{Type: EvCompleted, Payload: map[string]any{"tokens_used": after.TokensUsed, "tool_calls": after.ToolCalls, "cost_usd": after.CostUSD, "model_id": r.ModelID}}}, nil
	})
	if apperr.Code(err) == apperr.ECONFLICT {
		return Task{}, ErrNotRunnable
	}
	return t, err
}

// ExecFail records the final failure after the payload went to the
// dead-letter queue: failed, or timed_out when the deadline passed.
func (s *Service) ExecFail(ctx context.Context, teamID, id, executionARN, errName, cause string) (Task, error) {
	act, evType := ActFail, EvFailed
	if errName == "States.Timeout" || errName == "TaskTimedOut" {
		act, evType = ActTimeout, EvTimedOut
	}
	msg := causeMessage(cause)
	t, err := s.transition(ctx, teamID, id, act, "execution", func(before Task, after *Task) ([]Event, error) {
		if before.Execution != executionARN {
			return nil, ErrNotRunnable
		}
		after.Error = errName
		if msg != "" {
			after.Error += ": " + msg
		}
		return []Event{
			{Type: EvDeadLettered, Payload: map[string]any{"error": errName, "cause": msg}},
			{Type: evType, Payload: map[string]any{"error": errName, "cause": msg}},
		}, nil
	})
	if apperr.Code(err) == apperr.ECONFLICT {
		return Task{}, ErrNotRunnable
	}
	return t, err
}

// causeMessage extracts the message of a Lambda error cause
// ({"errorMessage": …, "errorType": …}); other causes pass through.
func causeMessage(cause string) string {
	var c struct {
		ErrorMessage string `json:"errorMessage"`
	}
	if json.Unmarshal([]byte(cause), &c) == nil && c.ErrorMessage != "" {
		return c.ErrorMessage
	}
	return cause
}

// Sweep ends every running task more than SweepGrace past its deadline as
// timed_out and stops its execution. It covers what the state machine
// cannot: an execution that timed out, was stopped, or a board task nobody
// finished. Returns how many tasks it ended.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	refs, err := s.Store.DueTasks(ctx, s.now().Add(-SweepGrace), 100)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range refs {
		var prev Task
		_, err := s.transition(ctx, r.TeamID, r.ID, ActTimeout, "sweeper", func(before Task, after *Task) ([]Event, error) {
			if before.Deadline == nil || before.Deadline.After(s.now().Add(-SweepGrace)) {
				return nil, ErrNotRunnable // resumed or re-read with a later deadline
			}
			prev = before
			after.Error = "TaskTimedOut: the task was still running past its deadline"
			return []Event{{Type: EvTimedOut, Payload: map[string]any{"deadline": before.Deadline, "swept": true}}}, nil
		})
		if err != nil {
			if !errors.Is(err, ErrNotRunnable) && apperr.Code(err) != apperr.ECONFLICT {
				s.Log.Error("sweep", "task_id", r.ID, "error", err.Error())
			}
			continue
		}
		n++
		if prev.Execute {
			s.stop(ctx, prev, "deadline passed")
		}
	}
	return n, nil
}

// Tracker connects the worker to the task record (worker.Tracker).
type Tracker struct{ Svc *Service }

var _ worker.Tracker = Tracker{}

// Begin implements worker.Tracker.
func (tr Tracker) Begin(ctx context.Context, p worker.Payload) (time.Time, error) {
	t, err := tr.Svc.Store.GetTask(ctx, p.TeamID, p.TaskID)
	if apperr.Is(err, apperr.ENOTFOUND) {
		return time.Time{}, worker.InvalidTask{Msg: "task " + p.TaskID + " not found"}
	}
	if err != nil {
		return time.Time{}, err
	}
	if t.Status != Running || t.Assignee != p.Assignee {
		return time.Time{}, worker.ErrNotRunnable
	}
	if t.Deadline == nil {
		return time.Time{}, nil
	}
	return *t.Deadline, nil
}

// Record implements worker.Tracker: one conditional append, only while the
// task is running.
func (tr Tracker) Record(ctx context.Context, p worker.Payload, u worker.Usage, evs ...worker.TrackEvent) error {
	_, err := tr.Svc.apply(ctx, p.TeamID, p.TaskID, []Status{Running}, "", "agent:"+p.Assignee, func(before Task, after *Task) ([]Event, error) {
		if before.Status != Running || before.Assignee != p.Assignee {
			return nil, worker.ErrNotRunnable
		}
		after.TokensUsed += u.Tokens
		after.ToolCalls += u.ToolCalls
		after.CostUSD += u.CostUSD
		out := make([]Event, len(evs))
		for i, e := range evs {
			out[i] = Event{Type: e.Type, Payload: e.Payload}
		}
		return out, nil
	})
	return err
}

// StillRunning implements worker.Tracker.
func (tr Tracker) StillRunning(ctx context.Context, p worker.Payload) (bool, error) {
	t, err := tr.Svc.Store.GetTask(ctx, p.TeamID, p.TaskID)
	if err != nil {
		return false, err
	}
	return t.Status == Running && t.Assignee == p.Assignee, nil
}
