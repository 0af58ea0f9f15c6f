package dynamo

import (
	"context"
	"errors"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// rateWindowTTL keeps a second's counter a little past the second (TTL
// deletes within days; nothing reads an old window).
const rateWindowTTL = 120

// CountRequest implements authorizer.RequestCounter: one atomic ADD on the
// team's counter of that second, whose new value is the count.
func (s *Store) CountRequest(ctx context.Context, teamID string, second int64) (int, error) {
	out, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        &s.Table,
		Key:              Key(TeamPK(teamID), "RATE#"+strconv.FormatInt(second, 10)),
		UpdateExpression: aws.String("ADD requests :one SET expires_at = if_not_exists(expires_at, :exp)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one": &types.AttributeValueMemberN{Value: "1"},
			":exp": &types.AttributeValueMemberN{Value: strconv.FormatInt(second+rateWindowTTL, 10)},
		},
		ReturnValues: types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, Internal(err, "UpdateItem")
	}
	n, ok := out.Attributes["requests"].(*types.AttributeValueMemberN)
	if !ok {
		return 0, Internal(errors.New("no count in the answer"), "UpdateItem")
	}
	v, err := strconv.Atoi(n.Value)
	if err != nil {
		return 0, Internal(err, "UpdateItem")
	}
	return v, nil
}
