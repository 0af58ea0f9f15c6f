package taskstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/work/approvals"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

var _ tasks.Store = (*Store)(nil)

// taskItem is a task in the table; see keys.go for its keys and indexes.
type taskItem struct {
	PK     string `dynamodbav:"pk"`
	SK     string `dynamodbav:"sk"`
	Type   string `dynamodbav:"type"`
	GSI1PK string `dynamodbav:"gsi1pk"`
	GSI1SK string `dynamodbav:"gsi1sk"`
	GSI2PK string `dynamodbav:"gsi2pk,omitempty"`
	GSI2SK string `dynamodbav:"gsi2sk,omitempty"`
	GSI3PK string `dynamodbav:"gsi3pk,omitempty"`
	GSI3SK string `dynamodbav:"gsi3sk,omitempty"`
	// GSI4PK and GSI4SK: the work of its conversation (with a
	// conversation_id only).
	GSI4PK string `dynamodbav:"gsi4pk,omitempty"`
	GSI4SK string `dynamodbav:"gsi4sk,omitempty"`

	TeamID         string   `dynamodbav:"team_id"`
	ID             string   `dynamodbav:"id"`
	CreatedByType  string   `dynamodbav:"created_by_type"`
	CreatedByID    string   `dynamodbav:"created_by_id"`
	UserID         string   `dynamodbav:"user_id,omitempty"`
	TraceID        string   `dynamodbav:"trace_id,omitempty"`
	Assignee       string   `dynamodbav:"assignee"`
	ParentID       string   `dynamodbav:"parent_task_id"`
	RootID         string   `dynamodbav:"root_task_id"`
	ConversationID string   `dynamodbav:"conversation_id"`
	ResultDelivery string   `dynamodbav:"result_delivery,omitempty"`
	TaskType       string   `dynamodbav:"task_type"`
	Title          string   `dynamodbav:"title"`
	Instructions   string   `dynamodbav:"instructions"`
	Context        string   `dynamodbav:"context"`
	ExpectedOutput string   `dynamodbav:"expected_output"`
	InputArtifacts []string `dynamodbav:"input_artifacts"`
	// Input and Output are the task's JSON payloads stored as their JSON
	// text (a string attribute), not as a map: the text reads back
	// byte for byte, where a map would lose key order and escapes, turn
	// numbers into DynamoDB numbers (38 digits, at most 9.99e125, so 1e400
	// would fail the write) and could not hold a top-level JSON string.
	// Absent when the task has none (and on tasks stored before them).
	Input     string           `dynamodbav:"input,omitempty"`
	Priority  string           `dynamodbav:"priority"`
	DueAt     *time.Time       `dynamodbav:"due_at,omitempty"`
	Budgets   budgetsItem      `dynamodbav:"budgets"`
	ModelTier string           `dynamodbav:"model_tier,omitempty"`
	Report    *reportCheckItem `dynamodbav:"report,omitempty"`
	// ConsultationID: the consultation the task answers.
	ConsultationID string `dynamodbav:"consultation_id,omitempty"`
	// HeldCall is stored as its JSON (workflow.ApprovalWait): the adapter
	// carries it for the execution's input and never reads into it.
	HeldCall        string     `dynamodbav:"held_call,omitempty"`
	SessionID       string     `dynamodbav:"session_id,omitempty"`
	ToolPacks       []string   `dynamodbav:"tool_packs,omitempty"`
	PlanID          string     `dynamodbav:"plan_id,omitempty"`
	CostCapUSD      float64    `dynamodbav:"cost_cap_usd"`
	TreeCostUSD     float64    `dynamodbav:"tree_cost_usd"`
	Depth           int        `dynamodbav:"delegation_depth"`
	Chain           []string   `dynamodbav:"chain"`
	Status          string     `dynamodbav:"status"`
	Result          string     `dynamodbav:"result"`
	Output          string     `dynamodbav:"output,omitempty"`
	ResultArtifacts []string   `dynamodbav:"result_artifacts"`
	Error           string     `dynamodbav:"error"`
	TokensUsed      int        `dynamodbav:"tokens_used"`
	ToolCalls       int        `dynamodbav:"tool_calls"`
	CostUSD         float64    `dynamodbav:"cost_usd"`
	Execute         bool       `dynamodbav:"execute"`
	Execution       string     `dynamodbav:"execution_arn"`
	Runs            int        `dynamodbav:"runs"`
	Deadline        *time.Time `dynamodbav:"deadline,omitempty"`
	StatusReason    string     `dynamodbav:"status_reason,omitempty"`
	ApprovalIDs     []string   `dynamodbav:"approval_ids,omitempty"`
	Version         int        `dynamodbav:"version"`
	EventSeq        int        `dynamodbav:"event_seq"`
	Waiter          string     `dynamodbav:"waiter_token,omitempty"`
	CreatedAt       time.Time  `dynamodbav:"created_at"`
	UpdatedAt       time.Time  `dynamodbav:"updated_at"`
	StartedAt       *time.Time `dynamodbav:"started_at,omitempty"`
	CompletedAt     *time.Time `dynamodbav:"completed_at,omitempty"`
	// OverdueAt and Escalation: due dates (overdue.go).
	OverdueAt  *time.Time      `dynamodbav:"overdue_at,omitempty"`
	Escalation *escalationItem `dynamodbav:"escalation,omitempty"`
}

// budgetsItem is a task's worker budgets (a nested map). It converts from
// the task's Budgets field, so a field added there fails to compile here
// rather than going unstored; this package does not import worker.
type budgetsItem struct {
	MaxTokens      int `dynamodbav:"max_tokens"`
	MaxToolCalls   int `dynamodbav:"max_tool_calls"`
	TimeoutSeconds int `dynamodbav:"timeout_seconds"`
}

// reportCheckItem is a report task's template check (a nested map); it
// converts from workflow.ReportCheck like budgetsItem from Budgets.
type reportCheckItem struct {
	ReportID    string `dynamodbav:"report_id"`
	Type        string `dynamodbav:"type"`
	Format      string `dynamodbav:"format"`
	MaxSections int    `dynamodbav:"max_sections"`
}

func toReportCheckItem(c *workflow.ReportCheck) *reportCheckItem {
	if c == nil {
		return nil
	}
	it := reportCheckItem(*c)
	return &it
}

func (it *reportCheckItem) toCheck() *workflow.ReportCheck {
	if it == nil {
		return nil
	}
	c := workflow.ReportCheck(*it)
	return &c
}

// taskEventItem is one entry of a task's timeline (append-only). The
// payload is a map built by the task service, stored as a nested map.
type taskEventItem struct {
	PK      string         `dynamodbav:"pk"`
	SK      string         `dynamodbav:"sk"`
	Type    string         `dynamodbav:"type"`
	TaskID  string         `dynamodbav:"task_id"`
	Seq     int            `dynamodbav:"seq"`
	Event   string         `dynamodbav:"event"`
	Actor   string         `dynamodbav:"actor"`
	Payload map[string]any `dynamodbav:"payload,omitempty"`
	At      time.Time      `dynamodbav:"at"`
}

func toTaskItem(t tasks.Task) taskItem {
	it := taskItem{
		PK: dynamo.TeamPK(t.TeamID), SK: dynamo.TaskSK(t.ID), Type: "task",
		GSI1PK: dynamo.AssigneeGSI1PK(t.TeamID, t.Assignee), GSI1SK: dynamo.TaskSK(t.ID),
		TeamID: t.TeamID, ID: t.ID, CreatedByType: t.CreatedBy.Type, CreatedByID: t.CreatedBy.ID, UserID: t.UserID, TraceID: t.TraceID,
		Assignee: t.Assignee, ParentID: t.ParentID, RootID: t.RootID, ConversationID: t.ConversationID,
		ResultDelivery: t.ResultDelivery, TaskType: t.Type, Title: t.Title, Instructions: t.Instructions, Context: t.Context, ExpectedOutput: t.ExpectedOutput,
		InputArtifacts: t.InputArtifacts, Input: string(t.Input), Priority: t.Priority, DueAt: t.DueAt, Budgets: budgetsItem(t.Budgets),
		ModelTier: t.ModelTier, Report: toReportCheckItem(t.Report), ConsultationID: t.ConsultationID, HeldCall: heldCallJSON(t.HeldCall), SessionID: t.SessionID, ToolPacks: t.ToolPacks, PlanID: t.PlanID,
		CostCapUSD: t.CostCapUSD, TreeCostUSD: t.TreeCostUSD, Depth: t.Depth, Chain: t.Chain, Status: string(t.Status),
		Result: t.Result, Output: string(t.Output), ResultArtifacts: t.ResultArtifacts, Error: t.Error, TokensUsed: t.TokensUsed,
		ToolCalls: t.ToolCalls, CostUSD: t.CostUSD, Execute: t.Execute, Execution: t.Execution, Runs: t.Runs,
		Deadline: t.Deadline, StatusReason: t.StatusReason, ApprovalIDs: t.ApprovalIDs, Version: t.Version, EventSeq: t.EventSeq, Waiter: t.Waiter, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
		StartedAt: t.StartedAt, CompletedAt: t.CompletedAt, OverdueAt: t.OverdueAt, Escalation: toEscalationItem(t.Escalation),
	}
	it.GSI4PK, it.GSI4SK = dynamo.ConvWorkKeys(t.TeamID, t.ConversationID, t.CreatedAt, t.ID)
	if t.ParentID != "" {
		it.GSI2PK, it.GSI2SK = dynamo.ParentGSI2PK(t.TeamID, t.ParentID), dynamo.TaskSK(t.ID)
	}
	// Only queued work items are in their assignee's queue (a sparse
	// entry, gone with the put that starts, cancels or moves the task).
	if t.InQueue() {
		it.GSI2PK, it.GSI2SK = dynamo.QueueGSI2PK(t.TeamID, t.Assignee), dynamo.QueueGSI2SK(tasks.PriorityRank(t.Priority), t.ID)
	}
	// Only running tasks are in the sweeper's index (a sparse index).
	if t.Status == tasks.Running && t.Deadline != nil {
		it.GSI3PK, it.GSI3SK = dynamo.DueGSI3PK(dynamo.DueShard(t.ID)), dynamo.DueGSI3SK(*t.Deadline, t.TeamID, t.ID)
	}
	return it
}

func fromTaskItem(m map[string]types.AttributeValue) (tasks.Task, error) {
	var it taskItem
	if err := dynamo.Unmarshal(m, &it); err != nil {
		return tasks.Task{}, err
	}
	t := tasks.Task{
		TeamID: it.TeamID, ID: it.ID, CreatedBy: tasks.Creator{Type: it.CreatedByType, ID: it.CreatedByID}, UserID: it.UserID, TraceID: it.TraceID,
		Assignee: it.Assignee, ParentID: it.ParentID, RootID: it.RootID, ConversationID: it.ConversationID,
		ResultDelivery: it.ResultDelivery, Type: it.TaskType, Title: it.Title, Instructions: it.Instructions, Context: it.Context, ExpectedOutput: it.ExpectedOutput,
		InputArtifacts: it.InputArtifacts, Priority: it.Priority, DueAt: it.DueAt,
		ModelTier: it.ModelTier, Report: it.Report.toCheck(), ConsultationID: it.ConsultationID, SessionID: it.SessionID, ToolPacks: it.ToolPacks, PlanID: it.PlanID,
		CostCapUSD: it.CostCapUSD, TreeCostUSD: it.TreeCostUSD, Depth: it.Depth, Chain: it.Chain, Status: tasks.Status(it.Status),
		Result: it.Result, ResultArtifacts: it.ResultArtifacts, Error: it.Error, TokensUsed: it.TokensUsed,
		ToolCalls: it.ToolCalls, CostUSD: it.CostUSD, Execute: it.Execute, Execution: it.Execution, Runs: it.Runs,
		Deadline: it.Deadline, StatusReason: it.StatusReason, ApprovalIDs: it.ApprovalIDs, Version: it.Version, EventSeq: it.EventSeq, Waiter: it.Waiter, CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt,
		StartedAt: it.StartedAt, CompletedAt: it.CompletedAt, OverdueAt: it.OverdueAt, Escalation: it.Escalation.toEscalation(),
	}
	t.Budgets.MaxTokens, t.Budgets.MaxToolCalls, t.Budgets.TimeoutSeconds = it.Budgets.MaxTokens, it.Budgets.MaxToolCalls, it.Budgets.TimeoutSeconds
	if it.HeldCall != "" {
		var h workflow.ApprovalWait
		if err := json.Unmarshal([]byte(it.HeldCall), &h); err != nil {
			return tasks.Task{}, fmt.Errorf("task %s: held call: %w", it.ID, err)
		}
		t.HeldCall = &h
	}
	if it.Input != "" {
		t.Input = json.RawMessage(it.Input)
	}
	if it.Output != "" {
		t.Output = json.RawMessage(it.Output)
	}
	if t.InputArtifacts == nil {
		t.InputArtifacts = []string{}
	}
	if t.ResultArtifacts == nil {
		t.ResultArtifacts = []string{}
	}
	if t.Chain == nil {
		t.Chain = []string{}
	}
	return t, nil
}

// writeEvents appends a task's new timeline entries; an event is written once
// and never replaced.
func writeEvents(t *dynamo.Txn, teamID, taskID string, events []tasks.Event) {
	for _, e := range events {
		t.Create(tasks.ItemTask, taskEventItem{
			PK: dynamo.TeamPK(teamID), SK: dynamo.TaskEventSK(taskID, e.Seq), Type: "task_event", TaskID: taskID,
			Seq: e.Seq, Event: e.Type, Actor: e.Actor, Payload: e.Payload, At: e.At,
		})
	}
}

// budgetLeft is the condition that a collaboration's spend is below its cap.
func budgetLeft() expression.ConditionBuilder {
	return dynamo.Name("tree_cost_usd").LessThan(dynamo.Name("cost_cap_usd"))
}

// delegable is the condition on a delegated task's parent: running, not
// too deep, the assignee not already in its chain, the creator its
// assignee, and (when the parent is the collaboration's root) budget left.
func delegable(t tasks.Task, parent *tasks.Task) expression.ConditionBuilder {
	if t.PlanStep() {
		// A plan's step: its root is running and is that plan's (the
		// chain does not bind: a plan composes any agents' skills).
		c := dynamo.Name("status").Equal(dynamo.Value(string(tasks.Running))).And(
			dynamo.Name("delegation_depth").LessThan(dynamo.Value(tasks.MaxDepth)),
			dynamo.Name("plan_id").Equal(dynamo.Value(t.PlanID)),
		)
		if parent.RootID == parent.ID {
			c = c.And(budgetLeft())
		}
		return c
	}
	c := dynamo.Name("status").Equal(dynamo.Value(string(tasks.Running))).And(
		dynamo.Name("delegation_depth").LessThan(dynamo.Value(tasks.MaxDepth)),
		dynamo.Name("chain").Contains(t.Assignee).Not(),
		dynamo.Name("assignee").Equal(dynamo.Value(t.CreatedBy.ID)),
	)
	if parent.RootID == parent.ID {
		c = c.And(budgetLeft())
	}
	return c
}

// CreateTask implements tasks.Store: the task, its first events, the
// assignee's slot (or, for a work item, its place in the assignee's
// queue) and every delegation rule in one transaction, with the
// conversation it is linked to (a conversation of the team: the key is
// under the team's partition) checked in the same transaction, second,
// so an unknown conversation is the reason a create with several
// problems gives. A sub-task's conversation is checked only when it is
// not its parent's (the parent's was checked when it was created).
func (s *Store) CreateTask(ctx context.Context, t tasks.Task, parent *tasks.Task, events []tasks.Event) error {
	tx := s.Txn()
	tx.Keyed(ctx, t.TeamID, tasks.RefKind, t.ID, t.CreatedAt)
	tx.Create(tasks.ItemTask, toTaskItem(t))
	if t.ConversationID != "" && (parent == nil || parent.ConversationID != t.ConversationID) {
		tx.Exists(tasks.ItemConversation, dynamo.Key(dynamo.TeamPK(t.TeamID), dynamo.ConvSK(t.ConversationID)))
	}
	writeEvents(tx, t.TeamID, t.ID, events)
	writeDue(tx, nil, t)
	switch {
	case t.WorkItem():
		enterQueue(tx, t.TeamID, t.Assignee) // a new task is queued
	case t.PlanRoot():
		// No slot (Task.HoldsSlot); the lead must still be active.
		tx.Check(tasks.ItemAssignee, dynamo.Key(dynamo.TeamPK(t.TeamID), dynamo.AgentSK(t.Assignee)), dynamo.Name("status").Equal(dynamo.Value("active")))
	case t.Ticket != "":
		useTicket(tx, t) // the slot a release handed to the ticket
	default:
		takeSlot(tx, t.TeamID, t.Assignee)
	}
	// The slot's condition already requires the assignee: a task an
	// agent creates for itself (a chat reply held for approval) checks its
	// agent once (a transaction names each item once).
	if parent == nil && t.CreatedBy.Type == "agent" && t.CreatedBy.ID != t.Assignee {
		tx.Exists(tasks.ItemCreator, dynamo.Key(dynamo.TeamPK(t.TeamID), dynamo.AgentSK(t.CreatedBy.ID)))
	}
	if parent != nil {
		tx.Check(tasks.ItemParent, dynamo.Key(dynamo.TeamPK(t.TeamID), dynamo.TaskSK(parent.ID)), delegable(t, parent))
		if parent.RootID != parent.ID {
			tx.Check(tasks.ItemRoot, dynamo.Key(dynamo.TeamPK(t.TeamID), dynamo.TaskSK(parent.RootID)), budgetLeft())
		}
	}
	return taskError(dynamo.Replayed(tx.Run(ctx), tasks.RefKind))
}

// taskError turns a canceled transaction into the tasks domain's error:
// *tasks.ConditionFailed naming the item, or a retryable conflict.
func taskError(err error) error {
	c, ok := dynamo.AsCanceled(err)
	if !ok {
		return err
	}
	if c.Role != "" {
		return &tasks.ConditionFailed{Item: c.Role}
	}
	return dynamo.RetryConflict(err, "the change conflicted with a concurrent one; try again")
}

// ApplyTask implements tasks.Store: the new task state conditioned on the
// version read and the allowed source states, its events, the slot and
// queue moves (released in the same transaction as a terminal transition) and the
// charge to the collaboration's root.
func (s *Store) ApplyTask(ctx context.Context, c tasks.Change) error {
	b, a := c.Before, c.After
	cond := dynamo.Name("version").Equal(dynamo.Value(b.Version))
	if len(c.From) > 0 {
		from := make([]expression.OperandBuilder, len(c.From))
		for i, st := range c.From {
			from[i] = dynamo.Value(string(st))
		}
		cond = cond.And(dynamo.Name("status").In(from[0], from[1:]...))
	}
	tx := s.Txn()
	tx.Put(tasks.ItemTask, toTaskItem(a), cond)
	writeEvents(tx, a.TeamID, a.ID, c.Events)
	writeDue(tx, &b, a)
	moved := b.Assignee != a.Assignee
	if b.HoldsSlot() && (moved || !a.HoldsSlot()) {
		releaseSlot(tx, b.TeamID, b.Assignee, c.Handoff, c.ForceRelease)
	}
	if a.HoldsSlot() && (moved || !b.HoldsSlot()) {
		takeSlot(tx, a.TeamID, a.Assignee)
	}
	// A work item holds no slot: it is counted in its assignee's queue
	// while queued (never both counters of one agent in one transaction:
	// a task is either kind for good).
	if b.InQueue() && (moved || !a.InQueue()) {
		leaveQueue(tx, b.TeamID, b.Assignee)
	}
	if a.InQueue() && (moved || !b.InQueue()) {
		enterQueue(tx, a.TeamID, a.Assignee)
	}
	if c.RootCharge > 0 && a.RootID != a.ID {
		// The version bump makes a concurrent write of the root (which
		// read the old tree cost) fail its condition and re-read.
		tx.Update(dynamo.RoleCharge, dynamo.Key(dynamo.TeamPK(a.TeamID), dynamo.TaskSK(a.RootID)),
			expression.Add(dynamo.Name("tree_cost_usd"), dynamo.Value(c.RootCharge)).Add(dynamo.Name("version"), dynamo.Value(1)), expression.ConditionBuilder{})
	}
	// The task's approvals still pending end with it (canceled), each
	// conditioned on pending: one decided meanwhile (or not stored yet)
	// fails its role, and the service writes again without it.
	for _, e := range c.EndApprovals {
		u := expression.Set(dynamo.Name("status"), dynamo.Value(string(approvals.Canceled))).Set(dynamo.Name("decided_by"), dynamo.Value(e.By)).
			Set(dynamo.Name("decided_at"), dynamo.Value(e.At.UTC())).Set(dynamo.Name("reason"), dynamo.Value(e.Reason))
		tx.Update(tasks.ItemApproval+e.ID, dynamo.Key(dynamo.TeamPK(a.TeamID), dynamo.ApprovalSK(e.ID)), u,
			dynamo.Name("status").Equal(dynamo.Value(string(approvals.Pending))))
	}
	return taskError(tx.Run(ctx))
}

// terminalStatuses are the task statuses that never change.
var terminalStatuses = []tasks.Status{tasks.Completed, tasks.Failed, tasks.Canceled, tasks.TimedOut}

// ReleaseResult implements tasks.Store: one UpdateItem, conditioned on
// the delivery being DeliverInReply and the status not terminal, that
// sets DeliverToConversation and bumps the version (a writer that read
// the task before puts it whole, so it must fail its condition and read
// again rather than write the old delivery back). The task comes back as
// written (ALL_NEW), or as it was when the condition failed (ALL_OLD).
func (s *Store) ReleaseResult(ctx context.Context, teamID, id string, at time.Time) (tasks.Task, error) {
	u := expression.Set(dynamo.Name("result_delivery"), dynamo.Value(tasks.DeliverToConversation)).
		Set(dynamo.Name("updated_at"), dynamo.Value(at.UTC())).Add(dynamo.Name("version"), dynamo.Value(1))
	ended := make([]expression.OperandBuilder, len(terminalStatuses))
	for i, st := range terminalStatuses {
		ended[i] = dynamo.Value(string(st))
	}
	cond := dynamo.Name("result_delivery").Equal(dynamo.Value(tasks.DeliverInReply)).
		And(dynamo.Name("status").In(ended[0], ended[1:]...).Not())
	e, err := dynamo.Build(&u, cond)
	if err != nil {
		return tasks.Task{}, dynamo.Internal(err, "expression")
	}
	out, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.Table, Key: dynamo.Key(dynamo.TeamPK(teamID), dynamo.TaskSK(id)), UpdateExpression: e.Update(),
		ConditionExpression: e.Condition(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		ReturnValues: types.ReturnValueAllNew, ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	item := map[string]types.AttributeValue(nil)
	if old, failed := dynamo.ConditionFailed(err); failed {
		if len(old) == 0 {
			return tasks.Task{}, apperr.NotFound("task", id)
		}
		item = old
	} else if err != nil {
		return tasks.Task{}, dynamo.Internal(err, "UpdateItem")
	} else {
		item = out.Attributes
	}
	t, err := fromTaskItem(item)
	if err != nil {
		return tasks.Task{}, dynamo.Internal(err, "unmarshal")
	}
	return t, nil
}

// GetTask implements tasks.Store.
func (s *Store) GetTask(ctx context.Context, teamID, id string) (tasks.Task, error) {
	m, err := s.GetItem(ctx, dynamo.Key(dynamo.TeamPK(teamID), dynamo.TaskSK(id)))
	if err != nil {
		return tasks.Task{}, err
	}
	if m == nil {
		return tasks.Task{}, apperr.NotFound("task", id)
	}
	t, err := fromTaskItem(m)
	if err != nil {
		return tasks.Task{}, dynamo.Internal(err, "unmarshal")
	}
	return t, nil
}

// ListTasks implements tasks.Store, newest first. A conversation filter
// reads gsi4 (the conversation's work, its other kinds of item filtered
// out and the page refilled: QueryFill), a parent filter gsi2, an
// assignee filter gsi1, anything else the team's partition; the
// remaining filters are applied by DynamoDB after the key condition.
func (s *Store) ListTasks(ctx context.Context, teamID string, f tasks.Filter, p paging.Page) ([]tasks.Task, string, error) {
	var index string
	var keyCond expression.KeyConditionBuilder
	var filters []expression.ConditionBuilder
	switch {
	case f.ConversationID != "":
		// The conversation's work: its other kinds of item filtered out,
		// and the page refilled while that leaves it short.
		index, keyCond = dynamo.IndexGSI4, dynamo.KeyIs(dynamo.AttrGSI4PK, dynamo.ConvWorkGSI4PK(teamID, f.ConversationID))
		filters = append(filters, dynamo.Name("type").Equal(dynamo.Value("task")))
		if f.Assignee != "" {
			filters = append(filters, dynamo.Name("assignee").Equal(dynamo.Value(f.Assignee)))
		}
	case f.Parent != "":
		index, keyCond = dynamo.IndexGSI2, dynamo.KeyIs(dynamo.AttrGSI2PK, dynamo.ParentGSI2PK(teamID, f.Parent))
		if f.Assignee != "" {
			filters = append(filters, dynamo.Name("assignee").Equal(dynamo.Value(f.Assignee)))
		}
	case f.Assignee != "":
		index, keyCond = dynamo.IndexGSI1, dynamo.KeyIs(dynamo.AttrGSI1PK, dynamo.AssigneeGSI1PK(teamID, f.Assignee))
	default:
		keyCond = dynamo.KeyIs(dynamo.AttrPK, dynamo.TeamPK(teamID)).And(dynamo.HasPrefix(dynamo.AttrSK, dynamo.PrefixTask))
	}
	if f.Status != "" {
		filters = append(filters, dynamo.Name("status").Equal(dynamo.Value(string(f.Status))))
	}
	if f.UserID != "" {
		filters = append(filters, dynamo.Name("user_id").Equal(dynamo.Value(f.UserID)))
	}
	if f.Agent != "" {
		filters = append(filters, dynamo.Name("assignee").Equal(dynamo.Value(f.Agent)).Or(
			dynamo.Name("created_by_type").Equal(dynamo.Value("agent")).And(dynamo.Name("created_by_id").Equal(dynamo.Value(f.Agent)))))
	}
	in, err := dynamo.BuiltQuery(index, keyCond, dynamo.AllOf(filters), false)
	if err != nil {
		return nil, "", dynamo.Internal(err, "expression")
	}
	list := []tasks.Task{}
	each := func(m map[string]types.AttributeValue) error {
		t, err := fromTaskItem(m)
		list = append(list, t)
		return err
	}
	scope := fmt.Sprintf("tasks:%s:%s", teamID, index)
	var next string
	if f.ConversationID != "" {
		next, err = s.QueryFill(ctx, in, scope+":"+f.ConversationID, p, each)
	} else {
		next, err = s.QueryPage(ctx, in, scope, p, each)
	}
	if err != nil {
		return nil, "", err
	}
	return list, next, nil
}

// QueuedWork implements tasks.Store: one Query of the agent's queue on
// gsi2, ascending (best first). The index is eventually consistent: an
// entry may be a task started a moment ago, which the start's conditional
// write then refuses.
func (s *Store) QueuedWork(ctx context.Context, teamID, assignee string, p paging.Page) ([]tasks.Task, string, error) {
	in, err := dynamo.BuiltQuery(dynamo.IndexGSI2, dynamo.KeyIs(dynamo.AttrGSI2PK, dynamo.QueueGSI2PK(teamID, assignee)), expression.ConditionBuilder{}, true)
	if err != nil {
		return nil, "", dynamo.Internal(err, "expression")
	}
	list := []tasks.Task{}
	next, err := s.QueryPage(ctx, in, fmt.Sprintf("queue:%s:%s", teamID, assignee), p, func(m map[string]types.AttributeValue) error {
		t, err := fromTaskItem(m)
		list = append(list, t)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return list, next, nil
}

// maxTaskEvents bounds one timeline read; a task has a handful of
// transitions and at most 2 events per tool call per run.
const maxTaskEvents = 1000

// ListTaskEvents implements tasks.Store, oldest first.
func (s *Store) ListTaskEvents(ctx context.Context, teamID, id string) ([]tasks.Event, error) {
	var out []tasks.Event
	in := dynamo.PrefixQuery(dynamo.TeamPK(teamID), dynamo.TaskEventPrefix(id), true)
	in.TableName, in.ConsistentRead = &s.Table, aws.Bool(true)
	for {
		res, err := s.DB.Query(ctx, in)
		if err != nil {
			return nil, dynamo.Internal(err, "Query")
		}
		for _, m := range res.Items {
			var it taskEventItem
			if err := dynamo.Unmarshal(m, &it); err != nil {
				return nil, dynamo.Internal(err, "unmarshal")
			}
			out = append(out, tasks.Event{Seq: it.Seq, Type: it.Event, Actor: it.Actor, Payload: it.Payload, At: it.At})
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
		if len(in.ExclusiveStartKey) == 0 || len(out) >= maxTaskEvents {
			return out, nil
		}
	}
}

// DueTasks implements tasks.Store: running tasks whose deadline is before
// the given time, across teams (the sweeper's index).
func (s *Store) DueTasks(ctx context.Context, before time.Time, limit int) ([]tasks.Ref, error) {
	var refs []tasks.Ref
	for shard := range dynamo.DueShards {
		err := s.DueBefore(ctx, dynamo.DueGSI3PK(shard), before, limit, func(m map[string]types.AttributeValue) error {
			var it taskItem
			err := dynamo.Unmarshal(m, &it)
			refs = append(refs, tasks.Ref{TeamID: it.TeamID, ID: it.ID})
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return refs, nil
}

// heldCallJSON is a task's held chat call as stored ("" when none).
func heldCallJSON(h *workflow.ApprovalWait) string {
	if h == nil {
		return ""
	}
	b, err := json.Marshal(h)
	if err != nil {
		// Only Arguments that are not JSON fail (the chat's tools check
		// them before holding a call): stored as no arguments.
		c := *h
		c.Arguments = json.RawMessage("{}")
		b, _ = json.Marshal(c)
	}
	return string(b)
}

// TaskAgents implements messaging.Directory: the task's assignee, the
// agent that created it and its delegation chain.
func (s *Store) TaskAgents(ctx context.Context, teamID, taskID string) ([]string, error) {
	t, err := s.GetTask(ctx, teamID, taskID)
	if err != nil {
		return nil, err
	}
	return t.Agents(), nil
}
