// Package planstore stores compound plans (shared/work/plans) on the single
// table: one item per plan under its team, the plan as its JSON document
// beside the keys (a plan is read and written whole, a handful of steps).
package planstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/platform/streams"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/work/plans"
)

// Store is the planstore half of the single-table store.
type Store struct{ *dynamo.Store }

// New returns the store on table.
func New(db dynamo.API, table string) *Store { return &Store{dynamo.New(db, table)} }

var _ plans.Store = (*Store)(nil)

type planItem struct {
	PK   string `dynamodbav:"pk"`
	SK   string `dynamodbav:"sk"`
	Type string `dynamodbav:"type"`
	// Running plans are in the sweeper's index until their backstop.
	GSI3PK string `dynamodbav:"gsi3pk,omitempty"`
	GSI3SK string `dynamodbav:"gsi3sk,omitempty"`
	// GSI4PK and GSI4SK: the work of its conversation (with a
	// conversation_id only; the work listing reads the rest from Doc).
	GSI4PK string `dynamodbav:"gsi4pk,omitempty"`
	GSI4SK string `dynamodbav:"gsi4sk,omitempty"`
	TeamID string `dynamodbav:"team_id"`
	ID     string `dynamodbav:"id"`
	// UserID is the person whose turn started it, beside Doc's copy:
	// a member's listing filters on it.
	UserID  string `dynamodbav:"user_id,omitempty"`
	Status  string `dynamodbav:"status"`
	Version int    `dynamodbav:"version"`
	// EventSeq is the plan's stream's last number (streamlog.go).
	EventSeq int64  `dynamodbav:"event_seq"`
	Doc      string `dynamodbav:"doc"`
}

func toItem(p plans.Plan) (planItem, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return planItem{}, err
	}
	it := planItem{PK: dynamo.TeamPK(p.TeamID), SK: dynamo.PlanSK(p.ID), Type: "plan", TeamID: p.TeamID, ID: p.ID, UserID: p.UserID,
		Status: string(p.Status), Version: p.Version, EventSeq: p.EventSeq, Doc: string(b)}
	it.GSI4PK, it.GSI4SK = dynamo.ConvWorkKeys(p.TeamID, p.ConversationID, p.CreatedAt, p.ID)
	if !p.Status.Terminal() {
		it.GSI3PK, it.GSI3SK = dynamo.PlanDueGSI3PK, dynamo.DueGSI3SK(p.Due(), p.TeamID, p.ID)
	}
	return it, nil
}

func fromItem(m map[string]types.AttributeValue) (plans.Plan, error) {
	var it planItem
	if err := dynamo.Unmarshal(m, &it); err != nil {
		return plans.Plan{}, err
	}
	var p plans.Plan
	if err := json.Unmarshal([]byte(it.Doc), &p); err != nil {
		return plans.Plan{}, fmt.Errorf("plan %s: %w", it.ID, err)
	}
	p.TeamID, p.EventSeq = it.TeamID, it.EventSeq
	return p, nil
}

// rolePlan is the plan's write in a transaction.
const rolePlan = "plan"

// CreatePlan implements plans.Store: the plan and its first events (on
// its stream) in one transaction; one put when there are none.
func (s *Store) CreatePlan(ctx context.Context, p plans.Plan) error {
	it, err := toItem(p)
	if err != nil {
		return dynamo.Internal(err, "marshal")
	}
	exists := apperr.New(apperr.ECONFLICT, "plan %q exists", p.ID)
	if len(p.Events) == 0 {
		created, err := s.PutNew(ctx, it)
		if err == nil && !created {
			return exists
		}
		return err
	}
	tx := s.Txn()
	tx.Create(rolePlan, it)
	tx.StreamEvents(p.TeamID, streams.Plan(p.ID), p.EventSeq, p.Events)
	err = tx.Run(ctx)
	if c, ok := dynamo.AsCanceled(err); ok {
		if c.Role == rolePlan {
			return exists
		}
		return dynamo.RetryConflict(err, "the plan's create conflicted with a concurrent write; try again")
	}
	return err
}

// GetPlan implements plans.Store.
func (s *Store) GetPlan(ctx context.Context, teamID, id string) (plans.Plan, error) {
	m, err := s.GetItem(ctx, dynamo.Key(dynamo.TeamPK(teamID), dynamo.PlanSK(id)))
	if err != nil {
		return plans.Plan{}, err
	}
	if m == nil {
		return plans.Plan{}, apperr.NotFound("plan", id)
	}
	p, err := fromItem(m)
	if err != nil {
		return plans.Plan{}, dynamo.Internal(err, "unmarshal")
	}
	return p, nil
}

// PutPlan implements plans.Store: one transaction of the plan
// conditioned on the version read (plans.ErrChanged when it moved) and
// its events, numbered up to its event_seq, on its stream.
func (s *Store) PutPlan(ctx context.Context, p plans.Plan) error {
	it, err := toItem(p)
	if err != nil {
		return dynamo.Internal(err, "marshal")
	}
	tx := s.Txn()
	tx.Put(rolePlan, it, dynamo.Name("version").Equal(dynamo.Value(p.Version-1)))
	tx.StreamEvents(p.TeamID, streams.Plan(p.ID), p.EventSeq, p.Events)
	err = tx.Run(ctx)
	if c, ok := dynamo.AsCanceled(err); ok {
		if c.Role == rolePlan {
			return errors.Join(plans.ErrChanged, err)
		}
		if c.Role == dynamo.RoleStreamEvent {
			return dynamo.Internal(err, "TransactWriteItems")
		}
		return dynamo.RetryConflict(err, "the plan's change conflicted with a concurrent one; try again")
	}
	return err
}

// DuePlans implements plans.Store: running plans whose backstop is before
// before, across teams (one Query of the sweeper's partition).
func (s *Store) DuePlans(ctx context.Context, before time.Time, limit int) ([]plans.Ref, error) {
	var refs []plans.Ref
	err := s.DueBefore(ctx, dynamo.PlanDueGSI3PK, before, limit, func(m map[string]types.AttributeValue) error {
		var it planItem
		err := dynamo.Unmarshal(m, &it)
		refs = append(refs, plans.Ref{TeamID: it.TeamID, ID: it.ID})
		return err
	})
	return refs, err
}

// ListPlans implements plans.Store, newest first (plan ids grow with
// their creation time). A person's listing filters on user_id and fills
// its page with up to dynamo.FillQueries queries.
func (s *Store) ListPlans(ctx context.Context, teamID, userID string, pg paging.Page) ([]plans.Plan, string, error) {
	var filter expression.ConditionBuilder
	if userID != "" {
		filter = dynamo.Name("user_id").Equal(dynamo.Value(userID))
	}
	keyCond := dynamo.KeyIs(dynamo.AttrPK, dynamo.TeamPK(teamID)).And(dynamo.HasPrefix(dynamo.AttrSK, dynamo.PlanSK("")))
	in, err := dynamo.BuiltQuery("", keyCond, filter, false)
	if err != nil {
		return nil, "", dynamo.Internal(err, "expression")
	}
	list := []plans.Plan{}
	next, err := s.QueryFill(ctx, in, "plans:"+teamID, pg, func(m map[string]types.AttributeValue) error {
		p, err := fromItem(m)
		list = append(list, p)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return list, next, nil
}
