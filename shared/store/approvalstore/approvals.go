package approvalstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/work/approvals"
)

var _ approvals.Store = (*Store)(nil)

// policyItem is a team's approval policy; see keys.go for its key.
type policyItem struct {
	PK            string     `dynamodbav:"pk"`
	SK            string     `dynamodbav:"sk"`
	Type          string     `dynamodbav:"type"`
	Tools         []string   `dynamodbav:"tools"`
	Agents        []string   `dynamodbav:"agents"`
	MinCostUSD    *float64   `dynamodbav:"min_estimated_cost_usd,omitempty"`
	ExpirySeconds int        `dynamodbav:"expiry_seconds"`
	Deciders      []string   `dynamodbav:"deciders,omitempty"`
	UpdatedAt     *time.Time `dynamodbav:"updated_at,omitempty"`
	UpdatedBy     string     `dynamodbav:"updated_by,omitempty"`
}

// approvalItem is one tool call's approval; see keys.go for its key. The
// arguments are JSON text, for the reason reportItem's parameters are: a
// tool's arguments are the model's free-form object.
type approvalItem struct {
	PK                string     `dynamodbav:"pk"`
	SK                string     `dynamodbav:"sk"`
	Type              string     `dynamodbav:"type"`
	ID                string     `dynamodbav:"id"`
	Status            string     `dynamodbav:"status"`
	Tool              string     `dynamodbav:"tool"`
	Arguments         string     `dynamodbav:"arguments_json"`
	ApprovedArguments string     `dynamodbav:"approved_arguments_json,omitempty"`
	Agent             string     `dynamodbav:"agent"`
	TaskID            string     `dynamodbav:"task_id,omitempty"`
	ConversationID    string     `dynamodbav:"conversation_id,omitempty"`
	CallID            string     `dynamodbav:"call_id"`
	Reasons           []string   `dynamodbav:"reasons"`
	EstimatedCostUSD  float64    `dynamodbav:"estimated_cost_usd"`
	Reason            string     `dynamodbav:"reason,omitempty"`
	DecidedBy         string     `dynamodbav:"decided_by,omitempty"`
	UserID            string     `dynamodbav:"user_id,omitempty"`
	CreatedAt         time.Time  `dynamodbav:"created_at"`
	ExpiresAt         time.Time  `dynamodbav:"expires_at"`
	DecidedAt         *time.Time `dynamodbav:"decided_at,omitempty"`
	Token             string     `dynamodbav:"task_token,omitempty"`
	ExecutionARN      string     `dynamodbav:"execution_arn,omitempty"`
}

func toApprovalItem(a approvals.Approval) approvalItem {
	return approvalItem{
		PK: dynamo.TeamPK(a.TeamID), SK: dynamo.ApprovalSK(a.ID), Type: "approval", ID: a.ID, Status: string(a.Status), Tool: a.Tool,
		Arguments: string(a.Arguments), ApprovedArguments: string(a.ApprovedArguments), Agent: a.Agent, TaskID: a.TaskID,
		ConversationID: a.ConversationID, CallID: a.CallID, Reasons: a.Reasons, EstimatedCostUSD: a.EstimatedCostUSD,
		Reason: a.Reason, DecidedBy: a.DecidedBy, UserID: a.UserID, CreatedAt: a.CreatedAt, ExpiresAt: a.ExpiresAt, DecidedAt: a.DecidedAt,
		Token: a.Token, ExecutionARN: a.ExecutionARN,
	}
}

func fromApprovalItem(teamID string, m map[string]types.AttributeValue) (approvals.Approval, error) {
	var it approvalItem
	if err := dynamo.Unmarshal(m, &it); err != nil {
		return approvals.Approval{}, err
	}
	a := approvals.Approval{
		TeamID: teamID, ID: it.ID, Status: approvals.Status(it.Status), Tool: it.Tool, Arguments: json.RawMessage(it.Arguments),
		Agent: it.Agent, TaskID: it.TaskID, ConversationID: it.ConversationID, CallID: it.CallID, Reasons: it.Reasons,
		EstimatedCostUSD: it.EstimatedCostUSD, Reason: it.Reason, DecidedBy: it.DecidedBy, UserID: it.UserID, CreatedAt: it.CreatedAt,
		ExpiresAt: it.ExpiresAt, DecidedAt: it.DecidedAt, Token: it.Token, ExecutionARN: it.ExecutionARN,
	}
	if it.ApprovedArguments != "" {
		a.ApprovedArguments = json.RawMessage(it.ApprovedArguments)
	}
	if a.Reasons == nil {
		a.Reasons = []string{}
	}
	return a, nil
}

// GetApprovalPolicy implements approvals.Store.
func (s *Store) GetApprovalPolicy(ctx context.Context, teamID string) (approvals.Policy, error) {
	m, err := s.GetItem(ctx, dynamo.Key(dynamo.TeamPK(teamID), dynamo.SKPolicy))
	if err != nil || m == nil {
		return approvals.Policy{}, err
	}
	var it policyItem
	if err := dynamo.Unmarshal(m, &it); err != nil {
		return approvals.Policy{}, dynamo.Internal(err, "unmarshal")
	}
	return approvals.Policy{Tools: it.Tools, Agents: it.Agents, MinEstimatedCostUSD: it.MinCostUSD, ExpirySeconds: it.ExpirySeconds,
		Deciders: it.Deciders, UpdatedAt: it.UpdatedAt, UpdatedBy: it.UpdatedBy}, nil
}

// PutApprovalPolicy implements approvals.Store: the whole policy, replaced.
func (s *Store) PutApprovalPolicy(ctx context.Context, teamID string, p approvals.Policy) error {
	item, err := dynamo.Marshal(policyItem{PK: dynamo.TeamPK(teamID), SK: dynamo.SKPolicy, Type: "approval_policy", Tools: p.Tools, Agents: p.Agents,
		MinCostUSD: p.MinEstimatedCostUSD, ExpirySeconds: p.ExpirySeconds, Deciders: p.Deciders, UpdatedAt: p.UpdatedAt, UpdatedBy: p.UpdatedBy})
	if err != nil {
		return dynamo.Internal(err, "marshal")
	}
	if _, err := s.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.Table, Item: item}); err != nil {
		return dynamo.Internal(err, "PutItem")
	}
	return nil
}

// RegisterApproval implements approvals.Store: a put conditioned on the
// key being free; when it is taken, an update of the token conditioned on
// the approval still pending (ALL_NEW), or the approval as it is when it
// was decided (ALL_OLD), with no second read.
func (s *Store) RegisterApproval(ctx context.Context, a approvals.Approval) (approvals.Approval, bool, error) {
	created, err := s.PutNew(ctx, toApprovalItem(a))
	if err != nil {
		return approvals.Approval{}, false, err
	}
	if created {
		return a, true, nil
	}
	u := expression.Set(dynamo.Name("task_token"), dynamo.Value(a.Token)).Set(dynamo.Name("execution_arn"), dynamo.Value(a.ExecutionARN))
	e, err := dynamo.Build(&u, dynamo.Name("status").Equal(dynamo.Value(string(approvals.Pending))))
	if err != nil {
		return approvals.Approval{}, false, dynamo.Internal(err, "expression")
	}
	out, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.Table, Key: dynamo.Key(dynamo.TeamPK(a.TeamID), dynamo.ApprovalSK(a.ID)), UpdateExpression: e.Update(),
		ConditionExpression: e.Condition(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		ReturnValues: types.ReturnValueAllNew, ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	got := map[string]types.AttributeValue(nil)
	if old, failed := dynamo.ConditionFailed(err); failed {
		got = old
	} else if err != nil {
		return approvals.Approval{}, false, dynamo.Internal(err, "UpdateItem")
	} else {
		got = out.Attributes
	}
	stored, err := fromApprovalItem(a.TeamID, got)
	if err != nil {
		return approvals.Approval{}, false, dynamo.Internal(err, "unmarshal")
	}
	return stored, false, nil
}

// GetApproval implements approvals.Store.
func (s *Store) GetApproval(ctx context.Context, teamID, id string) (approvals.Approval, error) {
	return dynamo.Get(ctx, s, dynamo.Key(dynamo.TeamPK(teamID), dynamo.ApprovalSK(id)), "approval", id, func(m map[string]types.AttributeValue) (approvals.Approval, error) {
		return fromApprovalItem(teamID, m)
	})
}

// ListApprovals implements approvals.Store, newest first (approval ids
// sort by time); status and task are filter expressions.
func (s *Store) ListApprovals(ctx context.Context, teamID string, f approvals.Filter, p paging.Page) ([]approvals.Approval, string, error) {
	var filters []expression.ConditionBuilder
	if f.Status != "" {
		filters = append(filters, dynamo.Name("status").Equal(dynamo.Value(string(f.Status))))
	}
	if f.TaskID != "" {
		filters = append(filters, dynamo.Name("task_id").Equal(dynamo.Value(f.TaskID)))
	}
	in, err := dynamo.BuiltQuery("", dynamo.KeyIs(dynamo.AttrPK, dynamo.TeamPK(teamID)).And(dynamo.HasPrefix(dynamo.AttrSK, dynamo.PrefixApproval)), dynamo.AllOf(filters), false)
	if err != nil {
		return nil, "", dynamo.Internal(err, "expression")
	}
	list := []approvals.Approval{}
	next, err := s.QueryPage(ctx, in, "approvals:"+teamID, p, func(m map[string]types.AttributeValue) error {
		a, err := fromApprovalItem(teamID, m)
		list = append(list, a)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return list, next, nil
}

// DecideApproval implements approvals.Store: one UpdateItem conditioned
// on the approval being pending, ALL_NEW (the service refuses a human's
// decision past the expiry before writing); a failed condition explains itself with
// the item as it was (ALL_OLD).
func (s *Store) DecideApproval(ctx context.Context, teamID, id string, d approvals.Decision) (approvals.Approval, error) {
	at := d.At.UTC()
	u := expression.Set(dynamo.Name("status"), dynamo.Value(string(d.Status))).Set(dynamo.Name("decided_by"), dynamo.Value(d.By)).
		Set(dynamo.Name("decided_at"), dynamo.Value(at))
	if d.Reason != "" {
		u = u.Set(dynamo.Name("reason"), dynamo.Value(d.Reason))
	}
	if d.UserID != "" {
		u = u.Set(dynamo.Name("user_id"), dynamo.Value(d.UserID))
	}
	if len(d.Arguments) > 0 {
		u = u.Set(dynamo.Name("approved_arguments_json"), dynamo.Value(string(d.Arguments)))
	}
	cond := dynamo.Name("status").Equal(dynamo.Value(string(approvals.Pending)))
	e, err := dynamo.Build(&u, cond)
	if err != nil {
		return approvals.Approval{}, dynamo.Internal(err, "expression")
	}
	out, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.Table, Key: dynamo.Key(dynamo.TeamPK(teamID), dynamo.ApprovalSK(id)), UpdateExpression: e.Update(),
		ConditionExpression: e.Condition(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		ReturnValues: types.ReturnValueAllNew, ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if old, failed := dynamo.ConditionFailed(err); failed {
		if len(old) == 0 {
			return approvals.Approval{}, apperr.NotFound("approval", id)
		}
		cur, err := fromApprovalItem(teamID, old)
		if err != nil {
			return approvals.Approval{}, dynamo.Internal(err, "unmarshal")
		}
		st := cur.Status
		return approvals.Approval{}, apperr.New(apperr.ECONFLICT, "approval %s is already %s", id, st).
			WithReason("AlreadyDecided").WithDetail("status", string(st))
	}
	if err != nil {
		return approvals.Approval{}, dynamo.Internal(err, "UpdateItem")
	}
	a, err := fromApprovalItem(teamID, out.Attributes)
	if err != nil {
		return approvals.Approval{}, dynamo.Internal(err, "unmarshal")
	}
	return a, nil
}
