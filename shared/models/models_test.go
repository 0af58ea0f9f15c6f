package models_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/shared/models"
)

type named string

func (n named) Converse(context.Context, models.Request) (models.Response, error) {
	return models.Response{Text: string(n)}, nil
}

func TestSwitchPicksTheAgentsProvider(t *testing.T) {
	sw := models.Switch{Default: named("local"), Providers: map[string]models.Model{"bedrock": named("bedrock"), "openai": named("openai")}}
	for provider, want := range map[string]string{"": "local", "bedrock": "bedrock", "openai": "openai", "unknown": "local"} {
		r, _ := sw.Converse(context.Background(), models.Request{Provider: provider})
		assert.Equal(t, want, r.Text, provider)
	}
}

func TestCostAndTokenEstimates(t *testing.T) {
	assert.InDelta(t, 0.8*1000/1e6+4*500/1e6, models.Cost("anthropic.claude-3-5-haiku-20241022-v1:0", 1000, 500), 1e-12)
	assert.Zero(t, models.Cost("unknown-model", 1000, 500), "unknown models cost nothing here")
	assert.Equal(t, 4, models.EstimateTokens("three short words"))
	assert.Zero(t, models.EstimateTokens(""))
}

// Chunks keeps every byte: the pieces concatenate to the text, whitespace
// and all, n words to a piece.
func TestChunksConcatenateToTheText(t *testing.T) {
	for _, tc := range []struct {
		text string
		n    int
		want []string
	}{
		{"", 3, nil},
		{"one", 3, []string{"one"}},
		{"one two three four five", 2, []string{"one two ", "three four ", "five"}},
		{"  lead\tand\n\ntrailing  ", 1, []string{"  lead\t", "and\n\n", "trailing  "}},
		{"héllo wörld ✓ done", 0, []string{"héllo ", "wörld ", "✓ ", "done"}},
		{"   ", 2, []string{"   "}},
	} {
		got := models.Chunks(tc.text, tc.n)
		assert.Equal(t, tc.want, got, "%q", tc.text)
		assert.Equal(t, tc.text, strings.Join(got, ""), "%q", tc.text)
	}
}
