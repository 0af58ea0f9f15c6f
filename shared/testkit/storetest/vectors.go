package storetest

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
)

func vectorKeys(list []expertgate.SkillVectors) []string {
	out := []string{}
	for _, v := range list {
		out = append(out, v.Slug+"@"+strconv.Itoa(v.Version))
	}
	return out
}

// skillVectors: an agent version's skill vectors read back exactly (by
// key, and with the team's of one embedder, in key order); a put replaces
// what its key held; a delete removes one (none is no error); an embedder
// id that cannot be part of a key, or vectors of unequal dimensions, are
// refused and store nothing; another team reads none.
func skillVectors(t *testing.T, f *fixture) {
	ctx := context.Background()
	vec := func(slug string, version int, emb, hash string, vs ...[]float32) expertgate.SkillVectors {
		return expertgate.SkillVectors{TeamID: f.team, Embedder: emb, Slug: slug, Version: version, Hash: hash, Vectors: vs}
	}
	annV1 := vec("ann", 1, "wordllama-256", "h1", []float32{0.25, -1, 3.5e-7}, []float32{1, 0, -0.125})
	for _, v := range []expertgate.SkillVectors{vec("bob", 1, "wordllama-256", "h1", []float32{1, 2, 3}), annV1,
		vec("ann", 2, "wordllama-256", "h2", []float32{0, 0, 1}), vec("ann", 1, "other-embedder", "h1", []float32{9})} {
		require.NoError(t, f.Vectors.PutSkillVectors(ctx, v))
	}
	got, ok, err := f.Vectors.GetSkillVectors(ctx, f.team, "wordllama-256", "ann", 1)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, annV1, got, "read back exactly")
	all, err := f.Vectors.TeamSkillVectors(ctx, f.team, "wordllama-256")
	require.NoError(t, err)
	assert.Equal(t, []string{"ann@1", "ann@2", "bob@1"}, vectorKeys(all), "the embedder's, by slug and version")

	replaced := vec("ann", 1, "wordllama-256", "h1b", []float32{0.5})
	require.NoError(t, f.Vectors.PutSkillVectors(ctx, replaced))
	got, _, err = f.Vectors.GetSkillVectors(ctx, f.team, "wordllama-256", "ann", 1)
	require.NoError(t, err)
	assert.Equal(t, replaced, got, "a put replaces its key's")
	require.NoError(t, f.Vectors.DeleteSkillVectors(ctx, f.team, "wordllama-256", "ann", 2))
	require.NoError(t, f.Vectors.DeleteSkillVectors(ctx, f.team, "wordllama-256", "ann", 2), "none stored is no error")
	_, ok, err = f.Vectors.GetSkillVectors(ctx, f.team, "wordllama-256", "ann", 2)
	require.NoError(t, err)
	assert.False(t, ok, "deleted")

	ragged := vec("cat", 1, "wordllama-256", "h1", []float32{1, 2}, []float32{1})
	refused(t, f.Vectors.PutSkillVectors(ctx, ragged), apperr.EINTERNAL, "")
	for _, emb := range []string{"", "word#llama", "word llama"} {
		refused(t, f.Vectors.PutSkillVectors(ctx, vec("cat", 1, emb, "h1", []float32{1})), apperr.EINTERNAL, "")
		_, _, err := f.Vectors.GetSkillVectors(ctx, f.team, emb, "ann", 1)
		refused(t, err, apperr.EINTERNAL, "")
		_, err = f.Vectors.TeamSkillVectors(ctx, f.team, emb)
		refused(t, err, apperr.EINTERNAL, "")
		refused(t, f.Vectors.DeleteSkillVectors(ctx, f.team, emb, "ann", 1), apperr.EINTERNAL, "")
	}
	all, err = f.Vectors.TeamSkillVectors(ctx, f.team, "wordllama-256")
	require.NoError(t, err)
	assert.Equal(t, []string{"ann@1", "bob@1"}, vectorKeys(all), "no refused put stored anything")
	theirs, err := f.Vectors.TeamSkillVectors(ctx, f.otherTeam(), "wordllama-256")
	require.NoError(t, err)
	assert.Empty(t, theirs)
}
