package main

// The WordLlama wiring, in one file: the embedder the expert-gate function
// uses by default (shared/routing/wordllama), its weights where `make wordllama`
// puts them (wordllama.Dir).

import (
	"context"

	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/wordllama"
)

// wordllamaDir is the directory of the WordLlama weights, or an error when
// there is none.
func wordllamaDir() (string, error) { return wordllama.Dir() }

// loadWordllama loads the WordLlama model from dir.
func loadWordllama(dir string) (routing.Embedder, error) {
	m, err := wordllama.Load(dir)
	if err != nil {
		return nil, err
	}
	return wordllamaEmbedder{m}, nil
}

// wordllamaEmbedder names the model for routing.Embedder (its ID selects
// the calibration the gate reads the model's similarities with).
type wordllamaEmbedder struct{ m *wordllama.Model }

func (e wordllamaEmbedder) ID() string { return wordllama.ModelID }

func (e wordllamaEmbedder) Embed(ctx context.Context, texts []string) ([][]float64, error) {
	return e.m.Embed(ctx, texts)
}
