package expertgatestore

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
)

// A team's classifier is one head item and the parts of its weights
// (keys.go). The weights do not fit an item (at routing's bounds about
// 5 MB of half floats, float16.go, against DynamoDB's 400 KB), so they are
// cut into parts of maxPartBytes, keyed by a fit id of their own: a new fit
// writes its parts beside the stored ones, and the conditional put of the
// head is the one write that replaces the classifier. A reader follows
// the head it read to its fit's parts; if a replace deleted them
// meanwhile, it finds fewer than the head says and reports the classifier
// incomplete instead of mixing two fits.
//
// What a classifier is but its weights (skills, terms, bias, quality) is
// JSON in the head: the bias stays float32 (encoding/json writes a float32
// that reads back bit for bit), the weights alone are halves.

// classifierItem is the head of a team's classifier for one embedder.
type classifierItem struct {
	PK       string `dynamodbav:"pk"`
	SK       string `dynamodbav:"sk"`
	Type     string `dynamodbav:"type"`
	TeamID   string `dynamodbav:"team_id"`
	Embedder string `dynamodbav:"embedder"`
	// ReadAt is the classifier's ReadAt (readAtLayout): what the put's
	// condition compares.
	ReadAt string `dynamodbav:"read_at"`
	FitID  string `dynamodbav:"fit_id"`
	// Parts and Weights: how many part items its weights are in, and
	// how many weights they hold.
	Parts   int    `dynamodbav:"parts"`
	Weights int    `dynamodbav:"weights"`
	Body    string `dynamodbav:"classifier"`
}

// classifierPartItem is part n of a fit's weights: half floats,
// little-endian, in the weights' order.
type classifierPartItem struct {
	PK   string `dynamodbav:"pk"`
	SK   string `dynamodbav:"sk"`
	Type string `dynamodbav:"type"`
	Data []byte `dynamodbav:"data"`
}

// maxPartBytes keeps a part below DynamoDB's 400 KB item, with room for
// its keys; maxHeadBytes bounds the head's JSON alike (at routing's
// bounds, 512 skills and 4,096 terms, some 100 KB with names of the usual
// lengths).
const (
	maxPartBytes = 350 * 1024
	maxHeadBytes = 350 * 1024
	// maxParts is what four digits of a part's key number.
	maxParts = 10_000
)

// readAtLayout is RFC 3339 in UTC with all nine digits of the fraction:
// the condition compares read_at as a string, which is the time order
// only if every value has the same width (RFC3339Nano drops trailing
// zeros, and "05Z" sorts after "05.5Z").
const readAtLayout = "2006-01-02T15:04:05.000000000Z"

// toClassifierItems encodes c as its head and parts under fit id fitID.
func toClassifierItems(teamID string, c *routing.Classifier, fitID string) (classifierItem, []classifierPartItem, error) {
	if c == nil {
		return classifierItem{}, nil, fmt.Errorf("no classifier")
	}
	if err := validEmbedderID(c.Embedder); err != nil {
		return classifierItem{}, nil, err
	}
	body, err := json.Marshal(c)
	if err != nil {
		return classifierItem{}, nil, err
	}
	if len(body) > maxHeadBytes {
		return classifierItem{}, nil, fmt.Errorf("the classifier's %d bytes of JSON exceed an item", len(body))
	}
	packed := make([]byte, 0, 2*len(c.Weights))
	for _, w := range c.Weights {
		packed = binary.LittleEndian.AppendUint16(packed, toHalf(w))
	}
	pk := dynamo.TeamPK(teamID)
	var parts []classifierPartItem
	for len(packed) > 0 {
		n := min(len(packed), maxPartBytes)
		parts = append(parts, classifierPartItem{PK: pk, SK: dynamo.ClassifierPartSK(c.Embedder, fitID, len(parts)), Type: "classifierpart", Data: packed[:n]})
		packed = packed[n:]
	}
	if len(parts) > maxParts {
		return classifierItem{}, nil, fmt.Errorf("%d weights exceed %d parts", len(c.Weights), maxParts)
	}
	return classifierItem{
		PK: pk, SK: dynamo.ClassifierSK(c.Embedder), Type: "classifier", TeamID: teamID, Embedder: c.Embedder,
		ReadAt: c.ReadAt.UTC().Format(readAtLayout), FitID: fitID, Parts: len(parts), Weights: len(c.Weights), Body: string(body),
	}, parts, nil
}

// toClassifier decodes a head and the parts read under its fit id, which
// must be all of them, in order.
func (it classifierItem) toClassifier(parts []classifierPartItem) (*routing.Classifier, error) {
	c := &routing.Classifier{}
	if err := json.Unmarshal([]byte(it.Body), c); err != nil {
		return nil, fmt.Errorf("classifier %s: %w", it.SK, err)
	}
	var packed []byte
	for n, p := range parts {
		if p.SK != dynamo.ClassifierPartSK(it.Embedder, it.FitID, n) {
			break
		}
		packed = append(packed, p.Data...)
	}
	if len(parts) != it.Parts || len(packed) != 2*it.Weights {
		return nil, fmt.Errorf("classifier %s of fit %s is incomplete: %d of %d parts, %d bytes of %d weights "+
			"(replaced while it was read: the next read finds the new one)", it.SK, it.FitID, len(parts), it.Parts, len(packed), it.Weights)
	}
	c.Weights = make([]float32, it.Weights)
	for i := range c.Weights {
		c.Weights[i] = fromHalf(binary.LittleEndian.Uint16(packed[2*i:]))
	}
	return c, nil
}

// TeamClassifier implements expertgate.ClassifierStore: a GetItem of the
// head, then one Query of its fit's parts (eventually consistent: a part
// is written once, before any head names it, and a part not seen yet is
// an incomplete classifier, an error the gate logs and reads again).
// Its weights are the stored half floats.
func (s *Store) TeamClassifier(ctx context.Context, teamID, embedder string) (*routing.Classifier, bool, error) {
	if err := validEmbedderID(embedder); err != nil {
		return nil, false, dynamo.Internal(err, "GetItem")
	}
	m, err := s.GetItem(ctx, dynamo.Key(dynamo.TeamPK(teamID), dynamo.ClassifierSK(embedder)))
	if err != nil || m == nil {
		return nil, false, err
	}
	var head classifierItem
	if err := dynamo.Unmarshal(m, &head); err != nil {
		return nil, false, dynamo.Internal(err, "unmarshal")
	}
	var parts []classifierPartItem
	err = s.QueryAll(ctx, dynamo.PrefixQuery(dynamo.TeamPK(teamID), dynamo.ClassifierPartPrefix(embedder, head.FitID), true), func(m map[string]types.AttributeValue) error {
		var p classifierPartItem
		if err := dynamo.Unmarshal(m, &p); err != nil {
			return err
		}
		parts = append(parts, p)
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	c, err := head.toClassifier(parts)
	if err != nil {
		return nil, false, dynamo.Internal(err, "Query")
	}
	return c, true, nil
}

// PutClassifier implements expertgate.ClassifierStore: the parts of a new
// fit id first (PutItem each, to keep the functions' grants to PutItem
// and DeleteItem), then the head, conditioned on the stored head's
// read_at being no later than c's and returning it, then the deletion of
// the parts it named. Refused, the new parts are deleted and nothing
// else changed. Weights are stored as half floats (float16.go).
func (s *Store) PutClassifier(ctx context.Context, teamID string, c *routing.Classifier) (bool, error) {
	fitID := ids.New("fit")
	head, parts, err := toClassifierItems(teamID, c, fitID)
	if err != nil {
		return false, dynamo.Internal(err, "marshal")
	}
	for n, p := range parts {
		item, err := dynamo.Marshal(p)
		if err == nil {
			_, err = s.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.Table, Item: item})
		}
		if err != nil {
			// No head names these parts: they are removed (as far as
			// this can), and the stored classifier is untouched.
			s.dropParts(ctx, teamID, c.Embedder, fitID, n+1)
			return false, dynamo.Internal(err, "PutItem")
		}
	}
	item, err := dynamo.Marshal(head)
	if err != nil {
		s.dropParts(ctx, teamID, c.Embedder, fitID, len(parts))
		return false, dynamo.Internal(err, "marshal")
	}
	out, err := s.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.Table, Item: item,
		ConditionExpression:       aws.String("attribute_not_exists(pk) OR #r <= :r"),
		ExpressionAttributeNames:  map[string]string{"#r": "read_at"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":r": &types.AttributeValueMemberS{Value: head.ReadAt}},
		ReturnValues:              types.ReturnValueAllOld,
	})
	if _, refused := dynamo.ConditionFailed(err); refused {
		s.dropParts(ctx, teamID, c.Embedder, fitID, len(parts))
		return false, nil
	}
	if err != nil {
		// The head may have been written all the same (a timeout after
		// DynamoDB took it): its parts stay, or it would read incomplete.
		return false, dynamo.Internal(err, "PutItem")
	}
	s.dropOldFit(ctx, teamID, out.Attributes)
	return true, nil
}

// DeleteClassifier implements expertgate.ClassifierStore: the head
// (returning it), then the parts it named; none stored is no error.
func (s *Store) DeleteClassifier(ctx context.Context, teamID, embedder string) error {
	if err := validEmbedderID(embedder); err != nil {
		return dynamo.Internal(err, "DeleteItem")
	}
	out, err := s.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &s.Table,
		Key: dynamo.Key(dynamo.TeamPK(teamID), dynamo.ClassifierSK(embedder)), ReturnValues: types.ReturnValueAllOld})
	if err != nil {
		return dynamo.Internal(err, "DeleteItem")
	}
	s.dropOldFit(ctx, teamID, out.Attributes)
	return nil
}

// dropOldFit deletes the parts of the head old (as a write returned it;
// nil when there was none). The head no longer names them, so a failure
// leaves unread items behind, not a wrong classifier: it is logged, and
// the write that replaced or deleted the head stands.
func (s *Store) dropOldFit(ctx context.Context, teamID string, old map[string]types.AttributeValue) {
	if len(old) == 0 {
		return
	}
	var head classifierItem
	if err := dynamo.Unmarshal(old, &head); err != nil {
		slog.WarnContext(ctx, "the replaced classifier's head does not decode: its parts are left", "team_id", teamID, "error", err.Error())
		return
	}
	s.dropParts(ctx, teamID, head.Embedder, head.FitID, head.Parts)
}

// dropParts deletes parts 0 … n-1 of a fit, logging what it could not
// delete (see dropOldFit). Deleting a part that is not there is no error.
func (s *Store) dropParts(ctx context.Context, teamID, embedder, fitID string, n int) {
	var failed int
	var last error
	for i := range n {
		_, err := s.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &s.Table,
			Key: dynamo.Key(dynamo.TeamPK(teamID), dynamo.ClassifierPartSK(embedder, fitID, i))})
		if err != nil {
			failed, last = failed+1, err
		}
	}
	if failed > 0 {
		slog.WarnContext(ctx, "classifier parts not deleted: left unread in the table", "team_id", teamID, "embedder", embedder,
			"fit_id", fitID, "failed", failed, "parts", n, "error", last.Error())
	}
}
