package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/activity"
	"github.com/conclave-ai/conclave/shared/paging"
)

// activityRetention bounds the activity log; older entries expire by TTL.
const activityRetention = 90 * 24 * time.Hour

type activityItem struct {
	PK         string    `dynamodbav:"pk"`
	SK         string    `dynamodbav:"sk"`
	Type       string    `dynamodbav:"type"`
	EventID    string    `dynamodbav:"event_id"`
	DetailType string    `dynamodbav:"detail_type"`
	Source     string    `dynamodbav:"source"`
	Time       time.Time `dynamodbav:"time"`
	Detail     string    `dynamodbav:"detail"`
	ExpiresAt  int64     `dynamodbav:"expires_at"`
}

func activitySK(e activity.Entry) string {
	return prefixActivity + e.Time.UTC().Format(time.RFC3339Nano) + "#" + e.EventID
}

// Record implements activity.Store: a put conditioned on the key not
// existing, so a redelivered event is stored once.
func (s *Store) Record(ctx context.Context, e activity.Entry) error {
	item, err := marshal(activityItem{
		PK: teamPK(e.TeamID), SK: activitySK(e), Type: "activity", EventID: e.EventID, DetailType: e.DetailType,
		Source: e.Source, Time: e.Time.UTC(), Detail: string(e.Detail), ExpiresAt: e.Time.Add(activityRetention).Unix(),
	})
	if err != nil {
		return internal(err, "marshal")
	}
	_, err = s.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.Table, Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")})
	if err != nil && !conditionFailed(err) {
		return internal(err, "PutItem")
	}
	return nil
}

// List implements activity.Store.
func (s *Store) List(ctx context.Context, teamID string, p paging.Page) ([]activity.Entry, string, error) {
	scope := "activity:" + teamID
	start, err := decodeToken(scope, p.Token)
	if err != nil {
		return nil, "", err
	}
	out, err := s.DB.Query(ctx, &dynamodb.QueryInput{
		TableName:              &s.Table,
		KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :p)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(teamPK(teamID)), ":p": str(prefixActivity),
		},
		ScanIndexForward:  aws.Bool(false),
		Limit:             aws.Int32(int32(p.Limit)),
		ExclusiveStartKey: start,
	})
	if err != nil {
		return nil, "", internal(err, "Query")
	}
	list := make([]activity.Entry, 0, len(out.Items))
	for _, m := range out.Items {
		var it activityItem
		if err := unmarshal(m, &it); err != nil {
			return nil, "", internal(err, "unmarshal")
		}
		list = append(list, activity.Entry{TeamID: teamID, EventID: it.EventID, DetailType: it.DetailType, Source: it.Source, Time: it.Time, Detail: []byte(it.Detail)})
	}
	next, err := encodeToken(scope, out.LastEvaluatedKey)
	if err != nil {
		return nil, "", internal(err, "token")
	}
	return list, next, nil
}
