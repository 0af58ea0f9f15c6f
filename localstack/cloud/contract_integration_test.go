//go:build integration

package cloud_test

import (
	"testing"

	"github.com/conclave-ai/conclave/shared/store/approvalstore"
	"github.com/conclave-ai/conclave/shared/store/budgetstore"
	"github.com/conclave-ai/conclave/shared/store/clipstore"
	"github.com/conclave-ai/conclave/shared/store/mcppackstore"
	"github.com/conclave-ai/conclave/shared/store/messagestore"
	"github.com/conclave-ai/conclave/shared/store/planstore"
	"github.com/conclave-ai/conclave/shared/store/pushstore"
	"github.com/conclave-ai/conclave/shared/testkit/storetest"
)

// The DynamoDB adapters keep the store ports' contract on DynamoDB Local,
// as the in-memory double does (shared/testkit/memstore): the same conditions,
// the same refusals, the same order.
func TestStoreContract(t *testing.T) {
	e := mustEnv(t)
	apr := approvalstore.New(e.db.core.DB, e.db.core.Table)
	storetest.Run(t, func(*testing.T) storetest.Stores {
		return storetest.Stores{Teams: e.db.teams, Agents: e.db.agents, Tasks: e.db.tasks, Approvals: apr,
			Conversations: e.db.convs, Sessions: e.db.sessions, Consultations: e.db.consults,
			Budgets: budgetstore.New(e.db.core.DB, e.db.core.Table), Clipboard: clipstore.New(e.db.core.DB, e.db.core.Table),
			Remotes: mcppackstore.New(e.db.core.DB, e.db.core.Table), Push: pushstore.New(e.db.core.DB, e.db.core.Table), Messages: messagestore.New(e.db.core.DB, e.db.core.Table),
			Streams: e.db.core, Results: e.db.results, Plans: planstore.New(e.db.core.DB, e.db.core.Table)}
	})
}
