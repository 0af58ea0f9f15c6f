package activitystore

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/team/activity"
)

// activityRetention bounds the activity log; older entries expire by TTL.
const activityRetention = 90 * 24 * time.Hour

// activityItem is one event of the activity log. Detail is the event's
// detail as the bus delivered it (a json.RawMessage the API returns
// untouched), so it stays that text rather than a map.
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

func toActivityItem(e activity.Entry) activityItem {
	return activityItem{
		PK: dynamo.TeamPK(e.TeamID), SK: dynamo.ActivitySK(e.Time, e.EventID), Type: "activity", EventID: e.EventID, DetailType: e.DetailType,
		Source: e.Source, Time: e.Time.UTC(), Detail: string(e.Detail), ExpiresAt: dynamo.TTL(e.Time.Add(activityRetention)),
	}
}

func (it activityItem) toEntry(teamID string) activity.Entry {
	return activity.Entry{TeamID: teamID, EventID: it.EventID, DetailType: it.DetailType, Source: it.Source, Time: it.Time, Detail: []byte(it.Detail)}
}

// Record implements activity.Store: a put conditioned on the key not
// existing, so a redelivered event is stored once.
func (s *Store) Record(ctx context.Context, e activity.Entry) error {
	_, err := s.PutNew(ctx, toActivityItem(e)) // a redelivery finds it: written once
	return err
}

// List implements activity.Store.
func (s *Store) List(ctx context.Context, teamID string, p paging.Page) ([]activity.Entry, string, error) {
	list := []activity.Entry{}
	next, err := s.QueryPage(ctx, dynamo.PrefixQuery(dynamo.TeamPK(teamID), dynamo.PrefixActivity, false), "activity:"+teamID, p, func(m map[string]types.AttributeValue) error {
		var it activityItem
		if err := dynamo.Unmarshal(m, &it); err != nil {
			return err
		}
		list = append(list, it.toEntry(teamID))
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return list, next, nil
}
