package memstore_test

import (
	"testing"

	"github.com/conclave-ai/conclave/shared/testkit/memstore"
	"github.com/conclave-ai/conclave/shared/testkit/storetest"
)

// The in-memory double keeps the store ports' contract (shared/testkit/storetest),
// which the DynamoDB adapter keeps too on DynamoDB Local
// (localstack/cloud): the domain tests that use the double test what the
// functions run.
func TestStoreContract(t *testing.T) {
	s := memstore.New()
	storetest.Run(t, func(*testing.T) storetest.Stores {
		return storetest.Stores{Teams: s, Agents: s, Tasks: s, Tickets: s, Approvals: s, Conversations: s, Decisions: s, Sessions: s,
			Consultations: s, Budgets: s, Clipboard: s, MCPPacks: s, Push: s, Messages: s, Memories: s, Reports: s, Gate: s,
			Streams: s, Results: s, Plans: s, Requests: s, Records: s, Attempts: s, Activity: s, Vectors: s,
			Classifiers: s, Evaluations: s, Suggestions: s, Work: s, Identity: s}
	})
}
