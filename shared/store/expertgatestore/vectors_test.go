package expertgatestore

import (
	"math"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
)

// The skill vectors' item: keyed by embedder, agent and version; the
// vectors one Binary attribute of float32 little-endian, read back bit for
// bit. (Against DynamoDB Local: localstack/cloud, vectors_integration_test.go.)
func TestSkillVectorsItem(t *testing.T) {
	v := expertgate.SkillVectors{TeamID: "t1", Embedder: "amazon.titan-embed-text-v2:0/512", Slug: "luke", Version: 7, Hash: "abc",
		Vectors: [][]float32{{0.5, -0.25, float32(math.Pi), math.SmallestNonzeroFloat32}, {1, 0, -1, math.MaxFloat32}}}
	it, err := toSkillVecItem(v)
	require.NoError(t, err)
	assert.Equal(t, "TEAM#t1", it.PK)
	assert.Equal(t, "SKILLVEC#amazon.titan-embed-text-v2:0/512#luke#7", it.SK)
	m, err := dynamo.Marshal(it)
	require.NoError(t, err)
	b, ok := m["vectors"].(*types.AttributeValueMemberB)
	require.True(t, ok, "one Binary attribute")
	assert.Len(t, b.Value, 2*4*4, "count × dim float32")
	assert.Equal(t, []byte{0, 0, 0, 0x3f}, b.Value[:4], "little-endian 0.5")
	got, err := fromSkillVecItem(m)
	require.NoError(t, err)
	assert.Equal(t, v, got)

	// No skills: an empty item reads back empty.
	v.Vectors = [][]float32{}
	it, err = toSkillVecItem(v)
	require.NoError(t, err)
	got, err = it.toSkillVectors()
	require.NoError(t, err)
	assert.Empty(t, got.Vectors)

	// What cannot be stored is refused before any call.
	for _, bad := range []expertgate.SkillVectors{
		{Embedder: "a#b", Vectors: [][]float32{{1}}},
		{Embedder: "", Vectors: [][]float32{{1}}},
		{Embedder: "é", Vectors: [][]float32{{1}}},
		{Embedder: "e", Vectors: [][]float32{{1, 2}, {1}}},
		{Embedder: "e", Vectors: [][]float32{make([]float32, 100_000)}},
	} {
		_, err := toSkillVecItem(bad)
		assert.Error(t, err, "%q", bad.Embedder)
	}
	// A damaged item is an error, not a wrong vector.
	it.Count, it.Dim = 1, 3
	_, err = it.toSkillVectors()
	assert.Error(t, err)
}

func TestSkillVectorKeys(t *testing.T) {
	assert.Equal(t, "SKILLVEC#wordllama-l2_supercat-256#", dynamo.SkillVecPrefix("wordllama-l2_supercat-256"))
	assert.Equal(t, "SKILLVEC#e#ab#12", dynamo.SkillVecSK("e", "ab", 12))
	// One agent's prefix does not hold another's whose slug it starts.
	assert.NotContains(t, dynamo.SkillVecSK("e", "ab-c", 1), dynamo.SkillVecPrefix("e")+"ab#")
}
