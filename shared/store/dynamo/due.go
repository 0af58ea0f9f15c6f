package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DueBefore reads up to limit entries of the gsi3 partition pk whose
// sort key (a DueKey, then more) is before the time given, earliest
// first: one Query of a sweeper's index (running tasks' deadlines,
// sessions', tasks' due dates). each sees every item read.
func (s *Store) DueBefore(ctx context.Context, pk string, before time.Time, limit int, each func(map[string]types.AttributeValue) error) error {
	in, err := BuiltQuery(IndexGSI3, KeyIs(AttrGSI3PK, pk).And(expression.Key(AttrGSI3SK).LessThan(Value(DueKey(before)))), expression.ConditionBuilder{}, true)
	if err != nil {
		return Internal(err, "expression")
	}
	in.TableName, in.Limit = &s.Table, aws.Int32(int32(limit))
	out, err := s.DB.Query(ctx, in)
	if err != nil {
		return Internal(err, "Query")
	}
	for _, m := range out.Items {
		if err := each(m); err != nil {
			return Internal(err, "unmarshal")
		}
	}
	return nil
}
