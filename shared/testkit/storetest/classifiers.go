package storetest

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/routing"
)

// classifierOf is a classifier of classes × features weights read at
// readAt, the weights seeded by seed and all in the half floats' normal
// range (the adapter stores them as halves).
func classifierOf(embedder string, classes, features int, readAt time.Time, seed float64) *routing.Classifier {
	c := &routing.Classifier{Embedder: embedder, Dim: features - 2, Terms: []string{"pto", "routing number"},
		Agents: fmt.Sprintf("ann:%d,bob:1", int(seed)), ReadAt: readAt, FittedAt: readAt.Add(time.Minute), Bias: make([]float32, classes),
		Quality: &routing.ClassifierQuality{Folds: 5, Examples: 12, AgentTop1: 0.75, SkillTop1: 0.5,
			Curve: []routing.CurvePoint{{Threshold: 0.5, Routed: 0.8, Right: 0.7}}}}
	for k := range classes {
		c.Skills = append(c.Skills, routing.ClassifierSkill{Agent: []string{"ann", "bob", "cat"}[k%3], Skill: fmt.Sprintf("skill-%d", k)})
		c.Bias[k] = float32(math.Sin(seed+float64(k))) / 3
	}
	c.Weights = make([]float32, classes*features)
	for i := range c.Weights {
		x := math.Sin(seed + float64(i)*0.7)
		c.Weights[i] = float32(math.Copysign(0.01+math.Abs(x)*8, x))
	}
	return c
}

// sameClassifier: got is want as stored, its weights within half-float
// precision (a relative error of 1e-3), its times the same instants.
func sameClassifier(t *testing.T, want, got *routing.Classifier, msg string) {
	t.Helper()
	require.NotNil(t, got, msg)
	require.Len(t, got.Weights, len(want.Weights), msg)
	for i, w := range want.Weights {
		if math.Abs(float64(got.Weights[i]-w)) > 1e-3*math.Abs(float64(w)) {
			require.Failf(t, "a weight beyond half precision", "%s: weight %d stored %g, read %g", msg, i, w, got.Weights[i])
		}
	}
	assert.True(t, want.ReadAt.Equal(got.ReadAt), "%s: read_at %s, got %s", msg, want.ReadAt, got.ReadAt)
	assert.True(t, want.FittedAt.Equal(got.FittedAt), "%s: fitted_at %s, got %s", msg, want.FittedAt, got.FittedAt)
	a, b := *want, *got
	a.Weights, b.Weights, a.ReadAt, b.ReadAt, a.FittedAt, b.FittedAt = nil, nil, time.Time{}, time.Time{}, time.Time{}, time.Time{}
	assert.Equal(t, a, b, msg)
}

// teamClassifiers: a team's classifier per embedder reads back (the
// weights within half-float precision, the rest exactly), one that needs
// several items too; a put of a fit read earlier than the stored one's is
// refused (false) and leaves it, a later or equal one replaces it; a
// delete removes it (none is no error); an embedder id that cannot be
// part of a key is refused and stores nothing; another team reads none.
func teamClassifiers(t *testing.T, f *fixture) {
	ctx := context.Background()
	s := f.Classifiers
	at := time.Date(2026, 5, 6, 7, 8, 9, 123_000_000, time.UTC)
	get := func(team, emb string) (*routing.Classifier, bool) {
		t.Helper()
		c, ok, err := s.TeamClassifier(ctx, team, emb)
		require.NoError(t, err)
		return c, ok
	}
	put := func(c *routing.Classifier) bool {
		t.Helper()
		ok, err := s.PutClassifier(ctx, f.team, c)
		require.NoError(t, err)
		return ok
	}
	_, ok := get(f.team, "wordllama-256")
	assert.False(t, ok, "none before a put")

	first := classifierOf("wordllama-256", 4, 6, at, 1)
	require.True(t, put(first))
	other := classifierOf("amazon.titan-embed-text-v2:0/512", 3, 5, at.Add(-time.Hour), 2)
	require.True(t, put(other), "another embedder's is another classifier")
	got, ok := get(f.team, "wordllama-256")
	require.True(t, ok)
	sameClassifier(t, first, got, "read back")
	got.Weights[0], got.Skills[0].Skill, first.Bias[0] = 99, "changed", 42
	got, _ = get(f.team, "wordllama-256")
	first = classifierOf("wordllama-256", 4, 6, at, 1)
	sameClassifier(t, first, got, "copied in and out: changing either changes nothing stored")

	// A fit of agents read a nanosecond earlier: refused, the stored one kept.
	assert.False(t, put(classifierOf("wordllama-256", 2, 3, at.Add(-time.Nanosecond), 3)), "older: refused")
	got, _ = get(f.team, "wordllama-256")
	sameClassifier(t, first, got, "the older fit left the stored one")
	same := classifierOf("wordllama-256", 2, 3, at, 4)
	assert.True(t, put(same), "read at the same time: replaces")
	got, _ = get(f.team, "wordllama-256")
	sameClassifier(t, same, got, "replaced by an equal read_at")
	newer := classifierOf("wordllama-256", 5, 4, at.Add(time.Millisecond), 5)
	assert.True(t, put(newer), "newer: replaces")
	got, _ = get(f.team, "wordllama-256")
	sameClassifier(t, newer, got, "replaced by a newer read_at")
	got, _ = get(f.team, "amazon.titan-embed-text-v2:0/512")
	sameClassifier(t, other, got, "the other embedder's untouched")

	// 600 classes × 700 features: 840 KB of half floats, several items.
	large := classifierOf("wordllama-256", 600, 700, at.Add(time.Second), 6)
	assert.True(t, put(large))
	got, _ = get(f.team, "wordllama-256")
	sameClassifier(t, large, got, "a large classifier")

	_, ok = get(f.otherTeam(), "wordllama-256")
	assert.False(t, ok, "another team reads none")

	require.NoError(t, s.DeleteClassifier(ctx, f.team, "wordllama-256"))
	require.NoError(t, s.DeleteClassifier(ctx, f.team, "wordllama-256"), "none stored is no error")
	_, ok = get(f.team, "wordllama-256")
	assert.False(t, ok, "deleted")
	assert.True(t, put(classifierOf("wordllama-256", 2, 3, at.Add(-time.Hour), 7)), "after a delete any fit is stored")
	got, _ = get(f.team, "amazon.titan-embed-text-v2:0/512")
	sameClassifier(t, other, got, "the other embedder's kept")

	for _, emb := range []string{"", "word#llama", "word llama"} {
		_, err := s.PutClassifier(ctx, f.team, classifierOf(emb, 2, 3, at.Add(time.Hour), 8))
		refused(t, err, apperr.EINTERNAL, "")
		_, _, err = s.TeamClassifier(ctx, f.team, emb)
		refused(t, err, apperr.EINTERNAL, "")
		refused(t, s.DeleteClassifier(ctx, f.team, emb), apperr.EINTERNAL, "")
	}
	_, err := s.PutClassifier(ctx, f.team, nil)
	refused(t, err, apperr.EINTERNAL, "")
}
