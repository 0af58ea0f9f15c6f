package dynamo

import (
	"context"
	"encoding/json"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/platform/streams"
)

// The resumable event streams (shared/platform/streams) on the single table: one
// item per event under the team's partition, keyed by its stream and
// sequence number (StreamEventSK). An event is created (attribute_not_exists)
// in the very transaction that stores the change it tells of, and its
// number comes from the counter event_seq of the stream's owner (the
// session, plan or conversation item), which the same transaction sets to
// the new last number under the owner's version condition. So two writers
// never take one number (the loser's version condition fails, and the
// event's own condition would refuse it besides), a refused change writes
// no event, and a number is never skipped (the counter moves only with
// the events it counts).

// RoleStreamEvent is the role of a stream's event in a transaction. Its
// condition fails only when the number is taken, which the owner's version
// condition (written before it, so named first) already rules out: a
// writer that numbered its events wrongly.
const RoleStreamEvent = "stream event"

// AttrEventSeq is the owner's counter of its stream: the last number
// taken (0: none yet).
const AttrEventSeq = "event_seq"

var _ streams.Reader = (*Store)(nil)

// streamEventItem is one event of a stream.
type streamEventItem struct {
	PK        string    `dynamodbav:"pk"`
	SK        string    `dynamodbav:"sk"`
	Stream    string    `dynamodbav:"stream"`
	Seq       int64     `dynamodbav:"seq"`
	Type      string    `dynamodbav:"type"`
	At        time.Time `dynamodbav:"at"`
	Detail    string    `dynamodbav:"detail"`
	ExpiresAt int64     `dynamodbav:"expires_at"`
}

func toStreamEventItem(teamID, stream string, ev streams.Event) streamEventItem {
	return streamEventItem{PK: TeamPK(teamID), SK: StreamEventSK(stream, ev.Seq), Stream: stream, Seq: ev.Seq, Type: ev.Type,
		At: ev.At.UTC(), Detail: string(ev.Detail), ExpiresAt: TTL(ev.At.Add(streams.Retention))}
}

func (it streamEventItem) toEvent() streams.Event {
	return streams.Event{Seq: it.Seq, Type: it.Type, At: it.At, Detail: json.RawMessage(it.Detail)}
}

// StreamEvents adds to t the events of the team's stream, numbered up to
// head, the owner's new event_seq that t writes with them (each created
// only where its number is free). Events not so numbered fail the
// transaction before it is sent (streams.ErrNumbering).
func (t *Txn) StreamEvents(teamID, stream string, head int64, evs []streams.Event) {
	if err := streams.CheckNumbered(head, evs); err != nil {
		t.fail(err)
		return
	}
	for _, ev := range evs {
		t.Create(RoleStreamEvent, toStreamEventItem(teamID, stream, ev))
	}
}

// SetEventSeq is the update of an owner item's counter to head, for an
// owner changed by an update rather than put whole (a posted result's
// conversation).
func SetEventSeq(u expression.UpdateBuilder, head int64) expression.UpdateBuilder {
	return u.Set(Name(AttrEventSeq), Value(head))
}

// maxStreamPage bounds one read of a stream.
const maxStreamPage = 1000

// StreamEvents implements streams.Reader: one strongly consistent Query
// of the stream's key range after the number given, ascending (an event
// is read as soon as the change that wrote it is answered). Another
// team's stream is another partition: it reads nothing. limit ≤ 0 reads
// up to 100; at most 1,000. A page DynamoDB cuts at 1 MB returns fewer:
// the caller reads on after the last number it got.
func (s *Store) StreamEvents(ctx context.Context, teamID, stream string, after int64, limit int) ([]streams.Event, error) {
	if limit <= 0 {
		limit = 100
	}
	after = max(after, 0)
	in := &dynamodb.QueryInput{
		TableName:              &s.Table,
		KeyConditionExpression: aws.String("pk = :pk AND sk BETWEEN :from AND :end"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(TeamPK(teamID)),
			":from": str(StreamEventSK(stream, after+1)), ":end": str(StreamEventPrefix(stream) + PrefixEnd)},
		ScanIndexForward: aws.Bool(true), ConsistentRead: aws.Bool(true), Limit: aws.Int32(int32(min(limit, maxStreamPage))),
	}
	return s.streamQuery(ctx, in)
}

// StreamHead implements streams.Reader: the stream's last event, read
// with one strongly consistent Query (descending, limit 1). Its owner's
// event_seq holds the same number, but a stream's owner has three kinds
// of item; the stream's own range needs none of them.
func (s *Store) StreamHead(ctx context.Context, teamID, stream string) (int64, error) {
	in := PrefixQuery(TeamPK(teamID), StreamEventPrefix(stream), false)
	in.TableName, in.ConsistentRead, in.Limit = &s.Table, aws.Bool(true), aws.Int32(1)
	evs, err := s.streamQuery(ctx, in)
	if err != nil || len(evs) == 0 {
		return 0, err
	}
	return evs[0].Seq, nil
}

func (s *Store) streamQuery(ctx context.Context, in *dynamodb.QueryInput) ([]streams.Event, error) {
	out, err := s.DB.Query(ctx, in)
	if err != nil {
		return nil, Internal(err, "Query")
	}
	evs := make([]streams.Event, 0, len(out.Items))
	for _, m := range out.Items {
		var it streamEventItem
		if err := Unmarshal(m, &it); err != nil {
			return nil, Internal(err, "unmarshal")
		}
		evs = append(evs, it.toEvent())
	}
	return evs, nil
}
