package evaluationstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing/evaluations"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
)

// An evaluation is one item (keys.go). Unlike the other stores' records it
// keeps the evaluation as one JSON document (doc), as the classifier's
// head does: it is written whole twice (created running, then finished)
// and always read whole, never filtered on a nested field, and its result
// nests lists of structs (200 misses with their scores, a confusion
// table) that as DynamoDB maps would repeat every attribute name in every
// element, several times the JSON's size against the 400 KB item. The
// attributes beside it (status, created_at, completed_at, message_count,
// threshold) are what the finish's condition reads and what a person
// scanning the table sees; doc is what the store reads back.

// evaluationItem is a routing evaluation.
type evaluationItem struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	Type      string `dynamodbav:"type"`
	ExpiresAt int64  `dynamodbav:"expires_at"`

	Status       string     `dynamodbav:"status"`
	CreatedAt    time.Time  `dynamodbav:"created_at"`
	CompletedAt  *time.Time `dynamodbav:"completed_at,omitempty"`
	MessageCount int        `dynamodbav:"message_count"`
	Threshold    float64    `dynamodbav:"threshold"`
	// Doc is the evaluations.Evaluation as JSON (without its team, which
	// the key holds).
	Doc string `dynamodbav:"doc"`
}

// maxDocBytes keeps an evaluation's item below DynamoDB's 400 KB, with
// room for its keys and attributes. At the evaluation's own bounds (a 64
// KiB request, its misses quoting those messages once more) a doc is some
// 200 KB at most: one over this is a bug, not a request to refuse.
const maxDocBytes = 350 * 1024

// toEvaluationItem is the stored form of e. The doc keeps <, > and &
// as they are: escaped, as json.Marshal does for HTML, each takes six
// bytes, and messages of code are full of them.
func toEvaluationItem(e evaluations.Evaluation) (evaluationItem, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return evaluationItem{}, err
	}
	doc := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	if len(doc) > maxDocBytes {
		return evaluationItem{}, fmt.Errorf("evaluation %s: %d bytes of JSON exceed an item", e.ID, len(doc))
	}
	return evaluationItem{
		PK: dynamo.TeamPK(e.TeamID), SK: dynamo.EvaluationSK(e.ID), Type: "evaluation",
		ExpiresAt: dynamo.TTL(e.CreatedAt.Add(evaluations.Retention)),
		Status:    e.Status, CreatedAt: e.CreatedAt, CompletedAt: e.CompletedAt, MessageCount: e.Count, Threshold: e.Threshold,
		Doc: string(doc),
	}, nil
}

// toEvaluation decodes the item's doc; the team is the key's.
func (it evaluationItem) toEvaluation(teamID string) (evaluations.Evaluation, error) {
	var e evaluations.Evaluation
	if err := json.Unmarshal([]byte(it.Doc), &e); err != nil {
		return e, fmt.Errorf("evaluation %s: %w", it.SK, err)
	}
	e.TeamID = teamID
	return e, nil
}

func fromEvaluationItem(teamID string, m map[string]types.AttributeValue) (evaluations.Evaluation, error) {
	var it evaluationItem
	if err := dynamo.Unmarshal(m, &it); err != nil {
		return evaluations.Evaluation{}, err
	}
	return it.toEvaluation(teamID)
}

// CreateEvaluation implements evaluations.Store: a put where no item has
// the key (ECONFLICT for an id taken; EINTERNAL for an evaluation over an
// item's size).
func (s *Store) CreateEvaluation(ctx context.Context, e evaluations.Evaluation) error {
	it, err := toEvaluationItem(e)
	if err != nil {
		return dynamo.Internal(err, "marshal")
	}
	created, err := s.PutNew(ctx, it)
	if err == nil && !created {
		return apperr.New(apperr.ECONFLICT, "evaluation %s exists", e.ID)
	}
	return err
}

// GetEvaluation implements evaluations.Store (ENOTFOUND for an unknown id
// or another team's: the key holds the team).
func (s *Store) GetEvaluation(ctx context.Context, teamID, id string) (evaluations.Evaluation, error) {
	return dynamo.Get(ctx, s, evaluationKey(teamID, id), "evaluation", id, func(m map[string]types.AttributeValue) (evaluations.Evaluation, error) {
		return fromEvaluationItem(teamID, m)
	})
}

// ListEvaluations implements evaluations.Store, newest first (evaluation
// ids sort by time), each without its messages and result. A page may
// hold fewer than its limit with a next token (DynamoDB reads at most
// 1 MB a page, a few dozen evaluations of the largest size).
func (s *Store) ListEvaluations(ctx context.Context, teamID string, p paging.Page) ([]evaluations.Evaluation, string, error) {
	list := []evaluations.Evaluation{}
	next, err := s.QueryPage(ctx, dynamo.PrefixQuery(dynamo.TeamPK(teamID), dynamo.PrefixEvaluation, false), "evaluations:"+teamID, p,
		func(m map[string]types.AttributeValue) error {
			e, err := fromEvaluationItem(teamID, m)
			e.Messages, e.Result = nil, nil
			list = append(list, e)
			return err
		})
	if err != nil {
		return nil, "", err
	}
	return list, next, nil
}

// FinishEvaluation implements evaluations.Store: of e it writes the
// status, error, completed_at and result, the rest as stored. The doc
// holds the messages, which e need not carry, so the item is read
// (consistently) and put back whole, conditioned on its status still
// being running: of two finishes racing, one is written and the other is
// ECONFLICT, as is a finish of an evaluation already ended. ENOTFOUND for
// an unknown id (or one the TTL deleted in between: the failed
// condition's ALL_OLD is then empty).
func (s *Store) FinishEvaluation(ctx context.Context, e evaluations.Evaluation) error {
	cur, err := s.GetEvaluation(ctx, e.TeamID, e.ID)
	if err != nil {
		return err
	}
	if cur.Status != evaluations.StatusRunning {
		return notRunning(e.ID, cur.Status)
	}
	cur.Status, cur.Error, cur.CompletedAt, cur.Result = e.Status, e.Error, e.CompletedAt, e.Result
	it, err := toEvaluationItem(cur)
	if err != nil {
		return dynamo.Internal(err, "marshal")
	}
	item, err := dynamo.Marshal(it)
	if err != nil {
		return dynamo.Internal(err, "marshal")
	}
	cond, err := dynamo.Build(nil, dynamo.Name("status").Equal(dynamo.Value(evaluations.StatusRunning)))
	if err != nil {
		return dynamo.Internal(err, "expression")
	}
	_, err = s.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.Table, Item: item, ConditionExpression: cond.Condition(),
		ExpressionAttributeNames: cond.Names(), ExpressionAttributeValues: cond.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if old, failed := dynamo.ConditionFailed(err); failed {
		if len(old) == 0 {
			return apperr.NotFound("evaluation", e.ID)
		}
		var was evaluationItem
		if err := dynamo.Unmarshal(old, &was); err != nil {
			return dynamo.Internal(err, "unmarshal")
		}
		return notRunning(e.ID, was.Status)
	}
	if err != nil {
		return dynamo.Internal(err, "PutItem")
	}
	return nil
}

// notRunning is the refusal of a finish of an evaluation that has ended.
func notRunning(id, status string) error {
	return apperr.New(apperr.ECONFLICT, "evaluation %s is already %s", id, status).WithReason("AlreadyFinished").WithDetail("status", status)
}

func evaluationKey(teamID, id string) map[string]types.AttributeValue {
	return dynamo.Key(dynamo.TeamPK(teamID), dynamo.EvaluationSK(id))
}
