// Package expertgatefn wires the "expert-gate" function: the ExpertGate
// scorer in process, over the team's agents, loads and ratings, with the
// static wordllama embedding model packaged beside its bootstrap. It
// links DynamoDB only (read).
package expertgatefn

import (
	"fmt"

	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/expertgate"
	"github.com/conclave-ai/conclave/shared/lambdafn"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/settings"
	"github.com/conclave-ai/conclave/shared/wordllama"
)

// Build implements lambdafn.Build. The scorer keeps its per-team index
// cache for the life of the execution environment. A missing or corrupt
// embedding model, or an unknown ROUTING_EMBEDDER, fails the cold start:
// a gate that silently lost its semantic signal would route worse with
// nothing to show for it.
func Build(d lambdafn.Deps) (any, error) {
	store := dynamo.FromConfig(d.AWS, d.Config.TableName)
	emb, err := Embedder(d.Config.Embedder)
	if err != nil {
		return nil, err
	}
	gate := &expertgate.Service{Source: store, Tiers: routing.TiersOrDefault(d.Config.Tiers), Embedder: emb}
	return gate.Score, nil
}

// Embedder is the embedder a ROUTING_EMBEDDER value names (nil for none).
func Embedder(name string) (routing.Embedder, error) {
	switch name {
	case "", settings.EmbedderWordLlama:
		dir, err := wordllama.Dir()
		if err != nil {
			return nil, err
		}
		m, err := wordllama.Load(dir)
		if err != nil {
			return nil, err
		}
		return m, nil
	case settings.EmbedderNone:
		return nil, nil
	}
	return nil, fmt.Errorf("%s=%q: want %s or %s", settings.EnvEmbedder, name, settings.EmbedderWordLlama, settings.EmbedderNone)
}
