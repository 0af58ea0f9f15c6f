package dynamo

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/apperr"
	"github.com/conclave-ai/conclave/shared/paging"
	"github.com/conclave-ai/conclave/shared/tasks"
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

	TeamID          string           `dynamodbav:"team_id"`
	ID              string           `dynamodbav:"id"`
	CreatedByType   string           `dynamodbav:"created_by_type"`
	CreatedByID     string           `dynamodbav:"created_by_id"`
	Assignee        string           `dynamodbav:"assignee"`
	ParentID        string           `dynamodbav:"parent_task_id"`
	RootID          string           `dynamodbav:"root_task_id"`
	ConversationID  string           `dynamodbav:"conversation_id"`
	TaskType        string           `dynamodbav:"task_type"`
	Title           string           `dynamodbav:"title"`
	Instructions    string           `dynamodbav:"instructions"`
	Context         string           `dynamodbav:"context"`
	ExpectedOutput  string           `dynamodbav:"expected_output"`
	InputArtifacts  []string         `dynamodbav:"input_artifacts"`
	Priority        string           `dynamodbav:"priority"`
	DueAt           *time.Time       `dynamodbav:"due_at,omitempty"`
	Budgets         workflow.Budgets `dynamodbav:"budgets"`
	CostCapUSD      float64          `dynamodbav:"cost_cap_usd"`
	TreeCostUSD     float64          `dynamodbav:"tree_cost_usd"`
	Depth           int              `dynamodbav:"delegation_depth"`
	Chain           []string         `dynamodbav:"chain"`
	Status          string           `dynamodbav:"status"`
	Result          string           `dynamodbav:"result"`
	ResultArtifacts []string         `dynamodbav:"result_artifacts"`
	Error           string           `dynamodbav:"error"`
	TokensUsed      int              `dynamodbav:"tokens_used"`
	ToolCalls       int              `dynamodbav:"tool_calls"`
	CostUSD         float64          `dynamodbav:"cost_usd"`
	Execute         bool             `dynamodbav:"execute"`
	Execution       string           `dynamodbav:"execution_arn"`
	Runs            int              `dynamodbav:"runs"`
	Deadline        *time.Time       `dynamodbav:"deadline,omitempty"`
	Version         int              `dynamodbav:"version"`
	EventSeq        int              `dynamodbav:"event_seq"`
	CreatedAt       time.Time        `dynamodbav:"created_at"`
	UpdatedAt       time.Time        `dynamodbav:"updated_at"`
	StartedAt       *time.Time       `dynamodbav:"started_at,omitempty"`
	CompletedAt     *time.Time       `dynamodbav:"completed_at,omitempty"`
}

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

// dueShards spreads running tasks' deadlines over a few index partitions
// so the sweeper's index never has one hot key.
const dueShards = 8

func dueShard(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % dueShards)
}

// dueKey sorts lexicographically by time (fixed width, UTC).
func dueKey(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func toTaskItem(t tasks.Task) (map[string]types.AttributeValue, error) {
	it := taskItem{
		PK: teamPK(t.TeamID), SK: taskSK(t.ID), Type: "task",
		GSI1PK: assigneeGSI1PK(t.TeamID, t.Assignee), GSI1SK: taskSK(t.ID),
		TeamID: t.TeamID, ID: t.ID, CreatedByType: t.CreatedBy.Type, CreatedByID: t.CreatedBy.ID,
		Assignee: t.Assignee, ParentID: t.ParentID, RootID: t.RootID, ConversationID: t.ConversationID,
		TaskType: t.Type, Title: t.Title, Instructions: t.Instructions, Context: t.Context, ExpectedOutput: t.ExpectedOutput,
		InputArtifacts: t.InputArtifacts, Priority: t.Priority, DueAt: t.DueAt, Budgets: t.Budgets,
		CostCapUSD: t.CostCapUSD, TreeCostUSD: t.TreeCostUSD, Depth: t.Depth, Chain: t.Chain, Status: string(t.Status),
		Result: t.Result, ResultArtifacts: t.ResultArtifacts, Error: t.Error, TokensUsed: t.TokensUsed,
		ToolCalls: t.ToolCalls, CostUSD: t.CostUSD, Execute: t.Execute, Execution: t.Execution, Runs: t.Runs,
		Deadline: t.Deadline, Version: t.Version, EventSeq: t.EventSeq, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
		StartedAt: t.StartedAt, CompletedAt: t.CompletedAt,
	}
	if t.ParentID != "" {
		it.GSI2PK, it.GSI2SK = parentGSI2PK(t.TeamID, t.ParentID), taskSK(t.ID)
	}
	// Only running tasks are in the sweeper's index (a sparse index).
	if t.Status == tasks.Running && t.Deadline != nil {
		it.GSI3PK = fmt.Sprintf("%s%d", prefixDue, dueShard(t.ID))
		it.GSI3SK = dueKey(*t.Deadline) + "#" + t.TeamID + "#" + t.ID
	}
	return attributevalue.MarshalMap(it)
}

func fromTaskItem(m map[string]types.AttributeValue) (tasks.Task, error) {
	var it taskItem
	if err := attributevalue.UnmarshalMap(m, &it); err != nil {
		return tasks.Task{}, err
	}
	t := tasks.Task{
		TeamID: it.TeamID, ID: it.ID, CreatedBy: tasks.Creator{Type: it.CreatedByType, ID: it.CreatedByID},
		Assignee: it.Assignee, ParentID: it.ParentID, RootID: it.RootID, ConversationID: it.ConversationID,
		Type: it.TaskType, Title: it.Title, Instructions: it.Instructions, Context: it.Context, ExpectedOutput: it.ExpectedOutput,
		InputArtifacts: it.InputArtifacts, Priority: it.Priority, DueAt: it.DueAt, Budgets: it.Budgets,
		CostCapUSD: it.CostCapUSD, TreeCostUSD: it.TreeCostUSD, Depth: it.Depth, Chain: it.Chain, Status: tasks.Status(it.Status),
		Result: it.Result, ResultArtifacts: it.ResultArtifacts, Error: it.Error, TokensUsed: it.TokensUsed,
		ToolCalls: it.ToolCalls, CostUSD: it.CostUSD, Execute: it.Execute, Execution: it.Execution, Runs: it.Runs,
		Deadline: it.Deadline, Version: it.Version, EventSeq: it.EventSeq, CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt,
		StartedAt: it.StartedAt, CompletedAt: it.CompletedAt,
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

func (s *Store) eventPuts(teamID, taskID string, events []tasks.Event) ([]types.TransactWriteItem, error) {
	out := make([]types.TransactWriteItem, 0, len(events))
	for _, e := range events {
		item, err := attributevalue.MarshalMap(taskEventItem{
			PK: teamPK(teamID), SK: taskEventSK(taskID, e.Seq), Type: "task_event", TaskID: taskID,
			Seq: e.Seq, Event: e.Type, Actor: e.Actor, Payload: e.Payload, At: e.At,
		})
		if err != nil {
			return nil, err
		}
		// Append-only: an event is written once and never replaced.
		out = append(out, types.TransactWriteItem{Put: &types.Put{
			TableName: &s.Table, Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)"),
		}})
	}
	return out, nil
}

func num(n int) types.AttributeValue { return &types.AttributeValueMemberN{Value: strconv.Itoa(n)} }

func numf(f float64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatFloat(f, 'f', -1, 64)}
}

// takeSlot increments the assignee's active-task counter unless it is at the
// limit, and checks (same transaction) that the assignee is active.
func (s *Store) takeSlot(teamID, slug string) []types.TransactWriteItem {
	return []types.TransactWriteItem{
		{Update: &types.Update{
			TableName: &s.Table, Key: key(teamPK(teamID), loadSK(slug)),
			UpdateExpression:          aws.String("ADD active_tasks :one SET team_id = :team, agent_slug = :agent"),
			ConditionExpression:       aws.String("attribute_not_exists(active_tasks) OR active_tasks < :max"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1), ":max": num(tasks.MaxActivePerAgent), ":team": str(teamID), ":agent": str(slug)},
		}},
		{ConditionCheck: &types.ConditionCheck{
			TableName: &s.Table, Key: key(teamPK(teamID), agentSK(slug)),
			ConditionExpression:       aws.String("#st = :active"),
			ExpressionAttributeNames:  map[string]string{"#st": "status"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":active": str("active")},
		}},
	}
}

func (s *Store) releaseSlot(teamID, slug string) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName: &s.Table, Key: key(teamPK(teamID), loadSK(slug)),
		UpdateExpression:          aws.String("ADD active_tasks :minus"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":minus": num(-1)},
	}}
}

// budgetLeft is the condition that a collaboration's spend is below its cap.
const budgetLeft = "tree_cost_usd < cost_cap_usd"

// CreateTask implements tasks.Store: the task, its first events, the
// assignee's slot and every delegation rule in one transaction.
func (s *Store) CreateTask(ctx context.Context, t tasks.Task, parent *tasks.Task, events []tasks.Event) error {
	item, err := toTaskItem(t)
	if err != nil {
		return internal(err, "marshal")
	}
	tx := []types.TransactWriteItem{{Put: &types.Put{TableName: &s.Table, Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")}}}
	roles := []string{tasks.ItemTask}
	evs, err := s.eventPuts(t.TeamID, t.ID, events)
	if err != nil {
		return internal(err, "marshal")
	}
	for range evs {
		roles = append(roles, tasks.ItemTask)
	}
	tx = append(tx, evs...)
	tx = append(tx, s.takeSlot(t.TeamID, t.Assignee)...)
	roles = append(roles, tasks.ItemSlot, tasks.ItemAssignee)
	if parent == nil && t.CreatedBy.Type == "agent" {
		tx = append(tx, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName: &s.Table, Key: key(teamPK(t.TeamID), agentSK(t.CreatedBy.ID)), ConditionExpression: aws.String("attribute_exists(pk)"),
		}})
		roles = append(roles, tasks.ItemCreator)
	}
	if parent != nil {
		cond := "#st = :running AND delegation_depth < :maxd AND NOT contains(chain, :assignee) AND assignee = :creator"
		if parent.RootID == parent.ID {
			cond += " AND " + budgetLeft // the parent is the collaboration's root
		}
		tx = append(tx, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName: &s.Table, Key: key(teamPK(t.TeamID), taskSK(parent.ID)),
			ConditionExpression:      aws.String(cond),
			ExpressionAttributeNames: map[string]string{"#st": "status"},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":running": str(string(tasks.Running)), ":maxd": num(tasks.MaxDepth),
				":assignee": str(t.Assignee), ":creator": str(t.CreatedBy.ID),
			},
		}})
		roles = append(roles, tasks.ItemParent)
		if parent.RootID != parent.ID {
			tx = append(tx, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
				TableName: &s.Table, Key: key(teamPK(t.TeamID), taskSK(parent.RootID)),
				ConditionExpression: aws.String(budgetLeft),
			}})
			roles = append(roles, tasks.ItemRoot)
		}
	}
	return s.transact(ctx, tx, roles)
}

// transact runs a transaction and names the item whose condition failed.
func (s *Store) transact(ctx context.Context, tx []types.TransactWriteItem, roles []string) error {
	_, err := s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: tx})
	if r := cancellationReasons(err); r != nil {
		for i, code := range r {
			if code == "ConditionalCheckFailed" && i < len(roles) {
				return &tasks.ConditionFailed{Item: roles[i]}
			}
		}
		return apperr.Wrap(apperr.ECONFLICT, err, "the change conflicted with a concurrent one; try again").WithReason("TransactionConflict")
	}
	if err != nil {
		return internal(err, "TransactWriteItems")
	}
	return nil
}

// ApplyTask implements tasks.Store: the new task state conditioned on the
// version read and the allowed source states, its events, the slot moves
// (released in the same transaction as a terminal transition) and the
// charge to the collaboration's root.
func (s *Store) ApplyTask(ctx context.Context, c tasks.Change) error {
	b, a := c.Before, c.After
	item, err := toTaskItem(a)
	if err != nil {
		return internal(err, "marshal")
	}
	vals := map[string]types.AttributeValue{":v": num(b.Version)}
	in := make([]string, len(c.From))
	for i, st := range c.From {
		k := fmt.Sprintf(":f%d", i)
		vals[k] = str(string(st))
		in[i] = k
	}
	cond := "version = :v"
	if len(in) > 0 {
		cond += " AND #st IN (" + strings.Join(in, ", ") + ")"
	}
	put := &types.Put{TableName: &s.Table, Item: item, ConditionExpression: aws.String(cond), ExpressionAttributeValues: vals}
	if len(in) > 0 {
		put.ExpressionAttributeNames = map[string]string{"#st": "status"}
	}
	tx := []types.TransactWriteItem{{Put: put}}
	roles := []string{tasks.ItemTask}
	evs, err := s.eventPuts(a.TeamID, a.ID, c.Events)
	if err != nil {
		return internal(err, "marshal")
	}
	for range evs {
		roles = append(roles, tasks.ItemTask)
	}
	tx = append(tx, evs...)
	moved := b.Assignee != a.Assignee
	if b.Status.HoldsSlot() && (moved || !a.Status.HoldsSlot()) {
		tx = append(tx, s.releaseSlot(b.TeamID, b.Assignee))
		roles = append(roles, "release")
	}
	if a.Status.HoldsSlot() && (moved || !b.Status.HoldsSlot()) {
		tx = append(tx, s.takeSlot(a.TeamID, a.Assignee)...)
		roles = append(roles, tasks.ItemSlot, tasks.ItemAssignee)
	}
	if c.RootCharge > 0 && a.RootID != a.ID {
		// The version bump makes a concurrent write of the root (which
		// read the old tree cost) fail its condition and re-read.
		tx = append(tx, types.TransactWriteItem{Update: &types.Update{
			TableName: &s.Table, Key: key(teamPK(a.TeamID), taskSK(a.RootID)),
			UpdateExpression:          aws.String("ADD tree_cost_usd :c, version :one"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":c": numf(c.RootCharge), ":one": num(1)},
		}})
		roles = append(roles, "charge")
	}
	return s.transact(ctx, tx, roles)
}

// GetTask implements tasks.Store.
func (s *Store) GetTask(ctx context.Context, teamID, id string) (tasks.Task, error) {
	out, err := s.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.Table, Key: key(teamPK(teamID), taskSK(id)), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return tasks.Task{}, internal(err, "GetItem")
	}
	if out.Item == nil {
		return tasks.Task{}, apperr.NotFound("task", id)
	}
	t, err := fromTaskItem(out.Item)
	if err != nil {
		return tasks.Task{}, internal(err, "unmarshal")
	}
	return t, nil
}

// ListTasks implements tasks.Store, newest first. A parent filter reads
// gsi2, an assignee filter gsi1, anything else the team's partition; the
// remaining filters are applied by DynamoDB after the key condition.
func (s *Store) ListTasks(ctx context.Context, teamID string, f tasks.Filter, p paging.Page) ([]tasks.Task, string, error) {
	in := &dynamodb.QueryInput{TableName: &s.Table, Limit: aws.Int32(int32(p.Limit)), ScanIndexForward: aws.Bool(false)}
	vals := map[string]types.AttributeValue{}
	var filters []string
	names := map[string]string{}
	switch {
	case f.Parent != "":
		in.IndexName = aws.String("gsi2")
		in.KeyConditionExpression = aws.String("gsi2pk = :k")
		vals[":k"] = str(parentGSI2PK(teamID, f.Parent))
		if f.Assignee != "" {
			filters = append(filters, "assignee = :as")
			vals[":as"] = str(f.Assignee)
		}
	case f.Assignee != "":
		in.IndexName = aws.String("gsi1")
		in.KeyConditionExpression = aws.String("gsi1pk = :k")
		vals[":k"] = str(assigneeGSI1PK(teamID, f.Assignee))
	default:
		in.KeyConditionExpression = aws.String("pk = :k AND begins_with(sk, :p)")
		vals[":k"], vals[":p"] = str(teamPK(teamID)), str(prefixTask)
	}
	if f.Status != "" {
		filters = append(filters, "#st = :st")
		names["#st"] = "status"
		vals[":st"] = str(string(f.Status))
	}
	if f.Agent != "" {
		filters = append(filters, "(assignee = :ag OR (created_by_type = :agent AND created_by_id = :ag))")
		vals[":ag"], vals[":agent"] = str(f.Agent), str("agent")
	}
	if len(filters) > 0 {
		in.FilterExpression = aws.String(strings.Join(filters, " AND "))
	}
	if len(names) > 0 {
		in.ExpressionAttributeNames = names
	}
	in.ExpressionAttributeValues = vals
	scope := fmt.Sprintf("tasks:%s:%s", teamID, aws.ToString(in.IndexName))
	start, err := decodeToken(scope, p.Token)
	if err != nil {
		return nil, "", err
	}
	in.ExclusiveStartKey = start
	out, err := s.DB.Query(ctx, in)
	if err != nil {
		return nil, "", internal(err, "Query")
	}
	list := make([]tasks.Task, 0, len(out.Items))
	for _, m := range out.Items {
		t, err := fromTaskItem(m)
		if err != nil {
			return nil, "", internal(err, "unmarshal")
		}
		list = append(list, t)
	}
	next, err := encodeToken(scope, out.LastEvaluatedKey)
	if err != nil {
		return nil, "", internal(err, "token")
	}
	return list, next, nil
}

// maxTaskEvents bounds one timeline read; a task has a handful of
// transitions and at most 2 events per tool call per run.
const maxTaskEvents = 1000

// ListTaskEvents implements tasks.Store, oldest first.
func (s *Store) ListTaskEvents(ctx context.Context, teamID, id string) ([]tasks.Event, error) {
	var out []tasks.Event
	var start map[string]types.AttributeValue
	for {
		res, err := s.DB.Query(ctx, &dynamodb.QueryInput{
			TableName: &s.Table, ConsistentRead: aws.Bool(true), ExclusiveStartKey: start,
			KeyConditionExpression: aws.String("pk = :k AND begins_with(sk, :p)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":k": str(teamPK(teamID)), ":p": str(prefixTaskEvent + id + "#"),
			},
		})
		if err != nil {
			return nil, internal(err, "Query")
		}
		for _, m := range res.Items {
			var it taskEventItem
			if err := attributevalue.UnmarshalMap(m, &it); err != nil {
				return nil, internal(err, "unmarshal")
			}
			out = append(out, tasks.Event{Seq: it.Seq, Type: it.Event, Actor: it.Actor, Payload: it.Payload, At: it.At})
		}
		start = res.LastEvaluatedKey
		if len(start) == 0 || len(out) >= maxTaskEvents {
			return out, nil
		}
	}
}

// AgentLoad implements tasks.Store.
func (s *Store) AgentLoad(ctx context.Context, teamID, slug string) (int, error) {
	out, err := s.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.Table, Key: key(teamPK(teamID), loadSK(slug)), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return 0, internal(err, "GetItem")
	}
	var it struct {
		Active int `dynamodbav:"active_tasks"`
	}
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return 0, internal(err, "unmarshal")
	}
	return it.Active, nil
}

// DueTasks implements tasks.Store: running tasks whose deadline is before
// the given time, across teams (the sweeper's index).
func (s *Store) DueTasks(ctx context.Context, before time.Time, limit int) ([]tasks.Ref, error) {
	var refs []tasks.Ref
	for shard := range dueShards {
		out, err := s.DB.Query(ctx, &dynamodb.QueryInput{
			TableName: &s.Table, IndexName: aws.String("gsi3"), Limit: aws.Int32(int32(limit)),
			KeyConditionExpression: aws.String("gsi3pk = :k AND gsi3sk < :before"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":k": str(fmt.Sprintf("%s%d", prefixDue, shard)), ":before": str(dueKey(before)),
			},
		})
		if err != nil {
			return nil, internal(err, "Query")
		}
		for _, m := range out.Items {
			var it struct {
				TeamID string `dynamodbav:"team_id"`
				ID     string `dynamodbav:"id"`
			}
			if err := attributevalue.UnmarshalMap(m, &it); err != nil {
				return nil, internal(err, "unmarshal")
			}
			refs = append(refs, tasks.Ref{TeamID: it.TeamID, ID: it.ID})
		}
	}
	return refs, nil
}
