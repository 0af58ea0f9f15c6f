package taskstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// Roles of the due-date items in a task's transactions.
const (
	roleDue        = "due entry"
	roleEscalation = tasks.ItemEscalation
)

// dueItem is a task's entry in the due-date index (see keys.go): in the
// index while the task is tasks.Task.DueWatched, written in the task's
// own transactions. It is an item of its own, not attributes of the
// task, because the task's gsi3 entry is its running deadline: a running
// task with a due date needs both entries at once. An entry leaves the
// index by a put without its index keys, expiring a day later (TTL),
// rather than by a delete: every function that writes tasks is granted
// PutItem, and a delete would need DeleteItem granted to all of them.
type dueItem struct {
	PK        string    `dynamodbav:"pk"`
	SK        string    `dynamodbav:"sk"`
	Type      string    `dynamodbav:"type"`
	GSI3PK    string    `dynamodbav:"gsi3pk,omitempty"`
	GSI3SK    string    `dynamodbav:"gsi3sk,omitempty"`
	TeamID    string    `dynamodbav:"team_id"`
	ID        string    `dynamodbav:"id"`
	DueAt     time.Time `dynamodbav:"due_at"`
	ExpiresAt int64     `dynamodbav:"expires_at,omitempty"`
}

// dueGone is how long an entry out of the index stays before it expires.
const dueGone = 24 * time.Hour

// dueEntry is t's entry: in the index when in, else out of it and expiring.
func dueEntry(teamID, id string, dueAt time.Time, in bool, now time.Time) dueItem {
	it := dueItem{PK: dynamo.TeamPK(teamID), SK: dynamo.TaskDueSK(id), Type: "task_due", TeamID: teamID, ID: id, DueAt: dueAt.UTC()}
	if in {
		it.GSI3PK, it.GSI3SK = dynamo.TaskDueGSI3PK, dynamo.TaskDueGSI3SK(dueAt, teamID, id)
	} else {
		it.ExpiresAt = dynamo.TTL(now.Add(dueGone))
	}
	return it
}

// writeDue keeps t's due entry in step with the change from b (nil at
// create) to a: in the index when a is watched and b was not, had another
// due date or another status; out of it when a no longer is watched. The
// status change is there for a task stored before due entries existed
// (watched, with no entry): it gets one the next time its status changes,
// and the puts stay off the writes that only append progress.
func writeDue(tx *dynamo.Txn, b *tasks.Task, a tasks.Task) {
	was := b != nil && b.DueWatched()
	switch {
	case a.DueWatched() && (!was || !b.DueAt.Equal(*a.DueAt) || b.Status != a.Status):
		tx.Put(roleDue, dueEntry(a.TeamID, a.ID, *a.DueAt, true, a.UpdatedAt), expression.ConditionBuilder{})
	case was && !a.DueWatched():
		tx.Put(roleDue, dueEntry(a.TeamID, a.ID, *b.DueAt, false, a.UpdatedAt), expression.ConditionBuilder{})
	}
	writeEscalation(tx, b, a)
}

// escalationItem is a task's escalation as the task item holds it (a
// nested map); it converts from tasks.Escalation like budgetsItem.
type escalationItem struct {
	ID         string     `dynamodbav:"id"`
	Status     string     `dynamodbav:"status"`
	CreatedAt  time.Time  `dynamodbav:"created_at"`
	Resolution string     `dynamodbav:"resolution,omitempty"`
	ResolvedBy string     `dynamodbav:"resolved_by,omitempty"`
	Action     string     `dynamodbav:"action,omitempty"`
	ResolvedAt *time.Time `dynamodbav:"resolved_at,omitempty"`
}

func toEscalationItem(e *tasks.Escalation) *escalationItem {
	if e == nil {
		return nil
	}
	it := escalationItem(*e)
	return &it
}

func (it *escalationItem) toEscalation() *tasks.Escalation {
	if it == nil {
		return nil
	}
	e := tasks.Escalation(*it)
	return &e
}

// escalationListing is the escalation item the consultations' store lists
// (consultationstore's escalationItem): the body is the listing's JSON.
type escalationListing struct {
	PK        string    `dynamodbav:"pk"`
	SK        string    `dynamodbav:"sk"`
	Type      string    `dynamodbav:"type"`
	ID        string    `dynamodbav:"id"`
	Status    string    `dynamodbav:"esc_status"`
	Body      string    `dynamodbav:"body_json"`
	CreatedAt time.Time `dynamodbav:"created_at"`
	TaskID    string    `dynamodbav:"task_id"`
}

// writeEscalation writes the listing of a's escalation when the change
// opens it (a new item) or resolves it (conditioned on still open).
func writeEscalation(tx *dynamo.Txn, b *tasks.Task, a tasks.Task) {
	if a.Escalation == nil {
		return
	}
	var before *tasks.Escalation
	if b != nil {
		before = b.Escalation
	}
	opened := before == nil
	resolved := before != nil && before.Status == tasks.EscalationOpen && a.Escalation.Status == tasks.EscalationResolved
	if !opened && !resolved {
		return
	}
	body, err := json.Marshal(a.EscalationRecord())
	if err != nil {
		body = []byte("{}") // a map of strings: does not fail
	}
	it := escalationListing{PK: dynamo.TeamPK(a.TeamID), SK: dynamo.EscalationSK(a.Escalation.ID), Type: "escalation",
		ID: a.Escalation.ID, Status: a.Escalation.Status, Body: string(body), CreatedAt: a.Escalation.CreatedAt, TaskID: a.ID}
	if opened {
		tx.Create(roleEscalation, it)
		return
	}
	tx.Put(roleEscalation, it, dynamo.Name("esc_status").Equal(dynamo.Value(tasks.EscalationOpen)))
}

// OverdueTasks implements tasks.DueStore: one Query of the due entries
// (gsi3, TDUE), earliest first.
func (s *Store) OverdueTasks(ctx context.Context, before time.Time, limit int) ([]tasks.Ref, error) {
	refs := []tasks.Ref{}
	err := s.DueBefore(ctx, dynamo.TaskDueGSI3PK, before, limit, func(m map[string]types.AttributeValue) error {
		var it dueItem
		err := dynamo.Unmarshal(m, &it)
		refs = append(refs, tasks.Ref{TeamID: it.TeamID, ID: it.ID})
		return err
	})
	if err != nil {
		return nil, err
	}
	return refs, nil
}

// DropDueEntry implements tasks.DueStore: the entry put out of the index
// (see dueItem), if it is there.
func (s *Store) DropDueEntry(ctx context.Context, r tasks.Ref) error {
	item, err := dynamo.Marshal(dueEntry(r.TeamID, r.ID, time.Time{}, false, time.Now()))
	if err != nil {
		return dynamo.Internal(err, "marshal")
	}
	_, err = s.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.Table, Item: item, ConditionExpression: aws.String("attribute_exists(pk)")})
	if _, failed := dynamo.ConditionFailed(err); failed {
		return nil // gone already
	}
	if err != nil {
		return dynamo.Internal(err, "PutItem")
	}
	return nil
}

// boardPolicyItem is a team's board policy; see keys.go for its key.
type boardPolicyItem struct {
	PK              string     `dynamodbav:"pk"`
	SK              string     `dynamodbav:"sk"`
	Type            string     `dynamodbav:"type"`
	EscalateOverdue bool       `dynamodbav:"escalate_overdue"`
	UpdatedAt       *time.Time `dynamodbav:"updated_at,omitempty"`
}

// GetBoardPolicy implements tasks.DueStore.
func (s *Store) GetBoardPolicy(ctx context.Context, teamID string) (tasks.BoardPolicy, error) {
	m, err := s.GetItem(ctx, dynamo.Key(dynamo.TeamPK(teamID), dynamo.SKBoardPolicy))
	if err != nil || m == nil {
		return tasks.BoardPolicy{}, err
	}
	var it boardPolicyItem
	if err := dynamo.Unmarshal(m, &it); err != nil {
		return tasks.BoardPolicy{}, dynamo.Internal(err, "unmarshal")
	}
	return tasks.BoardPolicy{EscalateOverdue: it.EscalateOverdue, UpdatedAt: it.UpdatedAt}, nil
}

// PutBoardPolicy implements tasks.DueStore: the whole policy, replaced.
func (s *Store) PutBoardPolicy(ctx context.Context, teamID string, p tasks.BoardPolicy) error {
	item, err := dynamo.Marshal(boardPolicyItem{PK: dynamo.TeamPK(teamID), SK: dynamo.SKBoardPolicy, Type: "board_policy",
		EscalateOverdue: p.EscalateOverdue, UpdatedAt: p.UpdatedAt})
	if err != nil {
		return dynamo.Internal(err, "marshal")
	}
	if _, err := s.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.Table, Item: item}); err != nil {
		return dynamo.Internal(err, "PutItem")
	}
	return nil
}
