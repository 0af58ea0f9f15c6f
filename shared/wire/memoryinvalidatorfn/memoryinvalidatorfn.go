// Package memoryinvalidatorfn wires the "memory-invalidator" function:
// MemoryShared (bus → rule → SQS) drops every cached memory context of the
// team. It links DynamoDB, and SQS to dead-letter an event whose attempts are used up.
package memoryinvalidatorfn

import (
	"context"

	"github.com/conclave-ai/conclave/shared/platform/consumers"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/memorystore"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/wire/consumerwiring"
)

// Build implements lambdafn.Build.
func Build(d lambdafn.Deps) (any, error) {
	core := dynamo.FromConfig(d.AWS, d.Config.TableName)
	store := memorystore.New(core.DB, core.Table)
	// No Bus: invalidation never publishes, and the function has no bus grant.
	svc := &memory.Service{Store: store, Dir: store}
	valid := func(ev memory.SharedEvent) bool { return ev.TeamID != "" }
	retry, err := consumerwiring.Retry(d, core)
	if err != nil {
		return nil, err
	}
	h := consumers.For(memory.DetailType, d.Log, valid, func(ctx context.Context, ev memory.SharedEvent) error {
		n, err := svc.InvalidateTeam(ctx, ev.TeamID)
		d.Log.InfoContext(ctx, "contexts dropped", "agents", n)
		return err
	})
	h.Retry = retry
	return h.Handle, nil
}
