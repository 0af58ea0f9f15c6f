package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/apperr"
	"github.com/conclave-ai/conclave/shared/teams"
)

type teamItem struct {
	PK           string    `dynamodbav:"pk"`
	SK           string    `dynamodbav:"sk"`
	Type         string    `dynamodbav:"type"`
	ID           string    `dynamodbav:"id"`
	Name         string    `dynamodbav:"name"`
	DefaultAgent string    `dynamodbav:"default_agent,omitempty"`
	CreatedAt    time.Time `dynamodbav:"created_at"`
}

type apiKeyItem struct {
	PK        string     `dynamodbav:"pk"`
	SK        string     `dynamodbav:"sk"`
	GSI1PK    string     `dynamodbav:"gsi1pk"`
	GSI1SK    string     `dynamodbav:"gsi1sk"`
	Type      string     `dynamodbav:"type"`
	ID        string     `dynamodbav:"id"`
	TeamID    string     `dynamodbav:"team_id"`
	Name      string     `dynamodbav:"name"`
	Prefix    string     `dynamodbav:"prefix"`
	Status    string     `dynamodbav:"status"`
	CreatedAt time.Time  `dynamodbav:"created_at"`
	RevokedAt *time.Time `dynamodbav:"revoked_at,omitempty"`
}

func toAPIKeyItem(k teams.APIKey, hash string) apiKeyItem {
	return apiKeyItem{
		PK: apiKeyPK(hash), SK: skAPIKey, GSI1PK: teamPK(k.TeamID), GSI1SK: keyGSI1SK(k.ID),
		Type: "api_key", ID: k.ID, TeamID: k.TeamID, Name: k.Name, Prefix: k.Prefix,
		Status: k.Status, CreatedAt: k.CreatedAt, RevokedAt: k.RevokedAt,
	}
}

func (i apiKeyItem) toKey() teams.APIKey {
	return teams.APIKey{ID: i.ID, TeamID: i.TeamID, Name: i.Name, Prefix: i.Prefix, Status: i.Status, CreatedAt: i.CreatedAt, RevokedAt: i.RevokedAt}
}

// CreateTeam implements teams.Store.
func (s *Store) CreateTeam(ctx context.Context, t teams.Team, k teams.APIKey, hash string) error {
	ti, err := marshal(teamItem{PK: teamPK(t.ID), SK: skTeam, Type: "team", ID: t.ID, Name: t.Name, CreatedAt: t.CreatedAt})
	if err != nil {
		return internal(err, "marshal")
	}
	ki, err := marshal(toAPIKeyItem(k, hash))
	if err != nil {
		return internal(err, "marshal")
	}
	notExists := aws.String("attribute_not_exists(pk)")
	_, err = s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: &s.Table, Item: ti, ConditionExpression: notExists}},
		{Put: &types.Put{TableName: &s.Table, Item: ki, ConditionExpression: notExists}},
	}})
	if cancellationReasons(err) != nil {
		return apperr.New(apperr.ECONFLICT, "team %s already exists", t.ID)
	}
	if err != nil {
		return internal(err, "TransactWriteItems")
	}
	return nil
}

// GetTeam implements teams.Store.
func (s *Store) GetTeam(ctx context.Context, teamID string) (teams.Team, error) {
	out, err := s.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.Table, Key: key(teamPK(teamID), skTeam), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return teams.Team{}, internal(err, "GetItem")
	}
	if out.Item == nil {
		return teams.Team{}, apperr.NotFound("team", teamID)
	}
	var it teamItem
	if err := unmarshal(out.Item, &it); err != nil {
		return teams.Team{}, internal(err, "unmarshal")
	}
	return teams.Team{ID: it.ID, Name: it.Name, DefaultAgent: it.DefaultAgent, CreatedAt: it.CreatedAt}, nil
}

func (s *Store) teamExists(teamID string) types.TransactWriteItem {
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName: &s.Table, Key: key(teamPK(teamID), skTeam), ConditionExpression: aws.String("attribute_exists(pk)"),
	}}
}

// PutAPIKey implements teams.Store.
func (s *Store) PutAPIKey(ctx context.Context, k teams.APIKey, hash string) error {
	ki, err := marshal(toAPIKeyItem(k, hash))
	if err != nil {
		return internal(err, "marshal")
	}
	_, err = s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		s.teamExists(k.TeamID),
		{Put: &types.Put{TableName: &s.Table, Item: ki, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
	}})
	if r := cancellationReasons(err); r != nil {
		if r[0] == "ConditionalCheckFailed" {
			return apperr.NotFound("team", k.TeamID)
		}
		return apperr.New(apperr.ECONFLICT, "key collision, retry")
	}
	if err != nil {
		return internal(err, "TransactWriteItems")
	}
	return nil
}

// findKey returns the stored key item by team and id (through gsi1, which
// is eventually consistent: a key created a moment ago may be missing, which
// only affects rotating or revoking it within that moment).
func (s *Store) findKey(ctx context.Context, teamID, keyID string) (*apiKeyItem, error) {
	out, err := s.DB.Query(ctx, &dynamodb.QueryInput{
		TableName: &s.Table, IndexName: aws.String("gsi1"),
		KeyConditionExpression: aws.String("gsi1pk = :pk AND gsi1sk = :sk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(teamPK(teamID)), ":sk": str(keyGSI1SK(keyID)),
		},
	})
	if err != nil {
		return nil, internal(err, "Query")
	}
	if len(out.Items) == 0 {
		return nil, apperr.NotFound("api key", keyID)
	}
	var it apiKeyItem
	if err := unmarshal(out.Items[0], &it); err != nil {
		return nil, internal(err, "unmarshal")
	}
	return &it, nil
}

func (s *Store) revokeUpdate(it *apiKeyItem, at time.Time) (*types.Update, error) {
	atv, err := marshal(struct {
		T time.Time `dynamodbav:"t"`
	}{at})
	if err != nil {
		return nil, err
	}
	return &types.Update{
		TableName:                &s.Table,
		Key:                      key(it.PK, it.SK),
		UpdateExpression:         aws.String("SET #st = :revoked, revoked_at = :at"),
		ConditionExpression:      aws.String("team_id = :team AND #st = :active"),
		ExpressionAttributeNames: map[string]string{"#st": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":revoked": str(teams.KeyRevoked), ":active": str(teams.KeyActive),
			":team": str(it.TeamID), ":at": atv["t"],
		},
	}, nil
}

// RevokeAPIKey implements teams.Store.
func (s *Store) RevokeAPIKey(ctx context.Context, teamID, keyID string, at time.Time) (teams.APIKey, error) {
	it, err := s.findKey(ctx, teamID, keyID)
	if err != nil {
		return teams.APIKey{}, err
	}
	u, err := s.revokeUpdate(it, at)
	if err != nil {
		return teams.APIKey{}, internal(err, "marshal")
	}
	_, err = s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression,
		ConditionExpression: u.ConditionExpression, ExpressionAttributeNames: u.ExpressionAttributeNames,
		ExpressionAttributeValues: u.ExpressionAttributeValues,
	})
	if conditionFailed(err) {
		return teams.APIKey{}, apperr.New(apperr.ECONFLICT, "api key %s is already revoked", keyID).WithDetail("status", teams.KeyRevoked)
	}
	if err != nil {
		return teams.APIKey{}, internal(err, "UpdateItem")
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
	u, err := s.revokeUpdate(it, at)
	if err != nil {
		return internal(err, "marshal")
	}
	ki, err := marshal(toAPIKeyItem(k, hash))
	if err != nil {
		return internal(err, "marshal")
	}
	_, err = s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: u},
		{Put: &types.Put{TableName: &s.Table, Item: ki, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
	}})
	if r := cancellationReasons(err); r != nil {
		if r[0] == "ConditionalCheckFailed" {
			return apperr.New(apperr.ECONFLICT, "api key %s is already revoked", oldID).WithDetail("status", teams.KeyRevoked)
		}
		return apperr.New(apperr.ECONFLICT, "key collision, retry")
	}
	if err != nil {
		return internal(err, "TransactWriteItems")
	}
	return nil
}

// ListAPIKeys implements teams.Store.
func (s *Store) ListAPIKeys(ctx context.Context, teamID string) ([]teams.APIKey, error) {
	var out []teams.APIKey
	var start map[string]types.AttributeValue
	for {
		res, err := s.DB.Query(ctx, &dynamodb.QueryInput{
			TableName: &s.Table, IndexName: aws.String("gsi1"),
			KeyConditionExpression: aws.String("gsi1pk = :pk AND begins_with(gsi1sk, :p)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pk": str(teamPK(teamID)), ":p": str(prefixKey),
			},
			ScanIndexForward:  aws.Bool(false),
			ExclusiveStartKey: start,
		})
		if err != nil {
			return nil, internal(err, "Query")
		}
		for _, m := range res.Items {
			var it apiKeyItem
			if err := unmarshal(m, &it); err != nil {
				return nil, internal(err, "unmarshal")
			}
			out = append(out, it.toKey())
		}
		if len(res.LastEvaluatedKey) == 0 {
			return out, nil
		}
		start = res.LastEvaluatedKey
	}
}

// APIKeyByHash implements teams.Store.
func (s *Store) APIKeyByHash(ctx context.Context, hash string) (teams.APIKey, error) {
	out, err := s.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.Table, Key: key(apiKeyPK(hash), skAPIKey), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return teams.APIKey{}, internal(err, "GetItem")
	}
	if out.Item == nil {
		return teams.APIKey{}, apperr.NotFound("api key", "")
	}
	var it apiKeyItem
	if err := unmarshal(out.Item, &it); err != nil {
		return teams.APIKey{}, internal(err, "unmarshal")
	}
	return it.toKey(), nil
}
