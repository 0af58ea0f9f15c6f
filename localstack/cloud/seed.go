package cloud

import (
	"context"

	"github.com/conclave-ai/conclave/shared/store/agentstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/testkit/demo"
)

// Seed creates the demo team of package demo (its agents, its default agent
// and a second, empty team for isolation checks) in the local table. It is
// idempotent. core is the table (the demo writes teams and agents).
func Seed(ctx context.Context, core *dynamo.Store) error {
	return demo.Seed(ctx, agentstore.New(core.DB, core.Table))
}
