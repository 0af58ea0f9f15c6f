// Package classifierfitterfn wires the "classifier-fitter" function:
// AgentsChanged (bus → rule → SQS) fits the team's routing classifier to
// its active agents with the stage's embedder, as the expert-gate function
// indexes them (expertgate.Fitter), and stores it for the gate. It links
// DynamoDB, SQS to dead-letter an event whose attempts are used up, and
// the Bedrock runtime for the Titan embedder (a titan stage's skill
// vectors, stored as the gate stores them).
package classifierfitterfn

import (
	"context"
	"time"

	"github.com/conclave-ai/conclave/shared/models/bedrock"
	"github.com/conclave-ai/conclave/shared/platform/consumers"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/expertgatestore"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/wire/consumerwiring"
	"github.com/conclave-ai/conclave/shared/wire/expertgatefn"
)

// Folds of the cross-validation that measures a fit for the calibration
// endpoint (GET /v1/routing/calibration).
const Folds = 5

// putMargin is the time kept, out of the invocation's, to store a fit
// (its parts and head) once it is done: the fit itself stops at the
// deadline less this, and the event is retried.
const putMargin = 15 * time.Second

// Build implements lambdafn.Build. A missing embedding model fails the
// cold start, as the gate's does (expertgatefn.Embedder).
func Build(d lambdafn.Deps) (any, error) {
	core := dynamo.FromConfig(d.AWS, d.Config.TableName)
	store := expertgatestore.New(core.DB, core.Table)
	gate := &expertgate.Service{Source: store}
	if d.Config.Embedder == settings.EmbedderTitan {
		gate.Embedder = bedrock.TitanFromConfig(d.AWS, settings.TitanEmbedModel)
		gate.Vectors = store
	} else {
		emb, err := expertgatefn.Embedder(d.Config.Embedder)
		if err != nil {
			return nil, err
		}
		gate.Embedder = emb
	}
	fitter := &expertgate.Fitter{Gate: gate, Store: store, Folds: Folds}
	valid := func(ev agents.ChangedEvent) bool { return ev.TeamID != "" }
	retry, err := consumerwiring.Retry(d, core)
	if err != nil {
		return nil, err
	}
	h := consumers.For(agents.ChangedDetailType, d.Log, valid, func(ctx context.Context, ev agents.ChangedEvent) error {
		if deadline, ok := ctx.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, deadline.Add(-putMargin))
			defer cancel()
		}
		start := time.Now()
		res, err := fitter.Fit(ctx, ev.TeamID)
		if err != nil {
			return err
		}
		d.Log.InfoContext(ctx, "classifier", "outcome", res.Outcome, "skills", res.Skills, "samples", res.Samples,
			"ms", time.Since(start).Milliseconds())
		return nil
	})
	h.Retry = retry
	return h.Handle, nil
}
