package expertgatestore

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
)

// FeedbackItem is one agent's rating of a reply, kept for past performance.
type FeedbackItem struct {
	PK        string    `dynamodbav:"pk"`
	SK        string    `dynamodbav:"sk"`
	Type      string    `dynamodbav:"type"`
	Agent     string    `dynamodbav:"agent"`
	Rating    int       `dynamodbav:"rating"`
	Query     string    `dynamodbav:"query"`
	RatedAt   time.Time `dynamodbav:"rated_at"` // UTC, so the since filter compares strings in time order
	ExpiresAt int64     `dynamodbav:"expires_at"`
	UserID    string    `dynamodbav:"user_id,omitempty"` // the person who rated
}

// ToRating is the rating as the expert gate reads it.
func (it FeedbackItem) ToRating() routing.Rating {
	return routing.Rating{Agent: it.Agent, Rating: it.Rating, Query: it.Query, At: it.RatedAt, UserID: it.UserID}
}

// RecentRatings returns ratings of replies made since (keys sort by the
// reply's id, which sorts by time), newest first: the expert gate's past
// performance signal.
func (s *Store) RecentRatings(ctx context.Context, teamID string, since time.Time, limit int) ([]routing.Rating, error) {
	in, err := dynamo.BuiltQuery("",
		dynamo.KeyIs(dynamo.AttrPK, dynamo.TeamPK(teamID)).And(expression.Key(dynamo.AttrSK).Between(dynamo.Value(dynamo.FeedbackFloor(since)), dynamo.Value(dynamo.PrefixFeedback+dynamo.RangeEnd))),
		dynamo.Name("rated_at").GreaterThanEqual(dynamo.Value(since.UTC())), false)
	if err != nil {
		return nil, dynamo.Internal(err, "expression")
	}
	in.TableName = &s.Table
	var out []routing.Rating
	for len(out) < limit {
		res, err := s.DB.Query(ctx, in)
		if err != nil {
			return nil, dynamo.Internal(err, "Query")
		}
		for _, m := range res.Items {
			var it FeedbackItem
			if err := dynamo.Unmarshal(m, &it); err != nil {
				return nil, dynamo.Internal(err, "unmarshal")
			}
			out = append(out, it.ToRating())
		}
		if len(res.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
