package dynamo

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// attemptsRetention outlives the message: SQS keeps it at most 14 days.
const attemptsRetention = 14 * 24 * time.Hour

// Failed implements consumers.Attempts: one atomic ADD, whose new value is
// the count (two concurrent deliveries of one message both count).
func (s *Store) Failed(ctx context.Context, queue, messageID string) (int, error) {
	out, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        &s.Table,
		Key:              Key("QATTEMPT#"+queue+"#"+messageID, "ATTEMPTS"),
		UpdateExpression: aws.String("ADD attempts :one SET expires_at = if_not_exists(expires_at, :exp)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one": &types.AttributeValueMemberN{Value: "1"},
			":exp": &types.AttributeValueMemberN{Value: strconv.FormatInt(TTL(time.Now().Add(attemptsRetention)), 10)},
		},
		ReturnValues: types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, Internal(err, "UpdateItem")
	}
	n, ok := out.Attributes["attempts"].(*types.AttributeValueMemberN)
	if !ok {
		return 0, Internal(errors.New("no attempts in the answer"), "UpdateItem")
	}
	v, err := strconv.Atoi(n.Value)
	if err != nil {
		return 0, Internal(err, "attempts")
	}
	return v, nil
}
