// Package pushstore keeps the A2A push-notification configs of tasks
// (server.PushConfigs) on the single table: one item per config under
// its team and task, and a counter item per task whose condition holds it
// to server.MaxPushConfigs (the config and the counter move in one
// transaction, so concurrent creates cannot pass the cap and a deleted
// config frees its place).
package pushstore

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/a2a/server"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
)

// Store is the push-config half of the single-table store.
type Store struct{ *dynamo.Store }

var _ server.PushConfigs = (*Store)(nil)

// New returns the store on table.
func New(db dynamo.API, table string) *Store { return &Store{dynamo.New(db, table)} }

const (
	roleConfig  = "push config"
	roleCounter = "push config counter"
	attrCount   = "configs"
)

type configItem struct {
	PK              string    `dynamodbav:"pk"`
	SK              string    `dynamodbav:"sk"`
	ID              string    `dynamodbav:"id"`
	TaskID          string    `dynamodbav:"task_id"`
	URL             string    `dynamodbav:"url"`
	Token           string    `dynamodbav:"token,omitempty"`
	AuthScheme      string    `dynamodbav:"auth_scheme,omitempty"`
	AuthCredentials string    `dynamodbav:"auth_credentials,omitempty"`
	CreatedAt       time.Time `dynamodbav:"created_at"`
}

func fromItem(m map[string]types.AttributeValue) (server.PushConfig, error) {
	var it configItem
	if err := dynamo.Unmarshal(m, &it); err != nil {
		return server.PushConfig{}, err
	}
	return server.PushConfig{ID: it.ID, TaskID: it.TaskID, URL: it.URL, Token: it.Token, AuthScheme: it.AuthScheme,
		AuthCredentials: it.AuthCredentials, CreatedAt: it.CreatedAt}, nil
}

func key(teamID, taskID, id string) map[string]types.AttributeValue {
	return dynamo.Key(dynamo.TeamPK(teamID), dynamo.PushConfigSK(taskID, id))
}

func counterKey(teamID, taskID string) map[string]types.AttributeValue {
	return dynamo.Key(dynamo.TeamPK(teamID), dynamo.PushCounterSK(taskID))
}

// PutPushConfig implements server.PushConfigs: the config (its id free)
// and the task's counter (below the cap) in one transaction.
func (s *Store) PutPushConfig(ctx context.Context, teamID string, c server.PushConfig) error {
	tx := s.Txn()
	tx.Create(roleConfig, configItem{PK: dynamo.TeamPK(teamID), SK: dynamo.PushConfigSK(c.TaskID, c.ID), ID: c.ID, TaskID: c.TaskID, URL: c.URL,
		Token: c.Token, AuthScheme: c.AuthScheme, AuthCredentials: c.AuthCredentials, CreatedAt: c.CreatedAt.UTC()})
	below := expression.Or(expression.AttributeNotExists(dynamo.Name(attrCount)), dynamo.Name(attrCount).LessThan(dynamo.Value(server.MaxPushConfigs)))
	tx.Update(roleCounter, counterKey(teamID, c.TaskID), expression.Add(dynamo.Name(attrCount), dynamo.Value(1)), below)
	err := tx.RunConflicting(ctx)
	if cx, ok := dynamo.AsCanceled(err); ok {
		if cx.Role == roleCounter {
			return server.PushLimitError()
		}
		return apperr.Wrap(apperr.ECONFLICT, err, "the task's push configs were written meanwhile; retry")
	}
	return err
}

// GetPushConfig implements server.PushConfigs.
func (s *Store) GetPushConfig(ctx context.Context, teamID, taskID, id string) (server.PushConfig, error) {
	return dynamo.Get(ctx, s, key(teamID, taskID, id), "push config", id, fromItem)
}

// ListPushConfigs implements server.PushConfigs: one query of the task's
// prefix (at most MaxPushConfigs items), oldest first (ids grow with time).
func (s *Store) ListPushConfigs(ctx context.Context, teamID, taskID string) ([]server.PushConfig, error) {
	out := []server.PushConfig{}
	err := s.QueryAll(ctx, dynamo.PrefixQuery(dynamo.TeamPK(teamID), dynamo.PushConfigSK(taskID, ""), true), func(m map[string]types.AttributeValue) error {
		c, err := fromItem(m)
		if err == nil {
			out = append(out, c)
		}
		return err
	})
	return out, err
}

// DeletePushConfig implements server.PushConfigs: the config (existing)
// and one off the counter, in one transaction.
func (s *Store) DeletePushConfig(ctx context.Context, teamID, taskID, id string) error {
	tx := s.Txn()
	tx.Delete(roleConfig, key(teamID, taskID, id), expression.AttributeExists(dynamo.Name("pk")))
	tx.Update(roleCounter, counterKey(teamID, taskID), expression.Add(dynamo.Name(attrCount), dynamo.Value(-1)), expression.ConditionBuilder{})
	err := tx.RunConflicting(ctx)
	if c, ok := dynamo.AsCanceled(err); ok && c.Role == roleConfig {
		return apperr.NotFound("push config", id)
	}
	return err
}
