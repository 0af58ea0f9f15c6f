package dynamo

import (
	"context"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/agents"
	"github.com/conclave-ai/conclave/shared/apperr"
	"github.com/conclave-ai/conclave/shared/paging"
)

// agentItem stores an agent; nested values (personality, skills, model) are
// maps and lists in DynamoDB, keyed by their JSON names.
type agentItem struct {
	PK          string             `json:"pk"`
	SK          string             `json:"sk"`
	Type        string             `json:"type"`
	TeamID      string             `json:"team_id"`
	Slug        string             `json:"slug"`
	Name        string             `json:"name"`
	Tagline     string             `json:"tagline"`
	Personality agents.Personality `json:"personality"`
	Status      string             `json:"status"`
	Skills      []agents.Skill     `json:"skills"`
	Model       *agents.Model      `json:"model,omitempty"`
	Version     int                `json:"version"`
	CreatedAt   time.Time          `json:"created_at"`
	UpdatedAt   time.Time          `json:"updated_at"`
}

func jsonTags(o *attributevalue.EncoderOptions)    { o.TagKey = "json" }
func jsonTagsDec(o *attributevalue.DecoderOptions) { o.TagKey = "json" }

func toAgentItem(a agents.Agent) (map[string]types.AttributeValue, error) {
	return attributevalue.MarshalMapWithOptions(agentItem{
		PK: teamPK(a.TeamID), SK: agentSK(a.Slug), Type: "agent", TeamID: a.TeamID, Slug: a.Slug,
		Name: a.Name, Tagline: a.Tagline, Personality: a.Personality, Status: a.Status, Skills: a.Skills,
		Model: a.Model, Version: a.Version, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
	}, jsonTags)
}

func fromAgentItem(m map[string]types.AttributeValue) (agents.Agent, error) {
	var it agentItem
	if err := attributevalue.UnmarshalMapWithOptions(m, &it, jsonTagsDec); err != nil {
		return agents.Agent{}, err
	}
	if it.Skills == nil {
		it.Skills = []agents.Skill{}
	}
	return agents.Agent{
		TeamID: it.TeamID, Slug: it.Slug, Name: it.Name, Tagline: it.Tagline, Personality: it.Personality,
		Status: it.Status, Skills: it.Skills, Model: it.Model, Version: it.Version,
		CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt,
	}, nil
}

// CreateAgent implements agents.Store. The team must exist and the slug be
// free, both checked in the same transaction.
func (s *Store) CreateAgent(ctx context.Context, a agents.Agent) error {
	item, err := toAgentItem(a)
	if err != nil {
		return internal(err, "marshal")
	}
	_, err = s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		s.teamExists(a.TeamID),
		{Put: &types.Put{TableName: &s.Table, Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
	}})
	if r := cancellationReasons(err); r != nil {
		if r[0] == "ConditionalCheckFailed" {
			return apperr.NotFound("team", a.TeamID)
		}
		return apperr.New(apperr.ECONFLICT, "an agent with slug %q already exists", a.Slug).WithReason("DuplicateSlug")
	}
	if err != nil {
		return internal(err, "TransactWriteItems")
	}
	return nil
}

// GetAgent implements agents.Store.
func (s *Store) GetAgent(ctx context.Context, teamID, slug string) (agents.Agent, error) {
	out, err := s.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.Table, Key: key(teamPK(teamID), agentSK(slug)), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return agents.Agent{}, internal(err, "GetItem")
	}
	if out.Item == nil {
		return agents.Agent{}, apperr.NotFound("agent", slug)
	}
	a, err := fromAgentItem(out.Item)
	if err != nil {
		return agents.Agent{}, internal(err, "unmarshal")
	}
	return a, nil
}

// ListAgents implements agents.Store. A status filter is applied by
// DynamoDB after the key condition, so a page may hold fewer than Limit
// items while a next token is still returned.
func (s *Store) ListAgents(ctx context.Context, teamID string, f agents.Filter, p paging.Page) ([]agents.Agent, string, error) {
	scope := "agents:" + teamID
	start, err := decodeToken(scope, p.Token)
	if err != nil {
		return nil, "", err
	}
	in := &dynamodb.QueryInput{
		TableName:              &s.Table,
		KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :p)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(teamPK(teamID)), ":p": str(prefixAgent),
		},
		Limit:             aws.Int32(int32(p.Limit)),
		ExclusiveStartKey: start,
	}
	if f.Status != "" {
		in.FilterExpression = aws.String("#st = :st")
		in.ExpressionAttributeNames = map[string]string{"#st": "status"}
		in.ExpressionAttributeValues[":st"] = str(f.Status)
	}
	out, err := s.DB.Query(ctx, in)
	if err != nil {
		return nil, "", internal(err, "Query")
	}
	list := make([]agents.Agent, 0, len(out.Items))
	for _, m := range out.Items {
		a, err := fromAgentItem(m)
		if err != nil {
			return nil, "", internal(err, "unmarshal")
		}
		list = append(list, a)
	}
	next, err := encodeToken(scope, out.LastEvaluatedKey)
	if err != nil {
		return nil, "", internal(err, "token")
	}
	return list, next, nil
}

// UpdateAgent implements agents.Store.
func (s *Store) UpdateAgent(ctx context.Context, a agents.Agent) error {
	item, err := toAgentItem(a)
	if err != nil {
		return internal(err, "marshal")
	}
	_, err = s.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.Table, Item: item,
		ConditionExpression:       aws.String("attribute_exists(pk) AND version = :prev"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":prev": &types.AttributeValueMemberN{Value: strconv.Itoa(a.Version - 1)}},
	})
	if conditionFailed(err) {
		cur, gerr := s.GetAgent(ctx, a.TeamID, a.Slug)
		if gerr != nil {
			return gerr
		}
		return apperr.New(apperr.ECONFLICT, "agent %q was changed by another request", a.Slug).WithDetail("current_version", cur.Version)
	}
	if err != nil {
		return internal(err, "PutItem")
	}
	return nil
}

// SetStatus implements agents.Store. Leaving active is conditioned on the
// agent not being the team's default, in the same transaction, so a
// concurrent "set default" cannot leave the team with a paused default.
func (s *Store) SetStatus(ctx context.Context, teamID, slug, status string, at time.Time) (agents.Agent, error) {
	atv, err := attributevalue.Marshal(at)
	if err != nil {
		return agents.Agent{}, internal(err, "marshal")
	}
	update := types.TransactWriteItem{Update: &types.Update{
		TableName:                &s.Table,
		Key:                      key(teamPK(teamID), agentSK(slug)),
		UpdateExpression:         aws.String("SET #st = :st, updated_at = :at, version = version + :one"),
		ConditionExpression:      aws.String("attribute_exists(pk)"),
		ExpressionAttributeNames: map[string]string{"#st": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":st": str(status), ":at": atv, ":one": &types.AttributeValueMemberN{Value: "1"},
		},
	}}
	items := []types.TransactWriteItem{update}
	if status != agents.StatusActive {
		items = append(items, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName:                 &s.Table,
			Key:                       key(teamPK(teamID), skTeam),
			ConditionExpression:       aws.String("attribute_not_exists(default_agent) OR default_agent <> :slug"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":slug": str(slug)},
		}})
	}
	_, err = s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if r := cancellationReasons(err); r != nil {
		if r[0] == "ConditionalCheckFailed" {
			return agents.Agent{}, apperr.NotFound("agent", slug)
		}
		return agents.Agent{}, apperr.New(apperr.ECONFLICT, "%q is the team's default agent and must stay active; set another default first", slug).
			WithReason("DefaultAgent")
	}
	if err != nil {
		return agents.Agent{}, internal(err, "TransactWriteItems")
	}
	return s.GetAgent(ctx, teamID, slug)
}

// SetDefault implements agents.Store.
func (s *Store) SetDefault(ctx context.Context, teamID, slug string) error {
	_, err := s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{
			TableName:                 &s.Table,
			Key:                       key(teamPK(teamID), agentSK(slug)),
			ConditionExpression:       aws.String("#st = :active"),
			ExpressionAttributeNames:  map[string]string{"#st": "status"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":active": str(agents.StatusActive)},
		}},
		{Update: &types.Update{
			TableName:                 &s.Table,
			Key:                       key(teamPK(teamID), skTeam),
			UpdateExpression:          aws.String("SET default_agent = :slug"),
			ConditionExpression:       aws.String("attribute_exists(pk)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":slug": str(slug)},
		}},
	}})
	if r := cancellationReasons(err); r != nil {
		if r[0] == "ConditionalCheckFailed" {
			a, gerr := s.GetAgent(ctx, teamID, slug)
			if gerr != nil {
				return gerr
			}
			return apperr.New(apperr.ECONFLICT, "agent %q is %s; only an active agent can be the default", slug, a.Status).
				WithDetail("status", a.Status)
		}
		return apperr.NotFound("team", teamID)
	}
	if err != nil {
		return internal(err, "TransactWriteItems")
	}
	return nil
}

// DefaultAgent implements agents.Store.
func (s *Store) DefaultAgent(ctx context.Context, teamID string) (string, error) {
	t, err := s.GetTeam(ctx, teamID)
	if err != nil {
		return "", err
	}
	return t.DefaultAgent, nil
}
