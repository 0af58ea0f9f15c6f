// Package expertgatefn wires the "expert-gate" function: the ExpertGate
// scorer in process, over the team's agents, loads and ratings, with the
// stage's embedder (ROUTING_EMBEDDER): the static wordllama model
// packaged beside its bootstrap (the default), Amazon Titan Text
// Embeddings V2 on Bedrock with the skill vectors stored in the table
// (titan), or none. It links DynamoDB and the Bedrock runtime (Titan's
// InvokeModel; the stack grants it only in a stage whose embedder is
// titan, with the vectors' writes).
package expertgatefn

import (
	"fmt"

	"github.com/conclave-ai/conclave/shared/models/bedrock"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/routing/wordllama"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/expertgatestore"
)

// Build implements lambdafn.Build. The scorer keeps its per-team index
// cache for the life of the execution environment. A missing or corrupt
// embedding model, or an unknown ROUTING_EMBEDDER, fails the cold start:
// a gate that silently lost its semantic signal would route worse with
// nothing to show for it. Titan, a network call, may fail per request:
// the gate then scores by words alone and logs it
// (expertgate.Service.LexicalOnEmbedFailure).
func Build(d lambdafn.Deps) (any, error) {
	core := dynamo.FromConfig(d.AWS, d.Config.TableName)
	store := expertgatestore.New(core.DB, core.Table)
	// Classifiers: the team's classifier, fitted by the classifier-fitter.
	gate := &expertgate.Service{Source: store, Tiers: routing.TiersOrDefault(d.Config.Tiers), Classifiers: store}
	if d.Config.Embedder == settings.EmbedderTitan {
		gate.Embedder = bedrock.TitanFromConfig(d.AWS, settings.TitanEmbedModel)
		gate.Vectors = store
		gate.LexicalOnEmbedFailure = true
		return gate.Score, nil
	}
	emb, err := Embedder(d.Config.Embedder)
	if err != nil {
		return nil, err
	}
	gate.Embedder = emb
	return gate.Score, nil
}

// Embedder is the in-process embedder a ROUTING_EMBEDDER value names (nil
// for none); titan is wired by Build (it needs the AWS configuration and
// the table).
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
	return nil, fmt.Errorf("%s=%q: want %s, %s or %s", settings.EnvEmbedder, name, settings.EmbedderWordLlama, settings.EmbedderTitan, settings.EmbedderNone)
}
