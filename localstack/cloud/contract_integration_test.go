//go:build integration

package cloud_test

import (
	"testing"

	"github.com/conclave-ai/conclave/shared/dynamo/approvalstore"
	"github.com/conclave-ai/conclave/shared/dynamo/budgetstore"
	"github.com/conclave-ai/conclave/shared/dynamo/clipstore"
	"github.com/conclave-ai/conclave/shared/dynamo/inboxstore"
	"github.com/conclave-ai/conclave/shared/dynamo/packstore"
	"github.com/conclave-ai/conclave/shared/dynamo/planstore"
	"github.com/conclave-ai/conclave/shared/dynamo/pushstore"
	"github.com/conclave-ai/conclave/shared/storetest"
)

// The DynamoDB adapters keep the store ports' contract on DynamoDB Local,
// as the in-memory double does (shared/memstore): the same conditions,
// the same refusals, the same order.
func TestStoreContract(t *testing.T) {
	e := mustEnv(t)
	apr := approvalstore.New(e.db.core.DB, e.db.core.Table)
	storetest.Run(t, func(*testing.T) storetest.Stores {
		return storetest.Stores{Teams: e.db.teams, Agents: e.db.agents, Tasks: e.db.tasks, Approvals: apr,
			Conversations: e.db.convs, Sessions: e.db.sessions, Consultations: e.db.consults,
			Budgets: budgetstore.New(e.db.core.DB, e.db.core.Table), Clipboard: clipstore.New(e.db.core.DB, e.db.core.Table),
			Remotes: packstore.New(e.db.core.DB, e.db.core.Table), Push: pushstore.New(e.db.core.DB, e.db.core.Table), Messages: inboxstore.New(e.db.core.DB, e.db.core.Table),
			Streams: e.db.core, Results: e.db.results, Plans: planstore.New(e.db.core.DB, e.db.core.Table)}
	})
}
