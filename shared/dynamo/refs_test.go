package dynamo_test

import (
	"github.com/conclave-ai/conclave/shared/dynamo/consultstore"
	"github.com/conclave-ai/conclave/shared/dynamo/convstore"
	"github.com/conclave-ai/conclave/shared/dynamo/reportstore"
	"github.com/conclave-ai/conclave/shared/dynamo/sessionstore"
	"github.com/conclave-ai/conclave/shared/dynamo/taskstore"
	"github.com/conclave-ai/conclave/shared/idempotency"
)

// The stores of the keyed creates read their references back (the
// services find them by type, idempotency.Stored): a store that stopped
// embedding dynamo.Store would silently skip the read before a create.
var (
	_ idempotency.Refs = (*sessionstore.Store)(nil)
	_ idempotency.Refs = (*reportstore.Store)(nil)
	_ idempotency.Refs = (*consultstore.Store)(nil)
	_ idempotency.Refs = (*taskstore.Store)(nil)
	_ idempotency.Refs = (*convstore.Store)(nil)
)
