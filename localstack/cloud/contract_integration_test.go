//go:build integration

package cloud_test

import (
	"testing"

	"github.com/conclave-ai/conclave/shared/storetest"
)

// The DynamoDB adapter keeps the store ports' contract on DynamoDB Local,
// as the in-memory double does (shared/memstore): the same conditions,
// the same refusals, the same order.
func TestStoreContract(t *testing.T) {
	e := mustEnv(t)
	storetest.Run(t, func(*testing.T) storetest.Stores {
		return storetest.Stores{Teams: e.store, Agents: e.store, Tasks: e.store, Approvals: e.store, Conversations: e.store, Sessions: e.store}
	})
}
