//go:build integration

package cloud_test

import (
	"testing"

	"github.com/conclave-ai/conclave/shared/store/approvalstore"
	"github.com/conclave-ai/conclave/shared/store/budgetstore"
	"github.com/conclave-ai/conclave/shared/store/clipstore"
	"github.com/conclave-ai/conclave/shared/store/identitystore"
	"github.com/conclave-ai/conclave/shared/store/mcppackstore"
	"github.com/conclave-ai/conclave/shared/store/memorystore"
	"github.com/conclave-ai/conclave/shared/store/planstore"
	"github.com/conclave-ai/conclave/shared/store/pushstore"
	"github.com/conclave-ai/conclave/shared/store/reportstore"
	"github.com/conclave-ai/conclave/shared/store/suggestionstore"
	"github.com/conclave-ai/conclave/shared/testkit/storetest"
)

// The DynamoDB adapters keep the store ports' contract on DynamoDB Local,
// as the in-memory double does (shared/testkit/memstore): the same conditions,
// the same refusals, the same order.
func TestStoreContract(t *testing.T) {
	e := mustEnv(t)
	db, table := e.db.core.DB, e.db.core.Table
	apr := approvalstore.New(db, table)
	storetest.Run(t, func(*testing.T) storetest.Stores {
		return storetest.Stores{Teams: e.db.teams, Agents: e.db.agents, Tasks: e.db.tasks, Tickets: e.db.tasks, Approvals: apr,
			Conversations: e.db.convs, Decisions: e.db.decisions, Sessions: e.db.sessions, Consultations: e.db.consults,
			Budgets: budgetstore.New(db, table), Clipboard: clipstore.New(db, table), MCPPacks: mcppackstore.New(db, table),
			Push: pushstore.New(db, table), Messages: e.db.inbox, Memories: memorystore.New(db, table), Reports: reportstore.New(db, table),
			Gate: e.db.gate, Streams: e.db.core, Results: e.db.results, Plans: planstore.New(db, table), Requests: e.db.core,
			Records: e.db.core, Attempts: e.db.core, Activity: e.db.activity, Vectors: e.db.gate,
			Classifiers: e.db.gate, Evaluations: e.db.evaluations, Suggestions: suggestionstore.New(db, table), Work: e.db.convs,
			Identity: identitystore.New(db, table)}
	})
}
