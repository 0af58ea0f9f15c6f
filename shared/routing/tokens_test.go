package routing_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/wordllama"
)

// tokenMessages are messages with repeated words, a word no skill uses,
// punctuation and one word.
var tokenMessages = []string{
	"Can you review the SQL behind our billing API? Latency doubled after the last deploy.",
	"the the the review review",
	"quick one on data privacy please",
	"zxqv blorptastic frobnication!!",
	"security",
	"I keep overspending on food delivery, help me plan my spending",
}

// vectorOnly is team's index with the same vectors as Embed gives it,
// but its embedder not named (SetEmbedder): every query is scored from
// its vector.
func vectorOnly(t *testing.T, ix *routing.Index, m *wordllama.Model, build func() *routing.Index) *routing.Index {
	t.Helper()
	vecs, err := m.Embed(context.Background(), ix.SkillTexts())
	require.NoError(t, err)
	plain := build()
	require.NoError(t, plain.SetEmbeddings(vecs, routing.CalibrationFor(m.ID())))
	return plain
}

// The classifier's dense logits summed over a message's tokens are the
// logits of its vector, to float rounding: the same probabilities and the
// same ranking. A vector that is not the text's is scored as a vector.
func TestTokenLogitsAreTheVectorsLogits(t *testing.T) {
	m := mustModel(t)
	team := withExamples(syntheticTeam(100), 5)
	ix := routing.BuildIndex(team)
	require.NoError(t, ix.Embed(context.Background(), m))
	c, err := routing.FitClassifier(context.Background(), ix, m, routing.FitOptions{Epochs: 3})
	require.NoError(t, err)
	require.True(t, ix.SetClassifier(c))
	plain := vectorOnly(t, ix, m, func() *routing.Index { return routing.BuildIndex(team) })
	require.True(t, plain.SetClassifier(c))
	require.True(t, routing.LogitsByTokens(ix))
	require.False(t, routing.LogitsByTokens(plain), "an embedder not named: from the vector")
	for i, msg := range tokenMessages {
		v := embedQuery(t, msg)
		want := make([]float32, len(c.Bias))
		c.Probabilities(unit32(v), msg, nil, want)
		for round := range 2 { // computed, then kept
			got := routing.QueryProbabilities(ix, msg, v)
			require.Len(t, got, len(want))
			for k := range want {
				assert.InDelta(t, want[k], got[k], 1e-5, "%q class %d round %d", msg, k, round)
			}
		}
		other := tokenMessages[(i+1)%len(tokenMessages)]
		c.Probabilities(unit32(v), other, nil, want)
		assert.Equal(t, want, routing.QueryProbabilities(ix, other, v), "another text's vector: scored from the vector")
		sameRanking(t, msg, ix.Rank(msg, routing.Signals{QueryEmbedding: v}), plain.Rank(msg, routing.Signals{QueryEmbedding: v}))
	}
}

// A two-stage index chooses its candidates by the centroids' cosines
// through the message's tokens: the vector's, to float rounding, and the
// same ranking.
func TestTokenCentroidCosinesAreTheVectors(t *testing.T) {
	m := mustModel(t)
	team := withExamples(syntheticTeam(1000), 3)
	ix := routing.BuildIndex(team)
	require.NoError(t, ix.Embed(context.Background(), m))
	require.True(t, routing.TwoStage(ix))
	plain := vectorOnly(t, ix, m, func() *routing.Index { return routing.BuildIndex(team) })
	for _, msg := range tokenMessages {
		v := embedQuery(t, msg)
		tok, direct := routing.CentroidCosines(ix, msg, v)
		require.Len(t, tok, len(direct), msg)
		for k := range direct {
			assert.InDelta(t, direct[k], tok[k], 1e-5, "%q centroid %d", msg, k)
		}
		sameRanking(t, msg, ix.Rank(msg, routing.Signals{QueryEmbedding: v}), plain.Rank(msg, routing.Signals{QueryEmbedding: v}))
	}
	tok, direct := routing.CentroidCosines(ix, tokenMessages[1], embedQuery(t, tokenMessages[0]))
	assert.Nil(t, tok, "another text's vector: dot products")
	assert.NotEmpty(t, direct)
}

func sameRanking(t *testing.T, msg string, got, want *routing.Ranking) {
	t.Helper()
	g, w := got.Top(10), want.Top(10)
	require.Len(t, g, len(w), msg)
	for i := range w {
		assert.Equal(t, w[i].AgentSlug, g[i].AgentSlug, "%q rank %d", msg, i)
		assert.Equal(t, w[i].MatchingSkills, g[i].MatchingSkills, "%q rank %d", msg, i)
		for _, p := range [][2]float64{{w[i].Overall, g[i].Overall}, {w[i].SkillMatch, g[i].SkillMatch}, {w[i].Confidence, g[i].Confidence}} {
			assert.InDelta(t, p[0], p[1], 0.0011, fmt.Sprintf("%q rank %d", msg, i)) // thousandths, rounded
		}
	}
}

func unit32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}
