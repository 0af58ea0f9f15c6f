package cloud

import (
	"context"

	"github.com/conclave-ai/conclave/shared/store/agentstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/testkit/demo"
)

// Seed creates the demo team of package demo (its agents, its default agent
// and a second, empty team for isolation checks) in the local table. It is
// idempotent. core is the table (the demo writes teams and agents); bus
// hears of the agents created (AgentsChanged), so the classifier-fitter
// fits the demo team's classifier as it would any team's.
func Seed(ctx context.Context, core *dynamo.Store, bus agents.Publisher) error {
	return demo.SeedPublished(ctx, agentstore.New(core.DB, core.Table), bus)
}
