package expertgatestore

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
)

var _ expertgate.VectorStore = (*Store)(nil)

// skillVecItem is one agent version's skill vectors by one embedder
// (expertgate.SkillVectors). The vectors are one Binary attribute: count ×
// dim float32, little-endian, in skill order. As a list of numbers a 512-
// dimension vector would be a list of 512 number strings, several times
// the bytes (and the read and write units) of its 2 KiB of float32; the
// gate keeps float32 anyway, so nothing is lost. dim says how to cut it.
type skillVecItem struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	Type      string `dynamodbav:"type"`
	TeamID    string `dynamodbav:"team_id"`
	Embedder  string `dynamodbav:"embedder"`
	Slug      string `dynamodbav:"slug"`
	Version   int    `dynamodbav:"version"`
	TextsHash string `dynamodbav:"texts_hash"`
	Count     int    `dynamodbav:"count"`
	Dim       int    `dynamodbav:"dim"`
	Vectors   []byte `dynamodbav:"vectors"`
}

// maxVectorBytes keeps an item below DynamoDB's 400 KB: 25 skills (the
// agents' limit) of 1,024 dimensions are 100 KiB.
const maxVectorBytes = 350 * 1024

// validEmbedderID: the ID is part of the sort key, between '#'
// separators, and the table's keys are printable ASCII (prefixEnd).
func validEmbedderID(id string) error {
	if id == "" || strings.ContainsRune(id, '#') {
		return fmt.Errorf("embedder id %q: empty or holds '#'", id)
	}
	for _, r := range id {
		if r < 0x21 || r > 0x7e {
			return fmt.Errorf("embedder id %q: not printable ASCII", id)
		}
	}
	return nil
}

func toSkillVecItem(v expertgate.SkillVectors) (skillVecItem, error) {
	if err := validEmbedderID(v.Embedder); err != nil {
		return skillVecItem{}, err
	}
	dim := 0
	if len(v.Vectors) > 0 {
		dim = len(v.Vectors[0])
	}
	if dim*len(v.Vectors)*4 > maxVectorBytes {
		return skillVecItem{}, fmt.Errorf("%d vectors of %d dimensions exceed an item", len(v.Vectors), dim)
	}
	packed := make([]byte, 0, dim*len(v.Vectors)*4)
	for i, vec := range v.Vectors {
		if len(vec) != dim {
			return skillVecItem{}, fmt.Errorf("vector %d has %d dimensions, want %d", i, len(vec), dim)
		}
		for _, x := range vec {
			packed = binary.LittleEndian.AppendUint32(packed, math.Float32bits(x))
		}
	}
	return skillVecItem{
		PK: dynamo.TeamPK(v.TeamID), SK: dynamo.SkillVecSK(v.Embedder, v.Slug, v.Version), Type: "skillvec", TeamID: v.TeamID,
		Embedder: v.Embedder, Slug: v.Slug, Version: v.Version, TextsHash: v.Hash, Count: len(v.Vectors), Dim: dim, Vectors: packed,
	}, nil
}

func (it skillVecItem) toSkillVectors() (expertgate.SkillVectors, error) {
	if it.Count < 0 || it.Dim < 0 || len(it.Vectors) != it.Count*it.Dim*4 {
		return expertgate.SkillVectors{}, fmt.Errorf("skill vectors %s: %d bytes for %d × %d", it.SK, len(it.Vectors), it.Count, it.Dim)
	}
	out := make([][]float32, it.Count)
	for i := range out {
		out[i] = make([]float32, it.Dim)
		for j := range out[i] {
			off := (i*it.Dim + j) * 4
			out[i][j] = math.Float32frombits(binary.LittleEndian.Uint32(it.Vectors[off:]))
		}
	}
	return expertgate.SkillVectors{TeamID: it.TeamID, Embedder: it.Embedder, Slug: it.Slug, Version: it.Version, Hash: it.TextsHash, Vectors: out}, nil
}

func fromSkillVecItem(m map[string]types.AttributeValue) (expertgate.SkillVectors, error) {
	var it skillVecItem
	if err := dynamo.Unmarshal(m, &it); err != nil {
		return expertgate.SkillVectors{}, err
	}
	return it.toSkillVectors()
}

// TeamSkillVectors implements expertgate.VectorStore: one Query of the
// team's SKILLVEC#<embedder>#… items, every page (eventually consistent:
// a vector item is written once per agent version and never changes).
func (s *Store) TeamSkillVectors(ctx context.Context, teamID, embedder string) ([]expertgate.SkillVectors, error) {
	if err := validEmbedderID(embedder); err != nil {
		return nil, dynamo.Internal(err, "Query")
	}
	var out []expertgate.SkillVectors
	err := s.QueryAll(ctx, dynamo.PrefixQuery(dynamo.TeamPK(teamID), dynamo.SkillVecPrefix(embedder), true), func(m map[string]types.AttributeValue) error {
		v, err := fromSkillVecItem(m)
		if err != nil {
			// One item that does not decode (written by another version,
			// cut short) is skipped: the gate computes that agent's
			// vectors again and stores them, instead of every call of the
			// team falling back to words alone.
			slog.WarnContext(ctx, "a stored skill vector item does not decode: skipped, to be computed again", "team_id", teamID, "embedder", embedder, "error", err.Error())
			return nil
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

// GetSkillVectors implements expertgate.VectorStore.
func (s *Store) GetSkillVectors(ctx context.Context, teamID, embedder, slug string, version int) (expertgate.SkillVectors, bool, error) {
	if err := validEmbedderID(embedder); err != nil {
		return expertgate.SkillVectors{}, false, dynamo.Internal(err, "GetItem")
	}
	m, err := s.GetItem(ctx, dynamo.Key(dynamo.TeamPK(teamID), dynamo.SkillVecSK(embedder, slug, version)))
	if err != nil || m == nil {
		return expertgate.SkillVectors{}, false, err
	}
	v, err := fromSkillVecItem(m)
	if err != nil {
		return expertgate.SkillVectors{}, false, dynamo.Internal(err, "unmarshal")
	}
	return v, true, nil
}

// PutSkillVectors implements expertgate.VectorStore. Unconditional: two
// writers of one key (the agents function and a gate) write the same
// vectors.
func (s *Store) PutSkillVectors(ctx context.Context, v expertgate.SkillVectors) error {
	it, err := toSkillVecItem(v)
	if err != nil {
		return dynamo.Internal(err, "marshal")
	}
	item, err := dynamo.Marshal(it)
	if err != nil {
		return dynamo.Internal(err, "marshal")
	}
	if _, err := s.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.Table, Item: item}); err != nil {
		return dynamo.Internal(err, "PutItem")
	}
	return nil
}

// DeleteSkillVectors implements expertgate.VectorStore.
func (s *Store) DeleteSkillVectors(ctx context.Context, teamID, embedder, slug string, version int) error {
	if err := validEmbedderID(embedder); err != nil {
		return dynamo.Internal(err, "DeleteItem")
	}
	if _, err := s.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &s.Table, Key: dynamo.Key(dynamo.TeamPK(teamID), dynamo.SkillVecSK(embedder, slug, version))}); err != nil {
		return dynamo.Internal(err, "DeleteItem")
	}
	return nil
}
