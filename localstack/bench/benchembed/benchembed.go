// Package benchembed is what the routing benchmarks share: an embedder
// that embeds each distinct text once (bfclbench, clincbench).
package benchembed

import (
	"context"
	"fmt"

	"github.com/conclave-ai/conclave/shared/routing"
)

// Memo embeds each distinct text once: BFCL's live sets give hundreds of
// entries the same functions, and CLINC150's fit ranks the same messages
// under many calibrations. Not safe for concurrent use.
type Memo struct {
	model routing.Embedder
	vecs  map[string][]float64
}

var _ routing.Embedder = (*Memo)(nil)

// New is a Memo of model.
func New(model routing.Embedder) *Memo {
	return &Memo{model: model, vecs: map[string][]float64{}}
}

// ID is the model's: the index picks its calibration by it.
func (m *Memo) ID() string { return m.model.ID() }

// Embed returns the vectors of texts, embedding the new ones in one call.
func (m *Memo) Embed(ctx context.Context, texts []string) ([][]float64, error) {
	var missing []string
	seen := map[string]bool{}
	for _, t := range texts {
		if _, ok := m.vecs[t]; !ok && !seen[t] {
			seen[t] = true
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		vs, err := m.model.Embed(ctx, missing)
		if err != nil {
			return nil, err
		}
		if len(vs) != len(missing) {
			return nil, fmt.Errorf("embedder returned %d vectors for %d texts", len(vs), len(missing))
		}
		for i, t := range missing {
			m.vecs[t] = vs[i]
		}
	}
	out := make([][]float64, len(texts))
	for i, t := range texts {
		out[i] = m.vecs[t]
	}
	return out, nil
}
