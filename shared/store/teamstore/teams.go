package teamstore

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/team/teams"
)

// teamItem is a team; default_agent is absent until one is set (SetStatus
// conditions on attribute_not_exists(default_agent)).
type teamItem struct {
	PK           string    `dynamodbav:"pk"`
	SK           string    `dynamodbav:"sk"`
	Type         string    `dynamodbav:"type"`
	ID           string    `dynamodbav:"id"`
	Name         string    `dynamodbav:"name"`
	DefaultAgent string    `dynamodbav:"default_agent,omitempty"`
	CreatedAt    time.Time `dynamodbav:"created_at"`
	// A2AID, once given (SetA2AID), with gsi1pk A2A#<a2a id> and gsi1sk
	// TEAM: the team of an A2A id is one Query on gsi1.
	A2AID  string `dynamodbav:"a2a_id,omitempty"`
	GSI1PK string `dynamodbav:"gsi1pk,omitempty"`
	GSI1SK string `dynamodbav:"gsi1sk,omitempty"`
}

// apiKeyItem is an API key, found by its hash (pk) or by team and id (gsi1).
type apiKeyItem struct {
	PK     string `dynamodbav:"pk"`
	SK     string `dynamodbav:"sk"`
	GSI1PK string `dynamodbav:"gsi1pk"`
	GSI1SK string `dynamodbav:"gsi1sk"`
	Type   string `dynamodbav:"type"`
	ID     string `dynamodbav:"id"`
	TeamID string `dynamodbav:"team_id"`
	Name   string `dynamodbav:"name"`
	Prefix string `dynamodbav:"prefix"`
	Status string `dynamodbav:"status"`
	// ActAsUsers, when true (a key made before it has none: false).
	ActAsUsers bool       `dynamodbav:"act_as_users,omitempty"`
	CreatedAt  time.Time  `dynamodbav:"created_at"`
	RevokedAt  *time.Time `dynamodbav:"revoked_at,omitempty"`
}

func toTeamItem(t teams.Team) teamItem {
	it := teamItem{PK: dynamo.TeamPK(t.ID), SK: dynamo.SKTeam, Type: "team", ID: t.ID, Name: t.Name, DefaultAgent: t.DefaultAgent, CreatedAt: t.CreatedAt}
	if t.A2AID != "" {
		it.A2AID, it.GSI1PK, it.GSI1SK = t.A2AID, dynamo.A2APK(t.A2AID), dynamo.SKTeam
	}
	return it
}

func (i teamItem) toTeam() teams.Team {
	return teams.Team{ID: i.ID, Name: i.Name, DefaultAgent: i.DefaultAgent, CreatedAt: i.CreatedAt, A2AID: i.A2AID}
}

func toAPIKeyItem(k teams.APIKey, hash string) apiKeyItem {
	return apiKeyItem{
		PK: dynamo.APIKeyPK(hash), SK: dynamo.SKAPIKey, GSI1PK: dynamo.TeamPK(k.TeamID), GSI1SK: dynamo.KeyGSI1SK(k.ID),
		Type: "api_key", ID: k.ID, TeamID: k.TeamID, Name: k.Name, Prefix: k.Prefix,
		Status: k.Status, ActAsUsers: k.ActAsUsers, CreatedAt: k.CreatedAt, RevokedAt: k.RevokedAt,
	}
}

func (i apiKeyItem) toKey() teams.APIKey {
	return teams.APIKey{ID: i.ID, TeamID: i.TeamID, Name: i.Name, Prefix: i.Prefix, Status: i.Status,
		ActAsUsers: i.ActAsUsers, CreatedAt: i.CreatedAt, RevokedAt: i.RevokedAt}
}

// CreateTeam implements teams.Store.
func (s *Store) CreateTeam(ctx context.Context, t teams.Team, k teams.APIKey, hash string) error {
	t.DefaultAgent = "" // a new team has none (SetDefault sets it)
	tx := s.Txn()
	tx.Create(dynamo.RoleTeam, toTeamItem(t))
	tx.Create(dynamo.RoleAPIKey, toAPIKeyItem(k, hash))
	err := tx.Run(ctx)
	if _, ok := dynamo.AsCanceled(err); ok {
		return apperr.New(apperr.ECONFLICT, "team %s already exists", t.ID)
	}
	return err
}

// GetTeam implements teams.Store.
func (s *Store) GetTeam(ctx context.Context, teamID string) (teams.Team, error) {
	return dynamo.Get(ctx, s, dynamo.Key(dynamo.TeamPK(teamID), dynamo.SKTeam), "team", teamID, func(m map[string]types.AttributeValue) (teams.Team, error) {
		var it teamItem
		err := dynamo.Unmarshal(m, &it)
		return it.toTeam(), err
	})
}

// SetA2AID implements teams.Store: one UpdateItem conditioned on the team
// existing and having no A2A id; when another writer gave it one first,
// the stored one is read back.
func (s *Store) SetA2AID(ctx context.Context, teamID, a2aID string) (string, error) {
	update := expression.Set(dynamo.Name("a2a_id"), dynamo.Value(a2aID)).
		Set(dynamo.Name(dynamo.AttrGSI1PK), dynamo.Value(dynamo.A2APK(a2aID))).
		Set(dynamo.Name(dynamo.AttrGSI1SK), dynamo.Value(dynamo.SKTeam))
	cond := expression.AttributeExists(dynamo.Name("pk")).And(expression.AttributeNotExists(dynamo.Name("a2a_id")))
	expr, err := expression.NewBuilder().WithUpdate(update).WithCondition(cond).Build()
	if err != nil {
		return "", dynamo.Internal(err, "expression")
	}
	_, err = s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.Table, Key: dynamo.Key(dynamo.TeamPK(teamID), dynamo.SKTeam),
		UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	if _, failed := dynamo.ConditionFailed(err); failed {
		t, err := s.GetTeam(ctx, teamID)
		return t.A2AID, err
	}
	if err != nil {
		return "", dynamo.Internal(err, "UpdateItem")
	}
	return a2aID, nil
}

// TeamByA2AID implements teams.Store (gsi1 is eventually consistent: an id
// given a moment ago may not resolve yet, which only the first request of
// a client that guessed it could see).
func (s *Store) TeamByA2AID(ctx context.Context, a2aID string) (teams.Team, error) {
	in, err := dynamo.BuiltQuery(dynamo.IndexGSI1, dynamo.KeyIs(dynamo.AttrGSI1PK, dynamo.A2APK(a2aID)).And(dynamo.KeyIs(dynamo.AttrGSI1SK, dynamo.SKTeam)), expression.ConditionBuilder{}, true)
	if err != nil {
		return teams.Team{}, dynamo.Internal(err, "expression")
	}
	in.TableName = &s.Table
	out, err := s.DB.Query(ctx, in)
	if err != nil {
		return teams.Team{}, dynamo.Internal(err, "Query")
	}
	if len(out.Items) == 0 {
		return teams.Team{}, apperr.NotFound("a2a agent", a2aID)
	}
	var it teamItem
	if err := dynamo.Unmarshal(out.Items[0], &it); err != nil {
		return teams.Team{}, dynamo.Internal(err, "unmarshal")
	}
	return it.toTeam(), nil
}

// PutAPIKey implements teams.Store.
func (s *Store) PutAPIKey(ctx context.Context, k teams.APIKey, hash string) error {
	tx := s.Txn()
	tx.Exists(dynamo.RoleTeam, dynamo.Key(dynamo.TeamPK(k.TeamID), dynamo.SKTeam))
	tx.Create(dynamo.RoleAPIKey, toAPIKeyItem(k, hash))
	err := tx.Run(ctx)
	if c, ok := dynamo.AsCanceled(err); ok {
		if c.Role == dynamo.RoleTeam {
			return apperr.NotFound("team", k.TeamID)
		}
		return apperr.New(apperr.ECONFLICT, "key collision, retry")
	}
	return err
}

// findKey returns the stored key item by team and id (through gsi1, which
// is eventually consistent: a key created a moment ago may be missing, which
// only affects rotating or revoking it within that moment).
func (s *Store) findKey(ctx context.Context, teamID, keyID string) (*apiKeyItem, error) {
	in, err := dynamo.BuiltQuery(dynamo.IndexGSI1, dynamo.KeyIs(dynamo.AttrGSI1PK, dynamo.TeamPK(teamID)).And(dynamo.KeyIs(dynamo.AttrGSI1SK, dynamo.KeyGSI1SK(keyID))), expression.ConditionBuilder{}, true)
	if err != nil {
		return nil, dynamo.Internal(err, "expression")
	}
	in.TableName = &s.Table
	out, err := s.DB.Query(ctx, in)
	if err != nil {
		return nil, dynamo.Internal(err, "Query")
	}
	if len(out.Items) == 0 {
		return nil, apperr.NotFound("api key", keyID)
	}
	var it apiKeyItem
	if err := dynamo.Unmarshal(out.Items[0], &it); err != nil {
		return nil, dynamo.Internal(err, "unmarshal")
	}
	return &it, nil
}

// revoke is the update that revokes an active key of the team.
func revoke(at time.Time) (expression.UpdateBuilder, expression.ConditionBuilder) {
	return expression.Set(dynamo.Name("status"), dynamo.Value(teams.KeyRevoked)).Set(dynamo.Name("revoked_at"), dynamo.Value(at)),
		dynamo.Name("status").Equal(dynamo.Value(teams.KeyActive))
}

// RevokeAPIKey implements teams.Store.
func (s *Store) RevokeAPIKey(ctx context.Context, teamID, keyID string, at time.Time) (teams.APIKey, error) {
	it, err := s.findKey(ctx, teamID, keyID)
	if err != nil {
		return teams.APIKey{}, err
	}
	u, active := revoke(at)
	e, err := dynamo.Build(&u, dynamo.Name("team_id").Equal(dynamo.Value(it.TeamID)).And(active))
	if err != nil {
		return teams.APIKey{}, dynamo.Internal(err, "expression")
	}
	_, err = s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.Table, Key: dynamo.Key(it.PK, it.SK), UpdateExpression: e.Update(),
		ConditionExpression: e.Condition(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
	})
	if _, failed := dynamo.ConditionFailed(err); failed {
		return teams.APIKey{}, apperr.New(apperr.ECONFLICT, "api key %s is already revoked", keyID).WithDetail("status", teams.KeyRevoked)
	}
	if err != nil {
		return teams.APIKey{}, dynamo.Internal(err, "UpdateItem")
	}
	k := it.toKey()
	k.Status, k.RevokedAt = teams.KeyRevoked, &at
	return k, nil
}

// RotateAPIKey implements teams.Store.
func (s *Store) RotateAPIKey(ctx context.Context, teamID, oldID string, k teams.APIKey, hash string, at time.Time) error {
	it, err := s.findKey(ctx, teamID, oldID)
	if err != nil {
		return err
	}
	u, active := revoke(at)
	tx := s.Txn()
	tx.Update(dynamo.RoleOldAPIKey, dynamo.Key(it.PK, it.SK), u, dynamo.Name("team_id").Equal(dynamo.Value(it.TeamID)).And(active))
	tx.Create(dynamo.RoleAPIKey, toAPIKeyItem(k, hash))
	err = tx.Run(ctx)
	if c, ok := dynamo.AsCanceled(err); ok {
		if c.Role == dynamo.RoleOldAPIKey {
			return apperr.New(apperr.ECONFLICT, "api key %s is already revoked", oldID).WithDetail("status", teams.KeyRevoked)
		}
		return apperr.New(apperr.ECONFLICT, "key collision, retry")
	}
	return err
}

// ListAPIKeys implements teams.Store.
func (s *Store) ListAPIKeys(ctx context.Context, teamID string) ([]teams.APIKey, error) {
	var out []teams.APIKey
	in, err := dynamo.BuiltQuery(dynamo.IndexGSI1, dynamo.KeyIs(dynamo.AttrGSI1PK, dynamo.TeamPK(teamID)).And(dynamo.HasPrefix(dynamo.AttrGSI1SK, dynamo.PrefixKey)), expression.ConditionBuilder{}, false)
	if err != nil {
		return nil, dynamo.Internal(err, "expression")
	}
	err = s.QueryAll(ctx, in, func(m map[string]types.AttributeValue) error {
		var it apiKeyItem
		if err := dynamo.Unmarshal(m, &it); err != nil {
			return err
		}
		out = append(out, it.toKey())
		return nil
	})
	return out, err
}

// APIKeyByHash implements teams.Store.
func (s *Store) APIKeyByHash(ctx context.Context, hash string) (teams.APIKey, error) {
	m, err := s.GetItem(ctx, dynamo.Key(dynamo.APIKeyPK(hash), dynamo.SKAPIKey))
	if err != nil {
		return teams.APIKey{}, err
	}
	if m == nil {
		return teams.APIKey{}, apperr.NotFound("api key", "")
	}
	var it apiKeyItem
	if err := dynamo.Unmarshal(m, &it); err != nil {
		return teams.APIKey{}, dynamo.Internal(err, "unmarshal")
	}
	return it.toKey(), nil
}
