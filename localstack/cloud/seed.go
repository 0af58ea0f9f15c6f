package cloud

import (
	"context"

	"github.com/conclave-ai/conclave/shared/demo"
	"github.com/conclave-ai/conclave/shared/dynamo"
)

// Seed creates the demo team of package demo (its agents, its default agent
// and a second, empty team for isolation checks) in the local table. It is
// idempotent.
func Seed(ctx context.Context, store *dynamo.Store) error {
	return demo.Seed(ctx, store)
}
