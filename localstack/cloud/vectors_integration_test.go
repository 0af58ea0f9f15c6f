//go:build integration

package cloud_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/words"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// The skill vectors' items on DynamoDB Local: one agent version's vectors
// by one embedder come back bit for bit; another version or another
// embedder misses; the team's Query returns one embedder's items only.
func TestSkillVectorsRoundTripOnDynamoDB(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	team := mustTeam(t, e)
	const titan = "amazon.titan-embed-text-v2:0/512"
	v := expertgate.SkillVectors{TeamID: team, Embedder: titan, Slug: "luke", Version: 2, Hash: "h2",
		Vectors: [][]float32{make([]float32, 512), make([]float32, 512)}}
	for i := range v.Vectors[0] {
		v.Vectors[0][i], v.Vectors[1][i] = float32(i)/512, -float32(i)/3
	}
	require.NoError(t, e.db.gate.PutSkillVectors(ctx, v))
	other := v
	other.Embedder, other.Vectors = "wordllama-l2_supercat-256", [][]float32{{1, 2}, {3, 4}}
	require.NoError(t, e.db.gate.PutSkillVectors(ctx, other))
	// An agent whose slug begins with luke's: not luke's.
	lukas := v
	lukas.Slug = "luke-2"
	require.NoError(t, e.db.gate.PutSkillVectors(ctx, lukas))

	got, ok, err := e.db.gate.GetSkillVectors(ctx, team, titan, "luke", 2)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, v, got)
	_, ok, err = e.db.gate.GetSkillVectors(ctx, team, titan, "luke", 3)
	require.NoError(t, err)
	assert.False(t, ok, "a new version misses")
	_, ok, err = e.db.gate.GetSkillVectors(ctx, team, "amazon.titan-embed-text-v2:0/1024", "luke", 2)
	require.NoError(t, err)
	assert.False(t, ok, "another embedder misses")

	list, err := e.db.gate.TeamSkillVectors(ctx, team, titan)
	require.NoError(t, err)
	assert.ElementsMatch(t, []expertgate.SkillVectors{v, lukas}, list)

	require.NoError(t, e.db.gate.DeleteSkillVectors(ctx, team, titan, "luke", 2))
	require.NoError(t, e.db.gate.DeleteSkillVectors(ctx, team, titan, "luke", 2), "deleting nothing is no error")
	list, err = e.db.gate.TeamSkillVectors(ctx, team, titan)
	require.NoError(t, err)
	assert.Equal(t, []expertgate.SkillVectors{lukas}, list)
	list, err = e.db.gate.TeamSkillVectors(ctx, team, other.Embedder)
	require.NoError(t, err)
	assert.Equal(t, []expertgate.SkillVectors{other}, list)

	// An item that does not decode (its count no longer matches its
	// bytes) is skipped, to be computed again, and the rest still read:
	// one bad item does not send the team's every call to words alone.
	require.NoError(t, e.db.gate.PutSkillVectors(ctx, v))
	_, err = dynamodb.NewFromConfig(e.cfg).UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(e.names.Table()),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "TEAM#" + team},
			"sk": &types.AttributeValueMemberS{Value: "SKILLVEC#" + titan + "#luke#2"}},
		UpdateExpression:          aws.String("SET #c = :c"),
		ExpressionAttributeNames:  map[string]string{"#c": "count"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":c": &types.AttributeValueMemberN{Value: "3"}},
	})
	require.NoError(t, err)
	list, err = e.db.gate.TeamSkillVectors(ctx, team, titan)
	require.NoError(t, err)
	assert.Equal(t, []expertgate.SkillVectors{lukas}, list, "the corrupt item skipped, the good one read")

	// An agent is never listed with its vectors.
	mustAgent(t, e, team, "luke", nil)
	agentsOf, err := e.db.agents.ActiveAgents(ctx, team)
	require.NoError(t, err)
	assert.Len(t, agentsOf, 1)
}

// countingEmbedder embeds deterministically and records each call.
type countingEmbedder struct {
	mu    sync.Mutex
	calls [][]string
}

func (c *countingEmbedder) ID() string { return "counting/4" }

func (c *countingEmbedder) Embed(_ context.Context, texts []string) ([][]float64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, slices.Clone(texts))
	out := make([][]float64, len(texts))
	for i, t := range texts {
		out[i] = []float64{float64(len(t)), float64(len(words.Tokens(t))), 1, float64(i % 2)}
	}
	return out, nil
}

func (c *countingEmbedder) take() [][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = nil
	return out
}

// With the agents function's hook, an agent's vectors are stored when it
// is written; a cold gate on the same table then embeds the query alone.
func TestTheGateReadsTheVectorsStoredWithTheAgents(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	team := mustTeam(t, e)
	emb := &countingEmbedder{}
	svc := agents.NewService(e.db.agents)
	svc.Vectors = &expertgate.VectorWriter{Store: e.db.gate, Embedder: emb}
	for _, in := range []agents.CreateInput{
		{Slug: "luke", Name: "Luke", Skills: []agents.Skill{{Name: "code-review", Description: "Review code for bugs", Keywords: []string{"code"}}}},
		{Slug: "wren", Name: "Wren", Skills: []agents.Skill{{Name: "writing", Description: "Write blog posts"}, {Name: "editing", Description: "Edit drafts"}}},
	} {
		_, err := svc.Create(ctx, team, in)
		require.NoError(t, err)
	}
	assert.Len(t, emb.take(), 2, "one embedding per agent written")

	gate := &expertgate.Service{Source: e.db.gate, Embedder: emb, Vectors: e.db.gate}
	resp, err := gate.Score(ctx, expertgate.Request{TeamID: team, Query: "review my code"})
	require.NoError(t, err)
	assert.Equal(t, "luke", resp.Scores[0].AgentSlug)
	assert.Equal(t, [][]string{{"review my code"}}, emb.take(), "no skill embedded by the gate")

	// A new version with new skills: the hook embeds them and removes the
	// old item; the gate still embeds nothing but the query.
	skills := []agents.Skill{{Name: "poetry", Description: "Write poems"}}
	_, err = svc.Update(ctx, team, "wren", agents.UpdateInput{Skills: &skills})
	require.NoError(t, err)
	assert.Len(t, emb.take(), 1)
	list, err := e.db.gate.TeamSkillVectors(ctx, team, emb.ID())
	require.NoError(t, err)
	var versions []string
	for _, v := range list {
		versions = append(versions, fmt.Sprintf("%s@%d", v.Slug, v.Version))
	}
	assert.ElementsMatch(t, []string{"luke@1", "wren@2"}, versions)
	_, err = (&expertgate.Service{Source: e.db.gate, Embedder: emb, Vectors: e.db.gate}).Score(ctx, expertgate.Request{TeamID: team, Query: "a poem"})
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"a poem"}}, emb.take())
}
