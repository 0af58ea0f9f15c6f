package dynamo

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A number DynamoDB cannot store (below 1E-130) would fail the whole
// write; it is stored as 0, at any depth, and other numbers as they are.
func TestNumbersTooSmallForDynamoDBAreStoredAsZero(t *testing.T) {
	type inner struct {
		Depth float64 `dynamodbav:"depth"`
	}
	item := struct {
		Tiny   float64            `dynamodbav:"tiny"`
		Neg    float64            `dynamodbav:"neg"`
		Normal float64            `dynamodbav:"normal"`
		Small  float64            `dynamodbav:"small"`
		Nested inner              `dynamodbav:"nested"`
		List   []float64          `dynamodbav:"list"`
		Map    map[string]float64 `dynamodbav:"map"`
	}{Tiny: 2.2250738585e-313, Neg: -1e-200, Normal: 0.5637, Small: 1e-120, Nested: inner{Depth: 5e-324},
		List: []float64{1e-300, 0.25}, Map: map[string]float64{"x": 1e-131}}
	m, err := Marshal(item)
	require.NoError(t, err)
	n := func(v types.AttributeValue) string { return v.(*types.AttributeValueMemberN).Value }
	assert.Equal(t, "0", n(m["tiny"]))
	assert.Equal(t, "0", n(m["neg"]))
	assert.Equal(t, "0.5637", n(m["normal"]))
	assert.NotEqual(t, "0", n(m["small"]), "in range: kept")
	assert.Equal(t, "0", n(m["nested"].(*types.AttributeValueMemberM).Value["depth"]))
	list := m["list"].(*types.AttributeValueMemberL).Value
	assert.Equal(t, "0", n(list[0]))
	assert.Equal(t, "0.25", n(list[1]))
	assert.Equal(t, "0", n(m["map"].(*types.AttributeValueMemberM).Value["x"]))
}
