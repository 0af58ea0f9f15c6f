package dynamo_test

import (
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/store/consultationstore"
	"github.com/conclave-ai/conclave/shared/store/conversationstore"
	"github.com/conclave-ai/conclave/shared/store/reportstore"
	"github.com/conclave-ai/conclave/shared/store/sessionstore"
	"github.com/conclave-ai/conclave/shared/store/taskstore"
)

// The stores of the keyed creates read their references back (the
// services find them by type, idempotency.Stored): a store that stopped
// embedding dynamo.Store would silently skip the read before a create.
var (
	_ idempotency.Refs = (*sessionstore.Store)(nil)
	_ idempotency.Refs = (*reportstore.Store)(nil)
	_ idempotency.Refs = (*consultationstore.Store)(nil)
	_ idempotency.Refs = (*taskstore.Store)(nil)
	_ idempotency.Refs = (*conversationstore.Store)(nil)
)
